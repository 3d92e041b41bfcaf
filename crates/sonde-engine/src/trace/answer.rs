//! What comes back from a trace probe (an ICMP or ICMPv6 echo request
//! sent with a small TTL / hop limit): an echo reply from the target, or
//! an error from a hop — Time Exceeded, Destination Unreachable, Packet
//! Too Big / Fragmentation Needed — that quotes the start of the probe as
//! it arrived there. The quotation tells the probe's DSCP and ECN when it
//! reached that hop, its remaining TTL, and (IPv6) its flow label: the
//! first hop whose quotation shows another DSCP than was sent is the one
//! that rewrote it (scamper and tracebox read quotations the same way).
//!
//! Pure: bytes in, what they say out; the socket is in `mod.rs`.

use std::net::IpAddr;

/// What kind of answer a probe got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerKind {
    /// The target answered an echo probe: the trace has arrived.
    EchoReply,
    /// The target said no one listens on a UDP probe's port: the trace
    /// has arrived.
    PortUnreachable,
    /// The target answered a TCP SYN probe (SYN-ACK: the port is open;
    /// RST: closed): the trace has arrived.
    TcpReply { open: bool },
    /// A hop's TTL ran out.
    TimeExceeded,
    /// A hop could not deliver it (ICMP code).
    Unreachable(u8),
    /// A hop's next link is smaller: its MTU (IPv6 Packet Too Big, IPv4
    /// Fragmentation Needed).
    TooBig(u32),
}

/// The probe's header as a hop quoted it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quoted {
    /// The traffic class / TOS byte: DSCP in the upper six bits, ECN in
    /// the lower two.
    pub tos: u8,
    /// The TTL / hop limit left when it arrived.
    pub ttl: u8,
    /// IPv6's flow label.
    pub flow_label: Option<u32>,
}

/// One answer, matched to its probe: an echo's identifier and sequence
/// number, or a UDP probe's source port and checksum (which the probe's
/// payload sets, the flow staying one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    pub kind: AnswerKind,
    pub id: u16,
    pub seq: u16,
    pub quoted: Option<Quoted>,
}

const V4_ECHO_REPLY: u8 = 0;
const V4_UNREACHABLE: u8 = 3;
const V4_TIME_EXCEEDED: u8 = 11;
const V4_ECHO_REQUEST: u8 = 8;
const V6_UNREACHABLE: u8 = 1;
const V6_TOO_BIG: u8 = 2;
const V6_TIME_EXCEEDED: u8 = 3;
const V6_ECHO_REQUEST: u8 = 128;
const V6_ECHO_REPLY: u8 = 129;
const V6_NEXT_ICMP: u8 = 58;
const PROTO_UDP: u8 = 17;
const PROTO_TCP: u8 = 6;

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

/// An IPv4 packet as a raw ICMP socket delivers it (IP header first).
pub fn parse_v4(packet: &[u8]) -> Option<Answer> {
    let ihl = usize::from(packet.first()? & 0x0f) * 4;
    let icmp = packet.get(ihl..)?;
    let (kind, code) = (*icmp.first()?, *icmp.get(1)?);
    match kind {
        V4_ECHO_REPLY => Some(Answer {
            kind: AnswerKind::EchoReply,
            id: be16(icmp, 4)?,
            seq: be16(icmp, 6)?,
            quoted: None,
        }),
        V4_TIME_EXCEEDED | V4_UNREACHABLE => {
            let inner = icmp.get(8..)?;
            let qihl = usize::from(inner.first()? & 0x0f) * 4;
            let probe = inner.get(qihl..)?;
            let proto = *inner.get(9)?;
            let udp = proto == PROTO_UDP;
            let ports = udp || proto == PROTO_TCP;
            if !ports && *probe.first()? != V4_ECHO_REQUEST {
                return None;
            }
            let kind = match (kind, code) {
                (V4_TIME_EXCEEDED, _) => AnswerKind::TimeExceeded,
                // Fragmentation needed: the next hop's MTU (RFC 1191).
                (_, 4) => AnswerKind::TooBig(u32::from(be16(icmp, 6)?)),
                (_, 3) if udp => AnswerKind::PortUnreachable,
                (_, code) => AnswerKind::Unreachable(code),
            };
            let (id, seq) = quoted_ids(probe, ports)?;
            Some(Answer {
                kind,
                id,
                seq,
                quoted: Some(Quoted {
                    tos: *inner.get(1)?,
                    ttl: *inner.get(8)?,
                    flow_label: None,
                }),
            })
        }
        _ => None,
    }
}

/// An ICMPv6 message as a raw ICMPv6 socket delivers it (no IPv6
/// header).
pub fn parse_v6(message: &[u8]) -> Option<Answer> {
    let (kind, code) = (*message.first()?, *message.get(1)?);
    match kind {
        V6_ECHO_REPLY => Some(Answer {
            kind: AnswerKind::EchoReply,
            id: be16(message, 4)?,
            seq: be16(message, 6)?,
            quoted: None,
        }),
        V6_TIME_EXCEEDED | V6_UNREACHABLE | V6_TOO_BIG => {
            let inner = message.get(8..)?;
            let proto = *inner.get(6)?;
            let udp = proto == PROTO_UDP;
            let ports = udp || proto == PROTO_TCP;
            if !ports && proto != V6_NEXT_ICMP {
                return None;
            }
            let probe = inner.get(40..)?;
            if !ports && *probe.first()? != V6_ECHO_REQUEST {
                return None;
            }
            let (b0, b1, b2, b3) = (inner[0], inner[1], inner[2], inner[3]);
            let kind = match kind {
                V6_TIME_EXCEEDED => AnswerKind::TimeExceeded,
                V6_TOO_BIG => AnswerKind::TooBig(u32::from_be_bytes([
                    message[4], message[5], message[6], message[7],
                ])),
                _ if udp && code == 4 => AnswerKind::PortUnreachable,
                _ => AnswerKind::Unreachable(code),
            };
            let (id, seq) = quoted_ids(probe, ports)?;
            Some(Answer {
                kind,
                id,
                seq,
                quoted: Some(Quoted {
                    tos: ((b0 & 0x0f) << 4) | (b1 >> 4),
                    ttl: *inner.get(7)?,
                    flow_label: Some(
                        (u32::from(b1 & 0x0f) << 16) | (u32::from(b2) << 8) | u32::from(b3),
                    ),
                }),
            })
        }
        _ => None,
    }
}

/// What identifies a quoted probe: an echo's identifier and sequence
/// number, or a UDP or TCP probe's source port and its checksum (UDP) or
/// the low half of its sequence number (TCP), both at bytes 6–7.
fn quoted_ids(probe: &[u8], ports: bool) -> Option<(u16, u16)> {
    if ports {
        Some((be16(probe, 0)?, be16(probe, 6)?))
    } else {
        Some((be16(probe, 4)?, be16(probe, 6)?))
    }
}

/// The target's answer to a TCP SYN probe, as a raw TCP socket delivers
/// it (`with_ip_header` for IPv4): a SYN-ACK or a RST to port `id`,
/// acknowledging sequence number `seq`.
pub fn parse_tcp(data: &[u8], with_ip_header: bool) -> Option<Answer> {
    let tcp = if with_ip_header {
        data.get(usize::from(data.first()? & 0x0f) * 4..)?
    } else {
        data
    };
    let flags = *tcp.get(13)?;
    let (syn, ack, rst) = (flags & 0x02 != 0, flags & 0x10 != 0, flags & 0x04 != 0);
    if !(ack && (syn || rst)) {
        return None;
    }
    let acked = u32::from_be_bytes([*tcp.get(8)?, tcp[9], tcp[10], tcp[11]]).wrapping_sub(1);
    Some(Answer {
        kind: AnswerKind::TcpReply { open: syn },
        id: be16(tcp, 2)?,
        seq: acked as u16,
        quoted: None,
    })
}

/// An answer from `from` (for either family).
pub fn parse(from: IpAddr, data: &[u8]) -> Option<Answer> {
    match from {
        IpAddr::V4(_) => parse_v4(data),
        IpAddr::V6(_) => parse_v6(data),
    }
}
