//! What comes back from a trace probe (an ICMP or ICMPv6 echo request
//! sent with a small TTL / hop limit): an echo reply from the target, or
//! an error from a hop — Time Exceeded, Destination Unreachable, Packet
//! Too Big / Fragmentation Needed — that quotes the start of the probe as
//! it arrived there. The quotation tells the probe's DSCP and ECN when it
//! reached that hop, its remaining TTL, and (IPv6) its flow label: the
//! first hop whose quotation shows another DSCP than was sent is the one
//! that rewrote it (scamper and tracebox read quotations the same way).
//! A hop inside an MPLS tunnel may add, after the quotation, an ICMP
//! extension (RFC 4884) with the label stack the probe carried there
//! (RFC 4950): read into [`Quoted::labels`].
//!
//! Pure: bytes in, what they say out; the socket is in `mod.rs`.

use crate::ping::echo::checksum;
use sonde_model::MplsLabel;
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
    /// The MPLS label stack the hop reported in an ICMP extension.
    pub labels: LabelStack,
}

/// Most label stack entries kept of one answer (the rest are ignored).
pub const MAX_LABELS: usize = 4;

/// MPLS label stack entries (RFC 3032: label 20 bits, traffic class 3,
/// bottom of stack 1, TTL 8), outermost first; inline, so an answer
/// stays `Copy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LabelStack {
    entries: [u32; MAX_LABELS],
    len: u8,
}

impl LabelStack {
    /// The entries, as 32-bit words.
    pub fn entries(&self) -> &[u32] {
        &self.entries[..usize::from(self.len)]
    }

    /// The entries as the model keeps them.
    pub fn labels(&self) -> Vec<MplsLabel> {
        self.entries()
            .iter()
            .map(|&e| MplsLabel {
                label: e >> 12,
                tc: ((e >> 9) & 7) as u8,
                ttl: (e & 0xff) as u8,
            })
            .collect()
    }

    fn push(&mut self, entry: u32) {
        if let Some(slot) = self.entries.get_mut(usize::from(self.len)) {
            *slot = entry;
            self.len += 1;
        }
    }
}

/// Where an RFC 4884 extension structure may start in an ICMP message
/// whose original-datagram length field says `words` units of `unit`
/// bytes: right after that datagram, or, where the field is 0 and the
/// message is longer than 8 + 128 bytes, at 128 (RFC 4884 §5: hops that
/// predate the length field put it there).
fn extension_at(message: &[u8], words: u8, unit: usize) -> Option<usize> {
    match usize::from(words) * unit {
        0 if message.len() > 8 + 128 => Some(8 + 128),
        0 => None,
        n => Some(8 + n),
    }
}

/// The MPLS label stack of the extension structure at `at` (RFC 4884
/// §7: version 2, a checksum over the structure, then objects of length,
/// class and type; RFC 4950: class 1 type 1 is the incoming stack). A
/// bad version or checksum, or a malformed object, yields what was read
/// before it: nothing is trusted past a defect.
fn labels_at(message: &[u8], at: Option<usize>) -> LabelStack {
    let mut stack = LabelStack::default();
    let Some(ext) = at.and_then(|at| message.get(at..)) else {
        return stack;
    };
    if ext.len() < 4 || ext[0] >> 4 != 2 || checksum(ext) != 0 {
        return stack;
    }
    let mut objects = &ext[4..];
    while let (Some(len), Some(&class), Some(&kind)) =
        (be16(objects, 0), objects.get(2), objects.get(3))
    {
        let len = usize::from(len);
        let Some(body) = objects.get(4..len).filter(|_| len >= 4) else {
            break;
        };
        if (class, kind) == (1, 1) {
            for e in body.chunks_exact(4) {
                stack.push(u32::from_be_bytes([e[0], e[1], e[2], e[3]]));
            }
        }
        objects = &objects[len..];
    }
    stack
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
                    labels: labels_at(icmp, extension_at(icmp, *icmp.get(5)?, 4)),
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
                    // Packet Too Big has its MTU where the others have
                    // the length of the quotation: no extension.
                    labels: if matches!(kind, AnswerKind::TooBig(_)) {
                        LabelStack::default()
                    } else {
                        labels_at(message, extension_at(message, message[4], 8))
                    },
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

#[cfg(test)]
mod tests {
    use super::*;

    /// An RFC 4884 extension structure as an LSR sends it (RFC 4950 §7):
    /// version 2 (0x20 0x00), its checksum 0x36d8, one object of 12
    /// bytes of class 1 (MPLS label stack) type 1 with two entries:
    /// label 16005 TC 5 TTL 1 (0x03e85a01), and label 299776, bottom of
    /// the stack, TTL 1 (0x49300101).
    const EXTENSION: &str = "200036d8000c010103e85a0149300101";

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn two_labels() -> Vec<MplsLabel> {
        vec![
            MplsLabel {
                label: 16005,
                tc: 5,
                ttl: 1,
            },
            MplsLabel {
                label: 299_776,
                tc: 0,
                ttl: 1,
            },
        ]
    }

    /// A UDP probe (source port 0x1234, checksum 0xabcd) as quoted after
    /// `ip_header`, padded to 128 bytes as RFC 4884 asks.
    fn quotation(ip_header: &[u8]) -> Vec<u8> {
        let mut q = ip_header.to_vec();
        q.extend([0x12, 0x34, 0x82, 0x9a, 0, 40, 0xab, 0xcd]);
        q.resize(128, 0);
        q
    }

    /// An IPv4 Time Exceeded (IP header first) whose length field says
    /// `words` 32-bit words, then `tail`.
    fn v4_time_exceeded(words: u8, tail: &[u8]) -> Vec<u8> {
        let mut m = vec![
            0x45, 0, 0, 0, 0, 0, 0, 0, 64, 1, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ];
        m.extend([V4_TIME_EXCEEDED, 0, 0, 0, 0, words, 0, 0]);
        m.extend(quotation(&[
            0x45, 0xb8, 0, 60, 0, 0, 0, 0, 1, PROTO_UDP, 0, 0, 10, 0, 0, 2, 10, 0, 0, 9,
        ]));
        m.extend(tail);
        m
    }

    /// An ICMPv6 message of `kind` whose bytes 4–7 are `word` (the
    /// quotation's length in 64-bit words, or an MTU), then `tail`.
    fn v6_message(kind: u8, word: [u8; 4], tail: &[u8]) -> Vec<u8> {
        let mut m = vec![kind, 0, 0, 0];
        m.extend(word);
        let mut ip = vec![0x6b, 0x80, 0, 0, 0, 8, PROTO_UDP, 1];
        ip.extend([0x20, 0x01, 0x0d, 0xb8].iter().chain(&[0; 12]));
        ip.extend([0x20, 0x01, 0x0d, 0xb8].iter().chain(&[0; 11]).chain(&[9]));
        m.extend(quotation(&ip));
        m.extend(tail);
        m
    }

    #[test]
    fn an_ipv4_hop_in_a_tunnel_reports_its_label_stack() {
        let a = parse_v4(&v4_time_exceeded(32, &hex(EXTENSION))).unwrap();
        assert_eq!(
            (a.kind, a.id, a.seq),
            (AnswerKind::TimeExceeded, 0x1234, 0xabcd)
        );
        let q = a.quoted.unwrap();
        assert_eq!((q.tos, q.ttl), (0xb8, 1));
        assert_eq!(q.labels.labels(), two_labels());
        // A hop that predates the length field puts the extension at 128.
        let old = parse_v4(&v4_time_exceeded(0, &hex(EXTENSION))).unwrap();
        assert_eq!(old.quoted.unwrap().labels.labels(), two_labels());
        // Without an extension: no labels.
        let plain = parse_v4(&v4_time_exceeded(0, &[])).unwrap();
        assert!(plain.quoted.unwrap().labels.entries().is_empty());
    }

    #[test]
    fn an_ipv6_hop_in_a_tunnel_reports_its_label_stack_and_too_big_none() {
        let ext = hex(EXTENSION);
        let a = parse_v6(&v6_message(V6_TIME_EXCEEDED, [16, 0, 0, 0], &ext)).unwrap();
        let q = a.quoted.unwrap();
        assert_eq!((a.id, a.seq, q.tos, q.ttl), (0x1234, 0xabcd, 0xb8, 1));
        assert_eq!(q.labels.labels(), two_labels());
        // Packet Too Big's bytes 4-7 are its MTU, never a length.
        let mtu = 1280u32.to_be_bytes();
        let big = parse_v6(&v6_message(V6_TOO_BIG, mtu, &ext)).unwrap();
        assert_eq!(big.kind, AnswerKind::TooBig(1280));
        assert!(big.quoted.unwrap().labels.entries().is_empty());
    }

    #[test]
    fn a_defective_extension_yields_no_labels_and_no_panic() {
        let good = hex(EXTENSION);
        let mut bad_sum = good.clone();
        bad_sum[3] ^= 1;
        let mut version_1 = good.clone();
        version_1[0] = 0x10;
        for tail in [bad_sum, version_1, good[..3].to_vec()] {
            let a = parse_v4(&v4_time_exceeded(32, &tail)).unwrap();
            assert!(a.quoted.unwrap().labels.entries().is_empty(), "{tail:02x?}");
        }
        // Objects whose length is 0, under 4, or past the end end the
        // walk; a length field past the message reads nothing.
        for len in [0u16, 2, 0xffff] {
            let mut ext = hex(EXTENSION);
            ext[4..6].copy_from_slice(&len.to_be_bytes());
            let a = parse_v4(&v4_time_exceeded(32, &ext)).unwrap();
            assert!(a.quoted.unwrap().labels.entries().is_empty());
        }
        assert!(parse_v4(&v4_time_exceeded(255, &good)).is_some());
        // More than four entries: the first four are kept.
        let mut long = vec![0x20, 0, 0, 0, 0, 28, 1, 1];
        for i in 0..6u32 {
            long.extend(((100 + i) << 12 | 1).to_be_bytes());
        }
        let sum = checksum(&long);
        long[2..4].copy_from_slice(&sum.to_be_bytes());
        let a = parse_v4(&v4_time_exceeded(32, &long)).unwrap();
        let labels: Vec<u32> = a
            .quoted
            .unwrap()
            .labels
            .labels()
            .iter()
            .map(|l| l.label)
            .collect();
        assert_eq!(labels, [100, 101, 102, 103]);
    }

    proptest::proptest! {
        /// Whatever a hop sends, in either family, with or without an
        /// extension after a well-formed quotation: an answer or none,
        /// never a panic.
        #[test]
        fn any_bytes_parse_without_panic(
            bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..400),
            words in proptest::num::u8::ANY,
        ) {
            let _ = parse_v4(&bytes);
            let _ = parse_v6(&bytes);
            let _ = parse_v4(&v4_time_exceeded(words, &bytes));
            let _ = parse_v6(&v6_message(V6_TIME_EXCEEDED, [words, 0, 0, 0], &bytes));
        }
    }
}
