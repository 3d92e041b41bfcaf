//! UDP probes, Paris traceroute's way: every probe of a trace has the
//! same addresses and ports (one flow for a load balancer), and is told
//! apart by its UDP checksum, which two bytes of its payload set to the
//! probe's number. A hop's error quotes the UDP header, checksum and all;
//! the target, where no one listens on the port, answers Port
//! Unreachable.

use crate::ping::echo::checksum;
use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};

/// The destination port: traceroute's first (RFC 6335's unassigned
/// range), the same for every probe.
pub const PORT: u16 = 33434;

/// Bytes of payload: the two that set the checksum, and padding.
const PAYLOAD: usize = 12;

/// One's complement addition of 16-bit words.
fn add(a: u16, b: u16) -> u16 {
    let s = u32::from(a) + u32::from(b);
    ((s & 0xffff) + (s >> 16)) as u16
}

/// What a UDP checksum covers: the pseudo-header (RFC 768, RFC 8200
/// §8.1), the header with its checksum 0, and `payload`.
fn covered(src: SocketAddr, dst: SocketAddr, payload: &[u8]) -> Vec<u8> {
    let len = (8 + payload.len()) as u16;
    let mut words = Vec::new();
    for ip in [src.ip(), dst.ip()] {
        match ip {
            IpAddr::V4(a) => words.extend_from_slice(&a.octets()),
            IpAddr::V6(a) => words.extend_from_slice(&a.octets()),
        }
    }
    words.extend_from_slice(&[0, 17]);
    words.extend_from_slice(&len.to_be_bytes());
    words.extend_from_slice(&src.port().to_be_bytes());
    words.extend_from_slice(&dst.port().to_be_bytes());
    words.extend_from_slice(&len.to_be_bytes());
    words.extend_from_slice(&[0, 0]);
    words.extend_from_slice(payload);
    words
}

/// The payload that makes the UDP checksum of a probe from `src` to
/// `dst` equal `want` (1 to 0xfffe).
pub fn payload(src: SocketAddr, dst: SocketAddr, want: u16) -> Vec<u8> {
    // checksum() is the complement of the sum: the sum is its complement.
    let sum = !checksum(&covered(src, dst, &[0; PAYLOAD]));
    // sum + w must be the complement of the checksum wanted.
    let w = add(!want, !sum);
    let mut p = vec![0u8; PAYLOAD];
    p[..2].copy_from_slice(&w.to_be_bytes());
    p
}

/// A socket sending this trace's UDP probes to `target`.
pub struct UdpProbes {
    sock: UdpSocket,
    src: SocketAddr,
    dst: SocketAddr,
}

impl UdpProbes {
    pub fn open(target: IpAddr, tos: u8) -> io::Result<Self> {
        // Bound to the address the route sends from (the checksum covers
        // it) and not connected: a connected socket would take the
        // target's Port Unreachable as an error on the next send.
        let from = crate::connect::source_toward(target, None).ok_or_else(|| {
            io::Error::new(io::ErrorKind::NotFound, format!("no route to {target}"))
        })?;
        let sock = UdpSocket::bind(SocketAddr::new(from, 0))?;
        let dst = SocketAddr::new(target, PORT);
        let s = socket2::SockRef::from(&sock);
        if target.is_ipv6() {
            s.set_tclass_v6(u32::from(tos))?;
        } else {
            s.set_tos_v4(u32::from(tos))?;
        }
        let src = sock.local_addr()?;
        Ok(Self { sock, src, dst })
    }

    /// The source port: what the hops' quotations are matched by.
    pub fn port(&self) -> u16 {
        self.src.port()
    }

    /// Sends probe `seq` with TTL / hop limit `ttl`.
    pub fn send(&self, ttl: u8, seq: u16) -> io::Result<()> {
        super::set_hop_limit(&self.sock, self.dst.is_ipv6(), ttl)?;
        self.sock
            .send_to(&payload(self.src, self.dst, seq), self.dst)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_payload_sets_the_checksum_to_the_probes_number() {
        // The checksum as the kernel computes it, over the pseudo-header,
        // the header and the payload made for it.
        for (src, dst) in [
            ("[2001:db8::1]:40000", "[2001:db8::9]:33434"),
            ("192.0.2.1:40000", "198.51.100.9:33434"),
        ] {
            let (src, dst): (SocketAddr, SocketAddr) = (src.parse().unwrap(), dst.parse().unwrap());
            for want in [1u16, 2, 300, 0xfffe] {
                let p = payload(src, dst, want);
                assert_eq!(checksum(&covered(src, dst, &p)), want, "{src} {want}");
            }
        }
    }
}
