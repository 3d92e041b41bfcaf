//! The only module with `unsafe`: socket options and batched socket
//! calls that neither std nor socket2 expose. Each block is one syscall
//! on a caller-owned descriptor, or builds the C structs for one. The lab's
//! packet sockets (sonde-lab's `sys`) use its options and its
//! timestamped receive rather than writing them again.
#![allow(unsafe_code)]

mod sendfile;
mod tx_stamps;
mod udp;

pub use sendfile::SendFile;
pub use tx_stamps::{enable_tx_timestamps, read_tx_stamps, StampSource, TxStamp};

pub use udp::{
    disable_udp_gro, enable_rx_hop_limit, enable_rx_timestamps, enable_rx_tos, enable_rx_ttl,
    enable_udp_gro, enable_udp_rx_info, recv_stamped, send_gso, send_to_with_tos, send_with_tos,
    udp_gro_enabled, Datagram, RecvBatch,
};

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
#[derive(Clone, Copy)]
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

/// setsockopt(2) with a plain C value (`T`: a `c_int`, a `timeval`, a
/// `#[repr(C)]` struct), for the options socket2 does not name.
pub fn setsockopt_raw<T: Copy>(
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

/// Sends this socket's packets whole, with Don't Fragment (IPv4), and
/// whatever size the route's learned MTU says (PMTUDISC_PROBE): a path
/// MTU probe must reach the hop whose link is too small, not be cut at
/// home.
pub fn probe_path_mtu(sock: &impl AsRawFd, ipv6: bool) -> io::Result<()> {
    let (level, name, probe) = if ipv6 {
        (
            libc::IPPROTO_IPV6,
            libc::IPV6_MTU_DISCOVER,
            libc::IPV6_PMTUDISC_PROBE,
        )
    } else {
        (
            libc::IPPROTO_IP,
            libc::IP_MTU_DISCOVER,
            libc::IP_PMTUDISC_PROBE,
        )
    };
    setsockopt_raw(sock, level, name, &probe)
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

/// Sets the receive low-water mark (SO_RCVLOWAT): a blocking read, and
/// the wake-up of a reader waiting on the socket, then wait until
/// `bytes` are queued (or the peer closes, the read times out, or the
/// kernel's memory or window limits say not to wait). 1 is the default:
/// wake for any data. Linux caps the value at half of `tcp_rmem[2]` and,
/// if the receive buffer is smaller than `bytes` needs, grows it and
/// clamps the window to `bytes`, so callers keep `bytes` well below the
/// buffer they have.
pub fn set_recv_lowat(sock: &impl AsRawFd, bytes: usize) -> io::Result<()> {
    let v = libc::c_int::try_from(bytes.max(1)).unwrap_or(libc::c_int::MAX);
    setsockopt_raw(sock, libc::SOL_SOCKET, libc::SO_RCVLOWAT, &v)
}

/// Asks for `bytes` of socket send and receive buffer beyond the
/// system's `rmem_max`/`wmem_max` (SO_*BUFFORCE, which root may use);
/// returns false where that is not allowed, and the caller falls back.
pub fn force_buffers(sock: &impl AsRawFd, bytes: usize) -> bool {
    let v = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    setsockopt_raw(sock, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &v).is_ok()
        && setsockopt_raw(sock, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, &v).is_ok()
}

/// Lets this thread's sleeps end as close to their deadline as the
/// kernel can (PR_SET_TIMERSLACK to 1 ns; the default slack is 50 µs).
pub fn tight_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes an integer and touches no memory.
    let rc = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
    if rc != 0 {
        tracing::debug!(error = %io::Error::last_os_error(), "timer slack unchanged");
    }
}

/// Bytes a TCP socket holds that the peer has not yet acknowledged
/// (unsent and in flight: SIOCOUTQ).
pub fn unacked_bytes(sock: &impl AsRawFd) -> io::Result<usize> {
    let mut n: libc::c_int = 0;
    // SAFETY: n is a live c_int the kernel writes the count into; the
    // descriptor is borrowed from a live owner.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), libc::TIOCOUTQ, &mut n) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(usize::try_from(n).unwrap_or(0))
}
