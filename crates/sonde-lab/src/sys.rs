//! The lab's only `unsafe`: raw AF_PACKET sockets for the link emulator.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

const PACKET_IGNORE_OUTGOING: libc::c_int = 23;

/// A raw socket that reads every frame arriving on one interface and
/// sends frames out of it unchanged.
#[derive(Debug)]
pub struct PacketSocket {
    fd: OwnedFd,
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

impl PacketSocket {
    pub fn bind(ifname: &str, read_timeout: Duration) -> io::Result<Self> {
        let name =
            CString::new(ifname).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: name is a valid NUL-terminated string for the call.
        let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
        if index == 0 {
            return Err(io::Error::last_os_error());
        }
        let proto = (libc::ETH_P_ALL as u16).to_be();
        // SAFETY: plain socket(2) call; the result is checked.
        let raw =
            unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, libc::c_int::from(proto)) };
        check(raw)?;
        // SAFETY: raw is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: sockaddr_ll is a plain C struct; all-zero is valid.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = proto;
        addr.sll_ifindex = i32::try_from(index).unwrap_or(0);
        // SAFETY: addr is a live sockaddr_ll and its size is passed.
        check(unsafe {
            libc::bind(
                fd.as_raw_fd(),
                std::ptr::from_ref(&addr).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        })?;
        let on: libc::c_int = 1;
        // SAFETY: on is a live c_int whose size is passed; the kernel reads it.
        check(unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_PACKET,
                PACKET_IGNORE_OUTGOING,
                std::ptr::from_ref(&on).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        })?;
        // A deep receive queue: frames arrive in line-rate bursts while the
        // reader is busy. Root may go past rmem_max; otherwise keep the default.
        let buf: libc::c_int = 32 << 20;
        for opt in [libc::SO_RCVBUFFORCE, libc::SO_SNDBUFFORCE] {
            // SAFETY: buf is a live c_int whose size is passed.
            let _ = unsafe {
                libc::setsockopt(
                    fd.as_raw_fd(),
                    libc::SOL_SOCKET,
                    opt,
                    std::ptr::from_ref(&buf).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                )
            };
        }
        // SAFETY: on is a live c_int whose size is passed.
        check(unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_TIMESTAMPNS,
                std::ptr::from_ref(&on).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        })?;
        let tv = libc::timeval {
            tv_sec: libc::time_t::try_from(read_timeout.as_secs()).unwrap_or(1),
            tv_usec: libc::suseconds_t::from(read_timeout.subsec_micros()),
        };
        // SAFETY: tv is a live timeval whose size is passed.
        check(unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                std::ptr::from_ref(&tv).cast(),
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            )
        })?;
        Ok(Self { fd })
    }

    /// One arriving frame into `buf`: its length and the kernel's receive
    /// time (ns since the Unix epoch), which does not include how long
    /// this thread took to wake up.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<(usize, Option<i64>)> {
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        let mut control = [0u64; 8];
        // SAFETY: msghdr is a plain C struct for which all-zero is valid.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = std::ptr::from_mut(&mut iov);
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        // SAFETY: msg points to a live iovec over buf and a live control
        // buffer, with their lengths; the kernel writes within them.
        let n = unsafe { libc::recvmsg(self.fd.as_raw_fd(), &mut msg, 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut stamp = None;
        // SAFETY: the CMSG_* macros walk msg's control buffer within the
        // msg_controllen the kernel set; the timespec read stays inside
        // a control message the kernel sized for it.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                let len = (*c).cmsg_len as usize;
                let want = libc::CMSG_LEN(std::mem::size_of::<libc::timespec>() as u32) as usize;
                if (*c).cmsg_level == libc::SOL_SOCKET
                    && (*c).cmsg_type == libc::SCM_TIMESTAMPNS
                    && len >= want
                {
                    let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                    stamp = Some(
                        ts.tv_sec
                            .saturating_mul(1_000_000_000)
                            .saturating_add(ts.tv_nsec),
                    );
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        Ok((usize::try_from(n).unwrap_or(0), stamp))
    }

    /// Sends one frame out of the interface as it is.
    pub fn send(&self, frame: &[u8]) -> io::Result<usize> {
        // SAFETY: frame is live and readable for frame.len() bytes.
        let n = unsafe { libc::send(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(usize::try_from(n).unwrap_or(0))
    }

    pub fn try_clone(&self) -> io::Result<Self> {
        Ok(Self {
            fd: self.fd.try_clone()?,
        })
    }
}
