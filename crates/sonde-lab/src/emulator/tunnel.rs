//! A tunnel on a link: what an encapsulation does to the packets it
//! carries, without a tunnel device (this kernel has no GRE, ip6tnl,
//! WireGuard or ESP). Each packet costs `overhead` more bytes on the
//! wire (the outer headers: 40 for IPv6-in-IPv6, 20 + 8 + 41 for
//! OpenVPN over UDP over IPv4 with its own header and an AEAD tag…),
//! counted by the link's line rate and its policers, here, frame by
//! frame (the `rate` of the sending end, a shaper before the tunnel's
//! entrance, counts the packets as they are). A packet
//! larger than the tunnel's `mtu` is not carried: the tunnel's entrance
//! answers it from its own address with an ICMPv6 Packet Too Big, or an
//! ICMP Fragmentation Needed when the IPv4 packet says Don't Fragment
//! (an IPv4 packet that may be fragmented is dropped: the emulator does
//! not fragment), as a router at a tunnel's entrance does. A tunnel that
//! names a `cipher` carries its packets in ESP ([`super::esp`]).

use super::esp::Suite;
use super::icmp_answer::{self as icmp, is_icmp_error, Error, ETH, IPV4, IPV6};
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A tunnel's settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tunnel {
    /// Bytes each packet costs on the wire beyond itself.
    pub overhead: u32,
    /// Largest IP packet carried (none: any).
    pub mtu: Option<u32>,
    /// The address the entrance answers IPv4 packets from (none: too big
    /// ones are dropped without a word, a black hole).
    pub v4: Option<Ipv4Addr>,
    pub v6: Option<Ipv6Addr>,
    /// ESP with this suite: each packet encrypted at the entrance and
    /// decrypted at the exit, ESP's bytes added to `overhead`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cipher: Option<Suite>,
}

/// What the tunnel does with one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TunnelFate {
    Carried,
    /// Too big; the answer is in the buffer handed in.
    Answered,
    /// Too big, and not answered.
    Dropped,
}

/// The least a tunnel may carry: IPv6's minimum link MTU.
pub const MIN_MTU: u32 = 1280;

impl Tunnel {
    /// Takes `frame` to the tunnel's entrance; an answer, if any, goes in
    /// `answer`.
    pub fn enter(&self, frame: &[u8], answer: &mut Vec<u8>) -> TunnelFate {
        let Some(mtu) = self.mtu else {
            return TunnelFate::Carried;
        };
        let len = frame.len().saturating_sub(ETH);
        if len <= mtu as usize {
            return TunnelFate::Carried;
        }
        let word = mtu.to_be_bytes();
        match (frame.get(12..14), frame.get(ETH).map(|b| b >> 4)) {
            (Some(t), Some(4)) if t == IPV4 && len >= 20 => {
                let ip = &frame[ETH..];
                let ihl = usize::from(ip[0] & 0x0f) * 4;
                let dont_fragment = ip[6] & 0x40 != 0;
                let error = is_icmp_error(false, ip[9], ip.get(ihl).copied());
                let (Some(from), true, false) = (self.v4, dont_fragment, error) else {
                    return TunnelFate::Dropped;
                };
                // Destination Unreachable, Fragmentation Needed, the MTU
                // in bytes 6-7 (RFC 1191); the header and 64 bits of the
                // packet, and more, as RFC 1812 allows (up to 576 bytes).
                let mtu16 = u16::try_from(mtu).unwrap_or(u16::MAX).to_be_bytes();
                let e = too_big(3, 4, [0, 0, mtu16[0], mtu16[1]], 576 - 20 - 8);
                icmp::v4(answer, frame, from, &e);
                TunnelFate::Answered
            }
            (Some(t), Some(6)) if t == IPV6 && len >= 40 => {
                let ip = &frame[ETH..];
                let error = is_icmp_error(true, ip[6], ip.get(40).copied());
                let (Some(from), false) = (self.v6, error) else {
                    return TunnelFate::Dropped;
                };
                // Packet Too Big, as much of the packet as fits in 1280
                // bytes (RFC 4443 §3.2).
                icmp::v6(answer, frame, from, &too_big(2, 0, word, 1280 - 40 - 8));
                TunnelFate::Answered
            }
            _ => TunnelFate::Dropped,
        }
    }

    /// Its addresses, as `sonde lab show` prints them.
    pub fn addresses(&self) -> Vec<IpAddr> {
        icmp::addresses(self.v4, self.v6)
    }
}

fn too_big(kind: u8, code: u8, word: [u8; 4], quote: usize) -> Error<'static> {
    Error {
        kind,
        code,
        word,
        quote,
        pad: false,
        extension: &[],
    }
}

#[cfg(test)]
mod tests;
