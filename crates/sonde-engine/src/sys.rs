//! The only module with `unsafe`: socket options that neither std nor
//! socket2 expose. Each block is one syscall on a caller-owned descriptor.
#![allow(unsafe_code)]

use std::io;
use std::net::Ipv6Addr;
use std::os::fd::AsRawFd;

/// Length of the TCP_INFO prefix sonde reads (through tcpi_delivery_rate,
/// Linux 4.9+). Older kernels fill less; the rest stays zero.
pub const TCP_INFO_LEN: usize = 168;

/// Raw TCP_INFO bytes of a TCP socket, and how many the kernel wrote.
pub fn tcp_info_bytes(sock: &impl AsRawFd) -> io::Result<([u8; TCP_INFO_LEN], usize)> {
    let mut buf = [0u8; TCP_INFO_LEN];
    let mut len = TCP_INFO_LEN as libc::socklen_t;
    // SAFETY: buf is a live, writable TCP_INFO_LEN-byte buffer and len tells
    // the kernel its size; the kernel writes at most len bytes and updates len.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((buf, usize::try_from(len).unwrap_or(0).min(TCP_INFO_LEN)))
}

/// `struct in6_flowlabel_req` from linux/in6.h.
#[repr(C)]
struct FlowLabelReq {
    dst: [u8; 16],
    label_be: u32,
    action: u8,
    share: u8,
    flags: u16,
    expires: u16,
    linger: u16,
    pad: u32,
}

const IPV6_FLOWLABEL_MGR: libc::c_int = 32;
const IPV6_FLOWINFO_SEND: libc::c_int = 33;
const IPV6_FL_A_GET: u8 = 0;
const IPV6_FL_S_ANY: u8 = 255;
const IPV6_FL_F_CREATE: u16 = 1;

fn setsockopt_raw<T>(
    sock: &impl AsRawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: &T,
) -> io::Result<()> {
    let len = libc::socklen_t::try_from(std::mem::size_of::<T>())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: value points to a live T of exactly len bytes, which the
    // kernel only reads.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            level,
            name,
            std::ptr::from_ref(value).cast(),
            len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Leases flow label `label` towards `dst` and makes the socket send the
/// flow info given at connect time. Call before `connect`, then connect
/// with `sin6_flowinfo` set to the label.
pub fn enable_flow_label(sock: &impl AsRawFd, dst: Ipv6Addr, label: u32) -> io::Result<()> {
    let req = FlowLabelReq {
        dst: dst.octets(),
        label_be: (label & 0xF_FFFF).to_be(),
        action: IPV6_FL_A_GET,
        share: IPV6_FL_S_ANY,
        flags: IPV6_FL_F_CREATE,
        expires: 0,
        linger: 0,
        pad: 0,
    };
    setsockopt_raw(sock, libc::IPPROTO_IPV6, IPV6_FLOWLABEL_MGR, &req)?;
    let on: libc::c_int = 1;
    setsockopt_raw(sock, libc::IPPROTO_IPV6, IPV6_FLOWINFO_SEND, &on)
}

/// Caps the kernel's pacing of this socket (SO_MAX_PACING_RATE, bytes/s).
pub fn set_max_pacing_rate(sock: &impl AsRawFd, bytes_per_sec: u64) -> io::Result<()> {
    setsockopt_raw(
        sock,
        libc::SOL_SOCKET,
        libc::SO_MAX_PACING_RATE,
        &bytes_per_sec,
    )
}

/// Turns on what a UDP receiver needs per packet: kernel receive
/// timestamps (SO_TIMESTAMPNS) and the arriving TOS / traffic class.
pub fn enable_udp_rx_info(sock: &impl AsRawFd, ipv6: bool) -> io::Result<()> {
    let on: libc::c_int = 1;
    setsockopt_raw(sock, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, &on)?;
    // IPv4 (and v4-mapped) packets report IP_TOS, IPv6 ones IPV6_TCLASS.
    setsockopt_raw(sock, libc::IPPROTO_IP, libc::IP_RECVTOS, &on)?;
    if ipv6 {
        setsockopt_raw(sock, libc::IPPROTO_IPV6, libc::IPV6_RECVTCLASS, &on)?;
    }
    Ok(())
}

/// One datagram of a [`RecvBatch`].
#[derive(Debug, Clone, Copy)]
pub struct Datagram<'a> {
    pub payload: &'a [u8],
    /// Kernel receive time, ns since the Unix epoch.
    pub rx_ns: Option<i64>,
    /// TOS / traffic-class byte as it arrived.
    pub tos: Option<u8>,
    /// The datagram was longer than the buffer.
    pub truncated: bool,
}

const CMSG_BUF: usize = 128;

/// Buffers for receiving up to `n` datagrams with one `recvmmsg`. The
/// headers point into the buffers, which never move once allocated.
pub struct RecvBatch {
    bufs: Vec<u8>,
    cap: usize,
    cmsgs: Vec<u8>,
    iovecs: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
    count: usize,
}

// SAFETY: the raw pointers in iovecs/hdrs point only into this struct's
// own heap buffers; moving the struct between threads moves them along.
unsafe impl Send for RecvBatch {}

impl std::fmt::Debug for RecvBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RecvBatch({} × {} bytes)", self.hdrs.len(), self.cap)
    }
}

impl RecvBatch {
    pub fn new(n: usize, cap: usize) -> Self {
        let n = n.max(1);
        let mut bufs = vec![0u8; n * cap];
        let mut cmsgs = vec![0u8; n * CMSG_BUF];
        let iovecs: Vec<libc::iovec> = (0..n)
            .map(|i| libc::iovec {
                iov_base: bufs[i * cap..].as_mut_ptr().cast(),
                iov_len: cap,
            })
            .collect();
        // SAFETY: mmsghdr is a plain C struct for which all-zero is valid.
        let hdrs = (0..n)
            .map(|_| unsafe { std::mem::zeroed::<libc::mmsghdr>() })
            .collect();
        let mut b = Self {
            bufs: Vec::new(),
            cap,
            cmsgs: Vec::new(),
            iovecs,
            hdrs,
            count: 0,
        };
        for (i, h) in b.hdrs.iter_mut().enumerate() {
            h.msg_hdr.msg_iov = std::ptr::from_mut(&mut b.iovecs[i]);
            h.msg_hdr.msg_iovlen = 1;
            h.msg_hdr.msg_control = cmsgs[i * CMSG_BUF..].as_mut_ptr().cast();
        }
        b.bufs = std::mem::take(&mut bufs);
        b.cmsgs = std::mem::take(&mut cmsgs);
        b
    }

    /// Receives up to the batch size without waiting for more than one
    /// datagram (blocks per the socket's read timeout). Returns how many.
    pub fn recv(&mut self, sock: &impl AsRawFd) -> io::Result<usize> {
        for h in &mut self.hdrs {
            h.msg_hdr.msg_controllen = CMSG_BUF as _;
            h.msg_hdr.msg_flags = 0;
            h.msg_len = 0;
        }
        let n = libc::c_uint::try_from(self.hdrs.len()).unwrap_or(libc::c_uint::MAX);
        // SAFETY: every header points to a live iovec of `cap` bytes and a
        // live CMSG_BUF-byte control buffer owned by self; the kernel
        // writes within those lengths.
        let rc = unsafe {
            libc::recvmmsg(
                sock.as_raw_fd(),
                self.hdrs.as_mut_ptr(),
                n,
                libc::MSG_WAITFORONE,
                std::ptr::null_mut(),
            )
        };
        if rc < 0 {
            self.count = 0;
            return Err(io::Error::last_os_error());
        }
        self.count = usize::try_from(rc).unwrap_or(0);
        Ok(self.count)
    }

    /// Datagram `i` of the last `recv`.
    pub fn get(&self, i: usize) -> Option<Datagram<'_>> {
        if i >= self.count {
            return None;
        }
        let h = &self.hdrs[i];
        let len = (h.msg_len as usize).min(self.cap);
        let payload = &self.bufs[i * self.cap..i * self.cap + len];
        let (rx_ns, tos) = parse_cmsgs(&h.msg_hdr);
        Some(Datagram {
            payload,
            rx_ns,
            tos,
            truncated: h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0,
        })
    }
}

fn parse_cmsgs(msg: &libc::msghdr) -> (Option<i64>, Option<u8>) {
    let (mut rx_ns, mut tos) = (None, None);
    // SAFETY: msg was filled by recvmmsg; the CMSG_* macros walk its
    // control buffer within msg_controllen and each data read below
    // stays within the cmsg_len the kernel set.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            let data = libc::CMSG_DATA(c);
            let len = (*c).cmsg_len as usize;
            match ((*c).cmsg_level, (*c).cmsg_type) {
                (libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS)
                    if len
                        >= libc::CMSG_LEN(std::mem::size_of::<libc::timespec>() as u32)
                            as usize =>
                {
                    let ts: libc::timespec = std::ptr::read_unaligned(data.cast());
                    rx_ns = Some(
                        ts.tv_sec
                            .saturating_mul(1_000_000_000)
                            .saturating_add(ts.tv_nsec),
                    );
                }
                (libc::IPPROTO_IP, libc::IP_TOS) if len >= libc::CMSG_LEN(1) as usize => {
                    tos = Some(*data);
                }
                (libc::IPPROTO_IPV6, libc::IPV6_TCLASS)
                    if len
                        >= libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as usize =>
                {
                    let v: libc::c_int = std::ptr::read_unaligned(data.cast());
                    tos = u8::try_from(v).ok();
                }
                _ => {}
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    (rx_ns, tos)
}

/// Sends `buf` as datagrams of `segment` bytes each in one call with UDP
/// generic segmentation offload (UDP_SEGMENT, Linux 4.18+). The last
/// segment may be shorter. Returns the bytes accepted.
pub fn send_gso(sock: &impl AsRawFd, buf: &[u8], segment: u16) -> io::Result<usize> {
    let mut iov = libc::iovec {
        iov_base: buf.as_ptr().cast_mut().cast(),
        iov_len: buf.len(),
    };
    let mut control = [0u8; 64];
    // SAFETY: msghdr is a plain C struct for which all-zero is valid.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = std::ptr::from_mut(&mut iov);
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    // SAFETY: CMSG_SPACE only computes a size.
    msg.msg_controllen = unsafe { libc::CMSG_SPACE(std::mem::size_of::<u16>() as u32) } as _;
    // SAFETY: the control buffer is 64 bytes, more than CMSG_SPACE(2);
    // the header and its 2-byte payload are written inside it. The
    // kernel only reads `buf` (iov_base is never written through).
    let rc = unsafe {
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_UDP;
        (*c).cmsg_type = libc::UDP_SEGMENT;
        (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<u16>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<u16>(), segment);
        libc::sendmsg(sock.as_raw_fd(), &msg, 0)
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(usize::try_from(rc).unwrap_or(0))
}

/// Sends one datagram with its own TOS / traffic class (per-packet
/// marking, as a DiffServ-aware video sender needs).
pub fn send_with_tos(sock: &impl AsRawFd, buf: &[u8], tos: u8, ipv6: bool) -> io::Result<usize> {
    let mut iov = libc::iovec {
        iov_base: buf.as_ptr().cast_mut().cast(),
        iov_len: buf.len(),
    };
    let mut control = [0u8; 64];
    // SAFETY: msghdr is a plain C struct for which all-zero is valid.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = std::ptr::from_mut(&mut iov);
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    let value: libc::c_int = libc::c_int::from(tos);
    // SAFETY: CMSG_SPACE only computes a size.
    msg.msg_controllen =
        unsafe { libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) } as _;
    // SAFETY: the control buffer holds CMSG_SPACE(4) bytes; the header and
    // its int payload are written inside it; `buf` is only read.
    let rc = unsafe {
        let c = libc::CMSG_FIRSTHDR(&msg);
        if ipv6 {
            (*c).cmsg_level = libc::IPPROTO_IPV6;
            (*c).cmsg_type = libc::IPV6_TCLASS;
        } else {
            (*c).cmsg_level = libc::IPPROTO_IP;
            (*c).cmsg_type = libc::IP_TOS;
        }
        (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<libc::c_int>(), value);
        libc::sendmsg(sock.as_raw_fd(), &msg, 0)
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(usize::try_from(rc).unwrap_or(0))
}
