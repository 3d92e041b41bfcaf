//! UDP syscalls: receive timestamps and TOS, `recvmmsg` batches, and
//! sends with one control message (GSO segment size, per-packet TOS).
#![allow(unsafe_code)]

use super::setsockopt_raw;
use std::io;
use std::os::fd::AsRawFd;

/// Turns on what a UDP receiver needs per packet: kernel receive
/// timestamps (SO_TIMESTAMPNS), the arriving TOS / traffic class, and
/// for IPv6 the flow label (IPV6_FLOWINFO).
pub fn enable_udp_rx_info(sock: &impl AsRawFd, ipv6: bool) -> io::Result<()> {
    enable_rx_timestamps(sock)?;
    enable_rx_tos(sock, ipv6)?;
    if ipv6 {
        let on: libc::c_int = 1;
        setsockopt_raw(sock, libc::IPPROTO_IPV6, libc::IPV6_FLOWINFO, &on)?;
    }
    Ok(())
}

/// The TOS / traffic class of each arriving datagram ([`Datagram::tos`]).
pub fn enable_rx_tos(sock: &impl AsRawFd, ipv6: bool) -> io::Result<()> {
    let on: libc::c_int = 1;
    // IPv4 (and v4-mapped) packets report IP_TOS, IPv6 ones IPV6_TCLASS.
    setsockopt_raw(sock, libc::IPPROTO_IP, libc::IP_RECVTOS, &on)?;
    if ipv6 {
        setsockopt_raw(sock, libc::IPPROTO_IPV6, libc::IPV6_RECVTCLASS, &on)?;
    }
    Ok(())
}

/// Kernel receive timestamps (SO_TIMESTAMPNS) on any datagram socket.
pub fn enable_rx_timestamps(sock: &impl AsRawFd) -> io::Result<()> {
    let on: libc::c_int = 1;
    setsockopt_raw(sock, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, &on)
}

/// The TTL / hop limit of each arriving datagram ([`Datagram::ttl`]); on
/// an IPv6 socket, of IPv4-mapped ones too.
pub fn enable_rx_ttl(sock: &impl AsRawFd, ipv6: bool) -> io::Result<()> {
    let on: libc::c_int = 1;
    setsockopt_raw(sock, libc::IPPROTO_IP, libc::IP_RECVTTL, &on)?;
    if ipv6 {
        setsockopt_raw(sock, libc::IPPROTO_IPV6, libc::IPV6_RECVHOPLIMIT, &on)?;
    }
    Ok(())
}

/// The TTL (IPv4) or hop limit (IPv6) of each arriving datagram on a
/// socket of one family ([`Datagram::ttl`]): ICMP sockets take only their
/// own family's option.
pub fn enable_rx_hop_limit(sock: &impl AsRawFd, ipv6: bool) -> io::Result<()> {
    let on: libc::c_int = 1;
    if ipv6 {
        setsockopt_raw(sock, libc::IPPROTO_IPV6, libc::IPV6_RECVHOPLIMIT, &on)
    } else {
        setsockopt_raw(sock, libc::IPPROTO_IP, libc::IP_RECVTTL, &on)
    }
}

/// `UDP_GRO` from linux/udp.h (not in the libc crate for glibc targets).
const UDP_GRO: libc::c_int = 104;

/// Lets the kernel hand this socket runs of same-sized datagrams of one
/// flow as one buffer (UDP GRO, Linux 5.0+); each [`Datagram`] then says
/// its segment size. Returns false where the kernel has no UDP GRO.
pub fn enable_udp_gro(sock: &impl AsRawFd) -> bool {
    let on: libc::c_int = 1;
    setsockopt_raw(sock, libc::SOL_UDP, UDP_GRO, &on).is_ok()
}

/// Turns UDP GRO off again ([`enable_udp_gro`]).
pub fn disable_udp_gro(sock: &impl AsRawFd) -> io::Result<()> {
    let off: libc::c_int = 0;
    setsockopt_raw(sock, libc::SOL_UDP, UDP_GRO, &off)
}

/// Whether UDP GRO is on for the socket.
pub fn udp_gro_enabled(sock: &impl AsRawFd) -> io::Result<bool> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: v is a live c_int and len its size; the kernel writes at
    // most len bytes into it.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_UDP,
            UDP_GRO,
            std::ptr::from_mut(&mut v).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(v != 0)
}

/// One datagram of a [`RecvBatch`].
#[derive(Debug, Clone, Copy)]
pub struct Datagram<'a> {
    pub payload: &'a [u8],
    /// Kernel receive time, ns since the Unix epoch.
    pub rx_ns: Option<i64>,
    /// The network card's receive time, where it stamps packets and the
    /// socket asked ([`super::enable_tx_timestamps`]).
    pub rx_hw_ns: Option<i64>,
    /// TOS / traffic-class byte as it arrived.
    pub tos: Option<u8>,
    /// The datagram was longer than the buffer.
    pub truncated: bool,
    /// With UDP GRO: the payload holds several datagrams of this size
    /// (the last may be shorter).
    pub segment: Option<u16>,
    /// Who sent it (IP sockets).
    pub source: Option<std::net::SocketAddr>,
    /// The IPv4 TTL or IPv6 hop limit it arrived with (with
    /// [`enable_rx_ttl`]).
    pub ttl: Option<u8>,
    /// The IPv6 flow label it arrived with (IPv6 receivers).
    pub flow_label: Option<u32>,
}

/// Room for every control message a datagram may carry: a timestamp
/// (32 bytes), TOS or traffic class, flow label, GRO size and hop limit
/// (24 each).
const CMSG_BUF: usize = 192;

/// Buffers for receiving up to `n` datagrams with one `recvmmsg`. The
/// headers point into the buffers, which never move once allocated.
pub struct RecvBatch {
    bufs: Vec<u8>,
    cap: usize,
    cmsgs: Vec<u8>,
    names: Vec<libc::sockaddr_storage>,
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
        // SAFETY: sockaddr_storage is a plain C struct; all-zero is valid.
        let names = (0..n)
            .map(|_| unsafe { std::mem::zeroed::<libc::sockaddr_storage>() })
            .collect();
        let mut b = Self {
            bufs: Vec::new(),
            cap,
            cmsgs: Vec::new(),
            names,
            iovecs,
            hdrs,
            count: 0,
        };
        for (i, h) in b.hdrs.iter_mut().enumerate() {
            h.msg_hdr.msg_iov = std::ptr::from_mut(&mut b.iovecs[i]);
            h.msg_hdr.msg_iovlen = 1;
            h.msg_hdr.msg_control = cmsgs[i * CMSG_BUF..].as_mut_ptr().cast();
            h.msg_hdr.msg_name = std::ptr::from_mut(&mut b.names[i]).cast();
        }
        b.bufs = std::mem::take(&mut bufs);
        b.cmsgs = std::mem::take(&mut cmsgs);
        b
    }

    /// Receives up to the batch size without waiting for more than one
    /// datagram (blocks per the socket's read timeout). Returns how many.
    pub fn recv(&mut self, sock: &impl AsRawFd) -> io::Result<usize> {
        for h in &mut self.hdrs {
            h.msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as _;
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
        let Cmsgs {
            rx_ns,
            rx_hw_ns,
            tos,
            segment,
            ttl,
            flow_label,
        } = parse_cmsgs(&h.msg_hdr);
        let source = socket_addr(&self.names[i], h.msg_hdr.msg_namelen);
        Some(Datagram {
            payload,
            rx_ns,
            rx_hw_ns,
            tos,
            truncated: h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0,
            segment,
            source,
            ttl,
            flow_label,
        })
    }
}

/// The IPv4 or IPv6 address the kernel wrote into `ss` (`len` bytes).
fn socket_addr(ss: &libc::sockaddr_storage, len: libc::socklen_t) -> Option<std::net::SocketAddr> {
    use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
    let len = len as usize;
    match libc::c_int::from(ss.ss_family) {
        libc::AF_INET if len >= std::mem::size_of::<libc::sockaddr_in>() => {
            // SAFETY: the family says ss holds a sockaddr_in, which fits
            // in a sockaddr_storage; read_unaligned copies it out.
            let a: libc::sockaddr_in =
                unsafe { std::ptr::read_unaligned(std::ptr::from_ref(ss).cast()) };
            Some(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)),
                u16::from_be(a.sin_port),
            )))
        }
        libc::AF_INET6 if len >= std::mem::size_of::<libc::sockaddr_in6>() => {
            // SAFETY: as above, for a sockaddr_in6.
            let a: libc::sockaddr_in6 =
                unsafe { std::ptr::read_unaligned(std::ptr::from_ref(ss).cast()) };
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(a.sin6_addr.s6_addr),
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// What the control messages of one datagram said.
#[derive(Default)]
struct Cmsgs {
    rx_ns: Option<i64>,
    rx_hw_ns: Option<i64>,
    tos: Option<u8>,
    segment: Option<u16>,
    ttl: Option<u8>,
    flow_label: Option<u32>,
}

/// One datagram (or, on a packet socket, one frame) into `buf` with
/// recvmsg(2): its length and the kernel's receive time (SO_TIMESTAMPNS,
/// [`enable_rx_timestamps`]; ns since the Unix epoch), which does not
/// include how long the reading thread took to wake up.
pub fn recv_stamped(sock: &impl AsRawFd, buf: &mut [u8]) -> io::Result<(usize, Option<i64>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut control = [0u64; 16];
    // SAFETY: msghdr is a plain C struct for which all-zero is valid.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = std::ptr::from_mut(&mut iov);
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: msg points to a live iovec over buf and a live control
    // buffer, with their lengths; the kernel writes within them.
    let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((usize::try_from(n).unwrap_or(0), parse_cmsgs(&msg).rx_ns))
}

fn parse_cmsgs(msg: &libc::msghdr) -> Cmsgs {
    let mut found = Cmsgs::default();
    let Cmsgs {
        rx_ns,
        rx_hw_ns,
        tos,
        segment,
        ttl,
        flow_label,
    } = &mut found;
    // SAFETY: msg was filled by recvmsg or recvmmsg; the CMSG_* macros walk its
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
                    *rx_ns = Some(
                        ts.tv_sec
                            .saturating_mul(1_000_000_000)
                            .saturating_add(ts.tv_nsec),
                    );
                }
                (libc::SOL_SOCKET, super::tx_stamps::SCM_TIMESTAMPING) => {
                    *rx_hw_ns = super::tx_stamps::hardware_rx_ns(c);
                }
                (libc::IPPROTO_IP, libc::IP_TOS) if len >= libc::CMSG_LEN(1) as usize => {
                    *tos = Some(*data);
                }
                (libc::IPPROTO_IPV6, libc::IPV6_TCLASS)
                    if len
                        >= libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as usize =>
                {
                    let v: libc::c_int = std::ptr::read_unaligned(data.cast());
                    *tos = u8::try_from(v).ok();
                }
                // The flow information word in network order: traffic
                // class and flow label (its low 20 bits).
                (libc::IPPROTO_IPV6, libc::IPV6_FLOWINFO)
                    if len >= libc::CMSG_LEN(std::mem::size_of::<u32>() as u32) as usize =>
                {
                    let v: u32 = std::ptr::read_unaligned(data.cast());
                    *flow_label = Some(u32::from_be(v) & 0xF_FFFF);
                }
                (libc::SOL_UDP, UDP_GRO)
                    if len
                        >= libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as usize =>
                {
                    let v: libc::c_int = std::ptr::read_unaligned(data.cast());
                    *segment = u16::try_from(v).ok().filter(|s| *s > 0);
                }
                (libc::IPPROTO_IP, libc::IP_TTL) | (libc::IPPROTO_IPV6, libc::IPV6_HOPLIMIT)
                    if len
                        >= libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as usize =>
                {
                    let v: libc::c_int = std::ptr::read_unaligned(data.cast());
                    *ttl = u8::try_from(v).ok();
                }
                _ => {}
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    found
}

/// Sends `buf` as one `sendmsg` with one control message (`level`,
/// `kind`) carrying `value`, on a connected socket.
fn send_with_cmsg<T: Copy>(
    sock: &impl AsRawFd,
    buf: &[u8],
    level: libc::c_int,
    kind: libc::c_int,
    value: T,
) -> io::Result<usize> {
    send_to_with_cmsg(sock, buf, None, level, kind, value)
}

/// [`send_with_cmsg`], to `to` where given (an unconnected socket).
fn send_to_with_cmsg<T: Copy>(
    sock: &impl AsRawFd,
    buf: &[u8],
    to: Option<&socket2::SockAddr>,
    level: libc::c_int,
    kind: libc::c_int,
    value: T,
) -> io::Result<usize> {
    let size = u32::try_from(std::mem::size_of::<T>()).unwrap_or(u32::MAX);
    let mut iov = libc::iovec {
        iov_base: buf.as_ptr().cast_mut().cast(),
        iov_len: buf.len(),
    };
    let mut control = [0u64; 8];
    // SAFETY: msghdr is a plain C struct for which all-zero is valid.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = std::ptr::from_mut(&mut iov);
    msg.msg_iovlen = 1;
    if let Some(to) = to {
        // The kernel only reads the address (sendmsg's msg_name).
        msg.msg_name = to.as_ptr().cast_mut().cast();
        msg.msg_namelen = to.len();
    }
    if let Some(to) = to {
        // The kernel only reads the address (sendmsg's msg_name).
        msg.msg_name = to.as_ptr().cast_mut().cast();
        msg.msg_namelen = to.len();
    }
    msg.msg_control = control.as_mut_ptr().cast();
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(size) } as usize;
    if space > std::mem::size_of_val(&control) {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    msg.msg_controllen = space as _;
    // SAFETY: the 64-byte, 8-aligned control buffer holds CMSG_SPACE(size)
    // bytes (checked above); the header and its payload are written inside
    // it. The kernel only reads `buf` (iov_base is never written through)
    // and the address `to`, which outlives the call.
    let rc = unsafe {
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = level;
        (*c).cmsg_type = kind;
        (*c).cmsg_len = libc::CMSG_LEN(size) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<T>(), value);
        libc::sendmsg(sock.as_raw_fd(), &msg, 0)
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(usize::try_from(rc).unwrap_or(0))
}

/// Sends `buf` as datagrams of `segment` bytes each in one call with UDP
/// generic segmentation offload (UDP_SEGMENT, Linux 4.18+). The last
/// segment may be shorter. Returns the bytes accepted.
pub fn send_gso(sock: &impl AsRawFd, buf: &[u8], segment: u16) -> io::Result<usize> {
    send_with_cmsg(sock, buf, libc::SOL_UDP, libc::UDP_SEGMENT, segment)
}

/// Sends one datagram to `to` with its own TOS / traffic class, from an
/// unconnected socket of either family (a reflector's reply marked as
/// its sender asked). An IPv4 or v4-mapped destination takes IP_TOS, an
/// IPv6 one IPV6_TCLASS.
pub fn send_to_with_tos(
    sock: &impl AsRawFd,
    buf: &[u8],
    tos: u8,
    to: std::net::SocketAddr,
) -> io::Result<usize> {
    let value = libc::c_int::from(tos);
    let v4 = match to.ip() {
        std::net::IpAddr::V4(_) => true,
        std::net::IpAddr::V6(a) => a.to_ipv4_mapped().is_some(),
    };
    let addr = socket2::SockAddr::from(to);
    if v4 {
        send_to_with_cmsg(
            sock,
            buf,
            Some(&addr),
            libc::IPPROTO_IP,
            libc::IP_TOS,
            value,
        )
    } else {
        send_to_with_cmsg(
            sock,
            buf,
            Some(&addr),
            libc::IPPROTO_IPV6,
            libc::IPV6_TCLASS,
            value,
        )
    }
}

/// Sends one datagram with its own TOS / traffic class (per-packet
/// marking, as a DiffServ-aware video sender needs).
pub fn send_with_tos(sock: &impl AsRawFd, buf: &[u8], tos: u8, ipv6: bool) -> io::Result<usize> {
    let value = libc::c_int::from(tos);
    if ipv6 {
        send_with_cmsg(sock, buf, libc::IPPROTO_IPV6, libc::IPV6_TCLASS, value)
    } else {
        send_with_cmsg(sock, buf, libc::IPPROTO_IP, libc::IP_TOS, value)
    }
}
