//! Reading TCP_INFO into a [`TcpInfoSnapshot`]. The kernel's struct is
//! read as bytes at the offsets of linux/tcp.h, so the parsing is safe
//! code and works on kernels that fill a shorter struct.

use crate::sys;
use sonde_model::TcpInfoSnapshot;
use std::os::fd::AsRawFd;

fn u32_at(b: &[u8], off: usize) -> u32 {
    b.get(off..off + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u32::from_ne_bytes)
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    b.get(off..off + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_ne_bytes)
}

/// Parses the first `bytes.len()` bytes of a `struct tcp_info`.
pub fn parse_tcp_info(bytes: &[u8]) -> TcpInfoSnapshot {
    let snd_mss = u32_at(bytes, 16);
    let cwnd_segments = u32_at(bytes, 80);
    TcpInfoSnapshot {
        total_retrans: u64::from(u32_at(bytes, 100)),
        cwnd_bytes: u64::from(cwnd_segments) * u64::from(snd_mss),
        srtt_us: u32_at(bytes, 68),
        rttvar_us: u32_at(bytes, 72),
        min_rtt_us: u32_at(bytes, 148),
        snd_mss,
        pmtu: u32_at(bytes, 60),
        delivery_rate_bps: u64_at(bytes, 160).saturating_mul(8),
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

    #[test]
    fn fields_come_from_their_offsets() {
        let mut b = [0u8; sys::TCP_INFO_LEN];
        b[16..20].copy_from_slice(&1448u32.to_ne_bytes());
        b[80..84].copy_from_slice(&10u32.to_ne_bytes());
        b[68..72].copy_from_slice(&1234u32.to_ne_bytes());
        b[100..104].copy_from_slice(&7u32.to_ne_bytes());
        b[160..168].copy_from_slice(&1_000_000u64.to_ne_bytes());
        let t = parse_tcp_info(&b);
        assert_eq!(t.cwnd_bytes, 14_480);
        assert_eq!(t.srtt_us, 1234);
        assert_eq!(t.total_retrans, 7);
        assert_eq!(t.delivery_rate_bps, 8_000_000);
    }

    #[test]
    fn a_short_struct_leaves_zeros() {
        let t = parse_tcp_info(&[0u8; 90]);
        assert_eq!(t.total_retrans, 0);
        assert_eq!(t.delivery_rate_bps, 0);
    }

    #[test]
    fn a_real_socket_reports_its_mss() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let t = read_tcp_info(&c).unwrap();
        assert!(t.snd_mss > 0 && t.snd_mss <= 65_535, "{t:?}");
    }
}
