//! TCP SYN probes, as tracebox and Paris traceroute send them: every
//! probe of a trace has the same addresses and ports (one flow), and is
//! told apart by its sequence number. A hop's error quotes the TCP
//! header's first eight bytes (ports and sequence number); the target
//! answers with a SYN-ACK (open port) or a RST (closed), acknowledging the
//! probe's sequence number. This host's kernel, which opened no
//! connection, answers a SYN-ACK with a RST.
//!
//! Both are raw sockets: the SYN is written whole (header, checksum), and
//! the target's TCP answer is read from a raw TCP socket beside the ICMP
//! one.

use crate::ping::echo::checksum;
use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};

/// The probe's sequence numbers start here (the low half is the probe's
/// number).
const SEQ_BASE: u32 = 0x5d6e_0000;

/// A SYN from `src` to `dst` with sequence number `seq`, its checksum
/// over the pseudo-header (RFC 793, RFC 8200 §8.1).
pub fn syn(src: SocketAddr, dst: SocketAddr, seq: u32) -> Vec<u8> {
    let mut h = vec![0u8; 20];
    h[0..2].copy_from_slice(&src.port().to_be_bytes());
    h[2..4].copy_from_slice(&dst.port().to_be_bytes());
    h[4..8].copy_from_slice(&seq.to_be_bytes());
    h[12] = 5 << 4; // a 20-byte header
    h[13] = 0x02; // SYN
    h[14..16].copy_from_slice(&64240u16.to_be_bytes()); // window
    let mut pseudo = Vec::with_capacity(40 + 20);
    for ip in [src.ip(), dst.ip()] {
        match ip {
            IpAddr::V4(a) => pseudo.extend_from_slice(&a.octets()),
            IpAddr::V6(a) => pseudo.extend_from_slice(&a.octets()),
        }
    }
    pseudo.extend_from_slice(&[0, 6]);
    pseudo.extend_from_slice(&20u16.to_be_bytes());
    pseudo.extend_from_slice(&h);
    let c = checksum(&pseudo);
    h[16..18].copy_from_slice(&c.to_be_bytes());
    h
}

/// The sockets of a trace's TCP probes toward one port of the target.
pub struct TcpProbes {
    /// Sends the SYNs (and reads nothing: it is IPPROTO_TCP, but this one
    /// only writes).
    send: UdpSocket,
    /// Reads the target's SYN-ACKs and RSTs.
    pub(super) recv: UdpSocket,
    src: SocketAddr,
    dst: SocketAddr,
}

fn raw_tcp(target: IpAddr) -> io::Result<UdpSocket> {
    let domain = match target {
        IpAddr::V6(_) => socket2::Domain::IPV6,
        IpAddr::V4(_) => socket2::Domain::IPV4,
    };
    socket2::Socket::new(domain, socket2::Type::RAW, Some(socket2::Protocol::TCP)).map(Into::into)
}

impl TcpProbes {
    pub fn open(target: IpAddr, port: u16, tos: u8) -> io::Result<Self> {
        let from = crate::connect::source_toward(target, None).ok_or_else(|| {
            io::Error::new(io::ErrorKind::NotFound, format!("no route to {target}"))
        })?;
        // A source port of this host's that nothing else uses now: a TCP
        // socket bound to it is held while the trace runs.
        let hold = std::net::TcpListener::bind(SocketAddr::new(from, 0))?;
        let src = hold.local_addr()?;
        drop(hold);
        let send = raw_tcp(target)?;
        let s = socket2::SockRef::from(&send);
        if target.is_ipv6() {
            s.set_tclass_v6(u32::from(tos))?;
        } else {
            s.set_tos_v4(u32::from(tos))?;
        }
        let recv = raw_tcp(target)?;
        Ok(Self {
            send,
            recv,
            src,
            dst: SocketAddr::new(target, port),
        })
    }

    /// The source port: what answers are matched by.
    pub fn port(&self) -> u16 {
        self.src.port()
    }

    /// Sends probe `seq` with TTL / hop limit `ttl`.
    pub fn send(&self, ttl: u8, seq: u16) -> io::Result<()> {
        super::set_hop_limit(&self.send, self.dst.is_ipv6(), ttl)?;
        let packet = syn(self.src, self.dst, SEQ_BASE | u32::from(seq));
        // A raw socket's destination port is not used: the header has it.
        self.send
            .send_to(&packet, SocketAddr::new(self.dst.ip(), 0))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_syn_checksums_to_zero_with_its_pseudo_header() {
        let (src, dst): (SocketAddr, SocketAddr) = (
            "[2001:db8::1]:40000".parse().unwrap(),
            "[2001:db8::9]:80".parse().unwrap(),
        );
        let h = syn(src, dst, SEQ_BASE | 7);
        let mut all = Vec::new();
        for a in [src.ip(), dst.ip()] {
            if let IpAddr::V6(a) = a {
                all.extend_from_slice(&a.octets());
            }
        }
        all.extend_from_slice(&[0, 6, 0, 20]);
        all.extend_from_slice(&h);
        assert_eq!(checksum(&all), 0);
        assert_eq!(h[13], 0x02);
        assert_eq!(u16::from_be_bytes([h[6], h[7]]), 7);
    }
}
