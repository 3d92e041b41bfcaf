//! The lab's only `unsafe`: raw AF_PACKET sockets for the link emulator.
//! Their options and their timestamped receive are the engine's
//! (`sonde_engine::sys`); here only what a packet socket needs alone:
//! the socket, its interface and its bind.
#![allow(unsafe_code)]

use sonde_engine::sys::{enable_rx_timestamps, recv_stamped, setsockopt_raw};
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
        setsockopt_raw(&fd, libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, &on)?;
        // A deep receive queue: frames arrive in line-rate bursts while the
        // reader is busy. Root may go past rmem_max; otherwise keep the default.
        let buf: libc::c_int = 32 << 20;
        for opt in [libc::SO_RCVBUFFORCE, libc::SO_SNDBUFFORCE] {
            let _ = setsockopt_raw(&fd, libc::SOL_SOCKET, opt, &buf);
        }
        enable_rx_timestamps(&fd)?;
        let tv = libc::timeval {
            tv_sec: libc::time_t::try_from(read_timeout.as_secs()).unwrap_or(1),
            tv_usec: libc::suseconds_t::from(read_timeout.subsec_micros()),
        };
        setsockopt_raw(&fd, libc::SOL_SOCKET, libc::SO_RCVTIMEO, &tv)?;
        Ok(Self { fd })
    }

    /// One arriving frame into `buf`: its length and the kernel's receive
    /// time (ns since the Unix epoch), which does not include how long
    /// this thread took to wake up.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<(usize, Option<i64>)> {
        recv_stamped(&self.fd, buf)
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

/// Sets the nice value of thread `tid` (0: the calling one; threads it
/// starts afterwards inherit it). Negative: ahead of ordinary processes;
/// needs root or CAP_SYS_NICE.
pub fn set_nice(tid: u32, nice: i32) -> io::Result<()> {
    let tid = libc::id_t::from(tid);
    // SAFETY: setpriority(2) takes plain integers; the result is checked.
    check(unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, nice) })
}
