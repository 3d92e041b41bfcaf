//! Reading TCP_INFO into a [`TcpInfoSnapshot`]. The kernel's struct is
//! read as bytes at the offsets of linux/tcp.h, so the parsing is safe
//! code and works on kernels that fill a shorter struct.

use crate::sys;
use sonde_model::TcpInfoSnapshot;
use std::os::fd::AsRawFd;

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    b.get(off..off + 4)
        .and_then(|s| s.try_into().ok())
        .map(u32::from_ne_bytes)
}

fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    b.get(off..off + 8)
        .and_then(|s| s.try_into().ok())
        .map(u64::from_ne_bytes)
}

/// Parses the first `bytes.len()` bytes of a `struct tcp_info` (offsets
/// of linux/tcp.h); a field past the end the kernel filled is `None`.
pub fn parse_tcp_info(bytes: &[u8]) -> TcpInfoSnapshot {
    let snd_mss = u32_at(bytes, 16);
    let cwnd_segments = u32_at(bytes, 80);
    TcpInfoSnapshot {
        total_retrans: u32_at(bytes, 100).map(u64::from),
        cwnd_bytes: cwnd_segments
            .zip(snd_mss)
            .map(|(c, m)| u64::from(c) * u64::from(m)),
        srtt_us: u32_at(bytes, 68),
        rttvar_us: u32_at(bytes, 72),
        min_rtt_us: u32_at(bytes, 148),
        snd_mss,
        pmtu: u32_at(bytes, 60),
        delivery_rate_bps: u64_at(bytes, 160).map(|b| b.saturating_mul(8)),
    }
}

/// TCP_INFO of a connected TCP socket; `None` if the kernel refuses.
pub fn read_tcp_info(sock: &impl AsRawFd) -> Option<TcpInfoSnapshot> {
    sys::tcp_info_bytes(sock)
        .ok()
        .map(|(buf, len)| parse_tcp_info(&buf[..len]))
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::io::{Read, Write};

    /// A loopback connection that has moved `bytes` each way.
    fn busy_pair(bytes: usize) -> (std::net::TcpStream, std::net::TcpStream) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        let buf = vec![7u8; bytes];
        let reader = std::thread::spawn(move || {
            let mut got = vec![0u8; bytes];
            s.read_exact(&mut got).unwrap();
            s
        });
        c.write_all(&buf).unwrap();
        (c, reader.join().unwrap())
    }

    #[test]
    fn a_real_socket_agrees_with_tcp_maxseg_and_has_measured_its_rtt() {
        let (c, _s) = busy_pair(1 << 20);
        let t = read_tcp_info(&c).unwrap();
        // TCP_MAXSEG, read by another call, is the MSS TCP_INFO reports.
        let maxseg = socket2::SockRef::from(&c).tcp_mss().unwrap();
        assert_eq!(t.snd_mss, Some(maxseg), "{t:?}");
        assert!(t.srtt_us.is_some_and(|v| v > 0), "{t:?}");
        let cwnd = t.cwnd_bytes.unwrap();
        assert!(cwnd > 0 && cwnd % u64::from(maxseg) == 0, "{t:?}");
        assert_eq!(t.total_retrans, Some(0), "loopback does not lose");
    }

    #[test]
    fn fields_past_a_short_struct_are_unknown_not_zero() {
        let (c, _s) = busy_pair(4096);
        let (buf, len) = sys::tcp_info_bytes(&c).unwrap();
        let full = parse_tcp_info(&buf[..len]);
        let short = parse_tcp_info(&buf[..90]);
        assert_eq!(short.snd_mss, full.snd_mss);
        assert_eq!(short.srtt_us, full.srtt_us);
        assert_eq!(short.cwnd_bytes, full.cwnd_bytes);
        assert_eq!(short.total_retrans, None);
        assert_eq!(short.min_rtt_us, None);
        assert_eq!(short.delivery_rate_bps, None);
    }
}
