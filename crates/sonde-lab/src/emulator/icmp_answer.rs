//! ICMP and ICMPv6 errors the emulator sends back for a frame it will
//! not pass on: an MPLS hop's Time Exceeded, a tunnel's Packet Too Big
//! or Fragmentation Needed. Each goes back out the way the frame came,
//! from the hop's own address to the packet's source, quoting the start
//! of the packet as a router does.

use sonde_wire::inet::checksum;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub(crate) const ETH: usize = 14;
pub(crate) const IPV4: [u8; 2] = [0x08, 0x00];
pub(crate) const IPV6: [u8; 2] = [0x86, 0xdd];
/// The TTL of the answers the emulator sends.
const ANSWER_TTL: u8 = 64;

/// One error message to build: its type and code, its bytes 4–7, how
/// much of the packet it quotes, and what follows the quotation.
pub(crate) struct Error<'a> {
    pub kind: u8,
    pub code: u8,
    pub word: [u8; 4],
    /// Bytes of the packet quoted at most; `pad`: padded up to it (RFC
    /// 4884 asks 128 of a message with extensions).
    pub quote: usize,
    pub pad: bool,
    pub extension: &'a [u8],
}

/// The addresses a hop answers from, IPv6 first, as `sonde lab show`
/// prints them.
pub(crate) fn addresses(v4: Option<Ipv4Addr>, v6: Option<Ipv6Addr>) -> Vec<IpAddr> {
    let v6 = v6.map(IpAddr::V6);
    v6.into_iter().chain(v4.map(IpAddr::V4)).collect()
}

/// Whether an IP packet (from its protocol and first transport byte) is
/// itself an ICMP error, which no error may answer (RFC 1812 §4.3.2.7,
/// RFC 4443 §2.4).
pub(crate) fn is_icmp_error(v6: bool, protocol: u8, first: Option<u8>) -> bool {
    match (v6, first) {
        (false, Some(t)) => protocol == 1 && [3, 4, 5, 11, 12].contains(&t),
        (true, Some(t)) => protocol == 58 && t < 128,
        _ => false,
    }
}

/// The error `e` from `from` about the IPv4 packet in `frame`, as an
/// Ethernet frame back to where `frame` came from, into `out`.
pub(crate) fn v4(out: &mut Vec<u8>, frame: &[u8], from: Ipv4Addr, e: &Error<'_>) {
    let ip = &frame[ETH..];
    let mut icmp = message(ip, e);
    let sum = checksum(&icmp);
    icmp[2..4].copy_from_slice(&sum.to_be_bytes());
    out.clear();
    ethernet(out, frame, IPV4);
    let len = u16::try_from(20 + icmp.len()).unwrap_or(u16::MAX);
    let mut header = [0u8; 20];
    header[0] = 0x45;
    header[1] = 0xc0; // CS6, as routers send their ICMP.
    header[2..4].copy_from_slice(&len.to_be_bytes());
    header[8] = ANSWER_TTL;
    header[9] = 1;
    header[12..16].copy_from_slice(&from.octets());
    header[16..20].copy_from_slice(&ip[12..16]);
    let sum = checksum(&header);
    header[10..12].copy_from_slice(&sum.to_be_bytes());
    out.extend_from_slice(&header);
    out.extend_from_slice(&icmp);
}

/// The error `e` from `from` about the IPv6 packet in `frame`.
pub(crate) fn v6(out: &mut Vec<u8>, frame: &[u8], from: Ipv6Addr, e: &Error<'_>) {
    let ip = &frame[ETH..];
    let mut icmp = message(ip, e);
    // The checksum covers a pseudo-header (RFC 8200 §8.1).
    let len = u32::try_from(icmp.len()).unwrap_or(u32::MAX);
    let mut pseudo = Vec::with_capacity(40 + icmp.len());
    pseudo.extend_from_slice(&from.octets());
    pseudo.extend_from_slice(&ip[8..24]);
    pseudo.extend_from_slice(&len.to_be_bytes());
    pseudo.extend_from_slice(&[0, 0, 0, 58]);
    pseudo.extend_from_slice(&icmp);
    let sum = checksum(&pseudo);
    icmp[2..4].copy_from_slice(&sum.to_be_bytes());
    out.clear();
    ethernet(out, frame, IPV6);
    out.extend_from_slice(&[0x6c, 0, 0, 0]); // traffic class CS6
    out.extend_from_slice(&u16::try_from(icmp.len()).unwrap_or(u16::MAX).to_be_bytes());
    out.extend_from_slice(&[58, ANSWER_TTL]);
    out.extend_from_slice(&from.octets());
    out.extend_from_slice(&ip[8..24]);
    out.extend_from_slice(&icmp);
}

/// The ICMP message: header, quotation, extension; checksum left 0.
fn message(packet: &[u8], e: &Error<'_>) -> Vec<u8> {
    let mut m = vec![e.kind, e.code, 0, 0];
    m.extend_from_slice(&e.word);
    m.extend_from_slice(&packet[..packet.len().min(e.quote)]);
    if e.pad {
        m.resize(8 + e.quote, 0);
    }
    m.extend_from_slice(e.extension);
    m
}

/// An Ethernet header back to where `frame` came from.
fn ethernet(out: &mut Vec<u8>, frame: &[u8], kind: [u8; 2]) {
    out.extend_from_slice(&frame[6..12]);
    out.extend_from_slice(&frame[0..6]);
    out.extend_from_slice(&kind);
}
