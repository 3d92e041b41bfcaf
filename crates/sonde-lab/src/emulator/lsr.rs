//! An MPLS hop inside a link: what a label switching router in the
//! uniform TTL model (RFC 3443) shows a trace. It is a hop of its own,
//! at the start of the direction (before its delay): every IP packet
//! through it loses one from its TTL / hop limit, and one that arrives
//! with 1 left expires there and is answered with a Time Exceeded from
//! the hop's address, quoting the packet padded to 128 bytes and
//! followed by an ICMP extension (RFC 4884) holding the label stack it
//! carried (RFC 4950): the hop's labels, the innermost at the bottom,
//! each with the packet's TTL and its IP precedence as traffic class.
//!
//! Frames are Ethernet, as the emulator reads them. Link-scoped
//! packets (IPv6 neighbour discovery, link-local and link-scope
//! multicast addresses) cross untouched: they never leave a link, and
//! neighbour discovery needs its hop limit of 255.

use super::icmp_answer::{self as icmp, is_icmp_error, Error, ETH, IPV4, IPV6};
use serde::{Deserialize, Serialize};
use sonde_wire::inet::checksum;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The quotation is padded to this length, as RFC 4884 asks of a
/// message with extensions.
const QUOTE: usize = 128;

/// An MPLS hop's settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lsr {
    /// Labels a packet carries through it, outermost first (each under
    /// 2^20).
    pub labels: Vec<u32>,
    /// The address it answers IPv4 probes from (none: it answers none).
    pub v4: Option<Ipv4Addr>,
    /// The address it answers IPv6 probes from.
    pub v6: Option<Ipv6Addr>,
}

/// What the hop does with one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LsrFate {
    /// On its way (an IP packet with one less TTL, or not IP at all).
    Forward,
    /// Expired here; the answer is in the buffer handed in.
    Answered,
    /// Expired here, and not answered: the hop has no address of its
    /// family, or the packet was itself an ICMP error (RFC 1812 §4.3.2.7).
    Dropped,
}

impl Lsr {
    /// Takes `frame` through the hop; an answer, if any, goes in `answer`.
    pub fn hop(&self, frame: &mut [u8], answer: &mut Vec<u8>) -> LsrFate {
        match (frame.get(12..14), frame.get(ETH).map(|b| b >> 4)) {
            (Some(t), Some(4)) if t == IPV4 && frame.len() >= ETH + 20 => {
                self.hop_v4(frame, answer)
            }
            (Some(t), Some(6)) if t == IPV6 && frame.len() >= ETH + 40 => {
                self.hop_v6(frame, answer)
            }
            _ => LsrFate::Forward,
        }
    }

    fn hop_v4(&self, frame: &mut [u8], answer: &mut Vec<u8>) -> LsrFate {
        let ip = &frame[ETH..];
        let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
        if (dst.is_multicast() && dst.octets()[..3] == [224, 0, 0]) || dst.is_broadcast() {
            return LsrFate::Forward;
        }
        let ttl = ip[8];
        let ihl = usize::from(ip[0] & 0x0f) * 4;
        if ttl > 1 {
            // One less, and the header's checksum again.
            let Some(header) = frame.get_mut(ETH..ETH + ihl.max(20)) else {
                return LsrFate::Forward;
            };
            header[8] = ttl - 1;
            header[10..12].fill(0);
            let sum = checksum(header);
            header[10..12].copy_from_slice(&sum.to_be_bytes());
            return LsrFate::Forward;
        }
        let icmp_error = is_icmp_error(false, ip[9], ip.get(ihl).copied());
        let (Some(from), false) = (self.v4, icmp_error) else {
            return LsrFate::Dropped;
        };
        let extension = self.extension(ip[1] >> 5, ttl);
        icmp::v4(
            answer,
            frame,
            from,
            &self.time_exceeded(11, [0, 32, 0, 0], &extension),
        );
        LsrFate::Answered
    }

    fn hop_v6(&self, frame: &mut [u8], answer: &mut Vec<u8>) -> LsrFate {
        let ip = &frame[ETH..];
        let addr = |at: usize| {
            let mut a = [0u8; 16];
            a.copy_from_slice(&ip[at..at + 16]);
            Ipv6Addr::from(a)
        };
        let (src, dst) = (addr(8), addr(24));
        let link_scoped = |a: Ipv6Addr| {
            let s = a.segments()[0];
            s & 0xffc0 == 0xfe80 || s & 0xff0f == 0xff02 || a.is_unspecified()
        };
        // Neighbour discovery (ICMPv6 133-137) never crosses a router.
        let nd = ip[6] == 58 && ip.get(40).is_some_and(|t| (133..=137).contains(t));
        if link_scoped(src) || link_scoped(dst) || nd {
            return LsrFate::Forward;
        }
        let hops = ip[7];
        if hops > 1 {
            frame[ETH + 7] = hops - 1;
            return LsrFate::Forward;
        }
        let icmp_error = is_icmp_error(true, ip[6], ip.get(40).copied());
        let (Some(from), false) = (self.v6, icmp_error) else {
            return LsrFate::Dropped;
        };
        let tclass = ((ip[0] & 0x0f) << 4) | (ip[1] >> 4);
        let extension = self.extension(tclass >> 5, hops);
        icmp::v6(
            answer,
            frame,
            from,
            &self.time_exceeded(3, [16, 0, 0, 0], &extension),
        );
        LsrFate::Answered
    }

    /// A Time Exceeded (`kind` 11 for ICMP, 3 for ICMPv6) whose bytes
    /// 4–7 (`word`) give the quotation's length, 128 bytes, in the
    /// family's units, followed by `extension`.
    fn time_exceeded<'a>(&self, kind: u8, word: [u8; 4], extension: &'a [u8]) -> Error<'a> {
        Error {
            kind,
            code: 0,
            word,
            quote: QUOTE,
            pad: true,
            extension,
        }
    }

    /// The RFC 4884 extension structure: version 2, its checksum, one
    /// MPLS label stack object (class 1, type 1).
    fn extension(&self, tc: u8, ttl: u8) -> Vec<u8> {
        let n = self.labels.len();
        let mut e = vec![0x20, 0, 0, 0];
        e.extend_from_slice(&u16::try_from(4 + 4 * n).unwrap_or(4).to_be_bytes());
        e.extend_from_slice(&[1, 1]);
        for (i, label) in self.labels.iter().enumerate() {
            let bottom = u32::from(i + 1 == n);
            let entry = (label & 0xf_ffff) << 12 | u32::from(tc & 7) << 9 | bottom << 8;
            e.extend_from_slice(&(entry | u32::from(ttl)).to_be_bytes());
        }
        let sum = checksum(&e);
        e[2..4].copy_from_slice(&sum.to_be_bytes());
        e
    }

    /// Its addresses, as `sonde lab show` prints them.
    pub fn addresses(&self) -> Vec<IpAddr> {
        icmp::addresses(self.v4, self.v6)
    }
}

#[cfg(test)]
mod tests;
