//! Kernel send timestamps (SO_TIMESTAMPING, Documentation/networking/
//! timestamping.rst): the time each datagram left the socket's device,
//! read back from the socket's error queue.

use super::setsockopt_raw;
use std::io;
use std::os::fd::AsRawFd;

/// `SO_TIMESTAMPING` (and its control message `SCM_TIMESTAMPING`) from
/// asm-generic/socket.h: the libc crate names them for Android only.
const SO_TIMESTAMPING: libc::c_int = 37;
pub(super) const SCM_TIMESTAMPING: libc::c_int = SO_TIMESTAMPING;

/// Where a send timestamp came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StampSource {
    /// The network card's clock (SOF_TIMESTAMPING_TX_HARDWARE).
    Hardware,
    /// The kernel, as the packet went to the device.
    Kernel,
}

/// One datagram's send time from the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxStamp {
    /// Datagrams sent on the socket before this one since
    /// [`enable_tx_timestamps`] (SOF_TIMESTAMPING_OPT_ID).
    pub id: u32,
    /// ns since the Unix epoch (the hardware clock's, for hardware).
    pub ns: i64,
    pub source: StampSource,
}

/// Asks the kernel for each datagram's send time, numbered from 0,
/// without the packet itself (OPT_TSONLY), and for hardware receive
/// times beside the software ones SO_TIMESTAMPNS gives. The kernel's time
/// is taken as the packet enters the device's queue (TX_SCHED), not as
/// the driver takes it (TX_SOFTWARE): a packet that waits in this host's
/// own queue (a shaper on its egress, a full qdisc) has waited on the
/// path, and a round trip from the driver's time would hide it. The
/// card's time (where it stamps packets) is as it leaves the card.
pub fn enable_tx_timestamps(sock: &impl AsRawFd) -> io::Result<()> {
    let flags: libc::c_uint = libc::SOF_TIMESTAMPING_TX_SCHED
        | libc::SOF_TIMESTAMPING_SOFTWARE
        | libc::SOF_TIMESTAMPING_TX_HARDWARE
        | libc::SOF_TIMESTAMPING_RX_HARDWARE
        | libc::SOF_TIMESTAMPING_RAW_HARDWARE
        | libc::SOF_TIMESTAMPING_OPT_ID
        | libc::SOF_TIMESTAMPING_OPT_TSONLY;
    setsockopt_raw(sock, libc::SOL_SOCKET, SO_TIMESTAMPING, &flags)
}

/// Reads every send timestamp waiting on the socket's error queue
/// (without waiting) into `out`. Other error-queue messages (ICMP errors)
/// are read and dropped.
pub fn read_tx_stamps(sock: &impl AsRawFd, out: &mut Vec<TxStamp>) -> io::Result<()> {
    // Bounded: the queue holds at most the socket's receive buffer.
    for _ in 0..1024 {
        let mut control = [0u64; 32];
        // SAFETY: msghdr is a plain C struct for which all-zero is valid.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        // SAFETY: msg has no data buffer and a live control buffer of the
        // length given; the kernel writes within it.
        let n = unsafe {
            libc::recvmsg(
                sock.as_raw_fd(),
                &mut msg,
                libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(()),
                _ => Err(e),
            };
        }
        if let Some(s) = parse(&msg) {
            out.push(s);
        }
    }
    Ok(())
}

/// The hardware receive time in an `SCM_TIMESTAMPING` message, if the
/// card gave one (ns since the Unix epoch, the card's clock).
///
/// # Safety
/// `c` points to a control message the kernel wrote, within its buffer.
pub(super) unsafe fn hardware_rx_ns(c: *const libc::cmsghdr) -> Option<i64> {
    // SAFETY: the caller's promise; stamps() checks the length.
    unsafe { stamps(c) }.and_then(|ts| nonzero_ns(&ts[2]))
}

/// The three timespecs of an `SCM_TIMESTAMPING` message (software,
/// deprecated, hardware).
///
/// # Safety
/// As [`hardware_rx_ns`].
unsafe fn stamps(c: *const libc::cmsghdr) -> Option<[libc::timespec; 3]> {
    // SAFETY: the header is the kernel's; the data read stays within
    // the cmsg_len it set, checked first.
    unsafe {
        let need = libc::CMSG_LEN(std::mem::size_of::<[libc::timespec; 3]>() as u32) as usize;
        if (*c).cmsg_level != libc::SOL_SOCKET
            || (*c).cmsg_type != SCM_TIMESTAMPING
            || (*c).cmsg_len < need
        {
            return None;
        }
        Some(std::ptr::read_unaligned(libc::CMSG_DATA(c).cast()))
    }
}

fn nonzero_ns(ts: &libc::timespec) -> Option<i64> {
    (ts.tv_sec != 0 || ts.tv_nsec != 0).then(|| {
        ts.tv_sec
            .saturating_mul(1_000_000_000)
            .saturating_add(ts.tv_nsec)
    })
}

/// A send timestamp from one error-queue message: its SCM_TIMESTAMPING
/// and the extended error that numbers it.
fn parse(msg: &libc::msghdr) -> Option<TxStamp> {
    let mut times = None;
    let mut id = None;
    // SAFETY: msg was filled by recvmsg; the CMSG_* macros walk its
    // control buffer within msg_controllen, and each read stays within
    // the cmsg_len the kernel set.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            let level = (*c).cmsg_level;
            let kind = (*c).cmsg_type;
            let is_err = (level == libc::SOL_IP && kind == libc::IP_RECVERR)
                || (level == libc::SOL_IPV6 && kind == libc::IPV6_RECVERR);
            if let Some(ts) = stamps(c) {
                times = Some(ts);
            } else if is_err
                && (*c).cmsg_len as usize
                    >= libc::CMSG_LEN(std::mem::size_of::<libc::sock_extended_err>() as u32)
                        as usize
            {
                let e: libc::sock_extended_err =
                    std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                if e.ee_origin == libc::SO_EE_ORIGIN_TIMESTAMPING
                    && e.ee_errno == libc::ENOMSG as u32
                {
                    id = Some(e.ee_data);
                }
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    let ts = times?;
    let id = id?;
    // A hardware stamp where the card gave one, else the kernel's.
    match (nonzero_ns(&ts[2]), nonzero_ns(&ts[0])) {
        (Some(ns), _) => Some(TxStamp {
            id,
            ns,
            source: StampSource::Hardware,
        }),
        (None, Some(ns)) => Some(TxStamp {
            id,
            ns,
            source: StampSource::Kernel,
        }),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;

    #[test]
    fn each_datagram_sent_on_loopback_gets_its_kernel_send_time_in_order() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        enable_tx_timestamps(&tx).unwrap();
        let before = sonde_model::clock::now_ns();
        for _ in 0..3 {
            tx.send(b"stamp me").unwrap();
        }
        let after = sonde_model::clock::now_ns();
        let mut got = Vec::new();
        read_tx_stamps(&tx, &mut got).unwrap();
        assert_eq!(got.iter().map(|s| s.id).collect::<Vec<_>>(), [0, 1, 2]);
        for s in &got {
            assert_eq!(s.source, StampSource::Kernel);
            assert!(
                (before..=after).contains(&s.ns),
                "{s:?} not in {before}..{after}"
            );
        }
        assert!(got.windows(2).all(|w| w[0].ns <= w[1].ns));
        // Read once: the queue is empty now.
        got.clear();
        read_tx_stamps(&tx, &mut got).unwrap();
        assert!(got.is_empty());
    }
}
