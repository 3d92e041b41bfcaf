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

/// Byte offsets of the fields read, as `struct tcp_info` in linux/tcp.h
/// lays them out (a test checks them against libc's copy of the header).
mod offset {
    pub const SND_MSS: usize = 16;
    pub const PMTU: usize = 60;
    pub const RTT: usize = 68;
    pub const RTTVAR: usize = 72;
    pub const SND_CWND: usize = 80;
    pub const TOTAL_RETRANS: usize = 100;
    pub const MIN_RTT: usize = 148;
    pub const DELIVERY_RATE: usize = 160;
}

/// Parses the first `bytes.len()` bytes of a `struct tcp_info`; a field
/// past the end the kernel filled is `None`.
pub fn parse_tcp_info(bytes: &[u8]) -> TcpInfoSnapshot {
    let snd_mss = u32_at(bytes, offset::SND_MSS);
    let cwnd_segments = u32_at(bytes, offset::SND_CWND);
    TcpInfoSnapshot {
        total_retrans: u32_at(bytes, offset::TOTAL_RETRANS).map(u64::from),
        cwnd_bytes: cwnd_segments
            .zip(snd_mss)
            .map(|(c, m)| u64::from(c) * u64::from(m)),
        srtt_us: u32_at(bytes, offset::RTT),
        rttvar_us: u32_at(bytes, offset::RTTVAR),
        min_rtt_us: u32_at(bytes, offset::MIN_RTT),
        snd_mss,
        pmtu: u32_at(bytes, offset::PMTU),
        delivery_rate_bps: u64_at(bytes, offset::DELIVERY_RATE).map(|b| b.saturating_mul(8)),
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

    #[cfg(target_env = "gnu")]
    #[test]
    fn offsets_are_the_kernel_header_s() {
        use std::mem::offset_of;
        type T = libc::tcp_info;
        assert_eq!(offset::SND_MSS, offset_of!(T, tcpi_snd_mss));
        assert_eq!(offset::PMTU, offset_of!(T, tcpi_pmtu));
        assert_eq!(offset::RTT, offset_of!(T, tcpi_rtt));
        assert_eq!(offset::RTTVAR, offset_of!(T, tcpi_rttvar));
        assert_eq!(offset::SND_CWND, offset_of!(T, tcpi_snd_cwnd));
        assert_eq!(offset::TOTAL_RETRANS, offset_of!(T, tcpi_total_retrans));
        assert_eq!(offset::MIN_RTT, offset_of!(T, tcpi_min_rtt));
        assert_eq!(offset::DELIVERY_RATE, offset_of!(T, tcpi_delivery_rate));
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
        // The path MTU of a loopback connection is the loopback device's,
        // capped at the largest IPv4 packet (a 16-bit total length).
        let lo_mtu: u32 = std::fs::read_to_string("/sys/class/net/lo/mtu")
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(t.pmtu, Some(lo_mtu.min(65_535)), "{t:?}");
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
