//! A new connection's handshake, judged from the bytes it has sent so far
//! (peeked, not consumed), without blocking: which protocol it speaks,
//! whether its opening is complete, and the source it is counted against.
//! The acceptor ([`crate::acceptor`]) drives it; these are its pure rules.

use sonde_wire::iperf3::{self as iperf3_wire, State};
use sonde_wire::{
    encode_message, frame_len, Limit, Preamble, Refusal, ServerMessage, FRAME_HEADER_LEN,
    HANDSHAKE_FRAME_MAX, MAGIC, PREAMBLE_LEN, PROTOCOL_VERSION,
};
use std::net::{IpAddr, Ipv6Addr};
use std::time::{Duration, Instant};

/// Time a connection has, from accept, to finish its handshake however
/// it trickles: sonde's preamble and first message; or iperf3's cookie
/// and its parameters. Past it the connection is closed.
pub const HANDSHAKE_DEADLINE: Duration = Duration::from_secs(5);

/// Least time a client has for its UDP connects once told to make them:
/// another test may have held the UDP port past the client's deadline.
pub(crate) const CONNECT_GRACE: Duration = Duration::from_secs(1);

/// When a test's data connections (TCP streams, or the UDP connect
/// exchange: sonde's UDP hellos, iperf3's UDP connects) must all be in:
/// the handshake's `deadline`, measured from accept, or [`CONNECT_GRACE`]
/// from now if that is later.
pub(crate) fn connect_deadline(deadline: Instant) -> Instant {
    deadline.max(Instant::now() + CONNECT_GRACE)
}

/// The most of a native first message the acceptor waits for before
/// handing the connection to a thread that reads the rest (within the
/// deadline). Real requests are a few KiB; a connection's receive buffer
/// always holds this much.
pub(crate) const NATIVE_PEEK_MAX: usize = 32 * 1024;

/// Bytes the acceptor peeks at once: enough for any opening it waits for.
pub(crate) const PEEK_LEN: usize = PREAMBLE_LEN + FRAME_HEADER_LEN + NATIVE_PEEK_MAX;

/// The protocol a connection's first bytes name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// sonde's preamble (its magic, upper case).
    Native,
    /// Anything else: an iperf3 cookie (lower-case base32).
    Iperf3,
}

/// Which protocol `first` (at least one byte) is, as the server has
/// always told them apart: sonde's magic, or else iperf3.
pub(crate) fn protocol(first: &[u8]) -> Protocol {
    let n = first.len().min(MAGIC.len());
    if first[..n] == MAGIC[..n] {
        Protocol::Native
    } else {
        Protocol::Iperf3
    }
}

/// Whether a native opening is in: the preamble and the whole first
/// message (or as much of it as [`NATIVE_PEEK_MAX`]). A preamble that is
/// not sonde's, a version this server does not speak, or a frame over the
/// limit is complete too: the handler answers it.
pub(crate) fn native_complete(bytes: &[u8]) -> bool {
    let Some(preamble) = bytes.get(..PREAMBLE_LEN) else {
        return false;
    };
    let mut p = [0u8; PREAMBLE_LEN];
    p.copy_from_slice(preamble);
    match Preamble::decode(&p) {
        Ok(p) if p.version == PROTOCOL_VERSION => {}
        _ => return true,
    }
    let Some(header) = bytes.get(PREAMBLE_LEN..PREAMBLE_LEN + FRAME_HEADER_LEN) else {
        return false;
    };
    let mut h = [0u8; FRAME_HEADER_LEN];
    h.copy_from_slice(header);
    let Ok(len) = frame_len(h, HANDSHAKE_FRAME_MAX) else {
        return true;
    };
    bytes.len() >= PREAMBLE_LEN + FRAME_HEADER_LEN + len.min(NATIVE_PEEK_MAX)
}

/// Whether iperf3's cookie is in.
pub(crate) fn cookie_complete(bytes: &[u8]) -> bool {
    bytes.len() >= iperf3_wire::COOKIE_LEN
}

/// Whether iperf3's parameters are in: the length and the JSON (or a
/// length the handler refuses).
pub(crate) fn params_complete(bytes: &[u8]) -> bool {
    let Some(prefix) = bytes.get(..iperf3_wire::JSON_LEN_PREFIX) else {
        return false;
    };
    let mut p = [0u8; iperf3_wire::JSON_LEN_PREFIX];
    p.copy_from_slice(prefix);
    match iperf3_wire::json_frame_len(p, iperf3_wire::PARAMS_MAX_LEN) {
        Ok(n) => bytes.len() >= iperf3_wire::JSON_LEN_PREFIX + n,
        Err(_) => true,
    }
}

/// The source a connection is counted against: an IPv4 address, or the
/// /64 of an IPv6 one (v4-mapped addresses count as IPv4).
pub(crate) fn source_of(peer: IpAddr) -> IpAddr {
    match peer.to_canonical() {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(Ipv6Addr::from(bits))
        }
    }
}

/// How a source is written in logs and refusals: `198.51.100.7/32`,
/// `2001:db8:1:2::/64`.
pub(crate) fn source_name(source: IpAddr) -> String {
    match source {
        IpAddr::V4(v4) => format!("{v4}/32"),
        IpAddr::V6(v6) => format!("{v6}/64"),
    }
}

/// Why a connection is turned away before its handshake: a cap is full.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Full {
    /// `max_connections` connections are open.
    Connections { max: u32 },
    /// `max_handshakes_per_source` handshakes from this source are under way.
    Source { max: u32, source: IpAddr },
}

impl Full {
    /// The refusal a native client reads: the limit by its configuration
    /// key, and that the server is full.
    pub(crate) fn refusal(&self) -> Refusal {
        let (key, value, requested) = match self {
            Full::Connections { max } => (
                "max_connections",
                max,
                "one more connection: the server is full".to_string(),
            ),
            Full::Source { max, source } => (
                "max_handshakes_per_source",
                max,
                format!(
                    "one more handshake from {}: the server is full for it",
                    source_name(*source)
                ),
            ),
        };
        Refusal::LimitExceeded {
            limit: Limit::Other(key.into()),
            value: value.to_string(),
            requested,
        }
    }

    /// What is written to a client of `protocol` before closing: sonde's
    /// preamble and refusal frame, or iperf3's ACCESS_DENIED ("the server
    /// is busy").
    pub(crate) fn answer(&self, protocol: Protocol) -> Vec<u8> {
        match protocol {
            Protocol::Iperf3 => vec![State::AccessDenied.to_byte()],
            Protocol::Native => {
                let mut out = Preamble::CURRENT.encode().to_vec();
                let refused = ServerMessage::Refused {
                    refusal: self.refusal(),
                };
                // A refusal always encodes; should it not, the preamble
                // alone still tells the client the server answered.
                if let Ok(frame) = encode_message(&refused) {
                    out.extend_from_slice(&frame);
                }
                out
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_wire::{decode_message, ClientMessage, TestId};

    fn native_opening() -> Vec<u8> {
        let mut b = Preamble::CURRENT.encode().to_vec();
        let hello = ClientMessage::StreamHello {
            test_id: TestId([7; 16]),
            stream: 3,
        };
        b.extend_from_slice(&encode_message(&hello).unwrap());
        b
    }

    #[test]
    fn the_first_byte_names_the_protocol() {
        assert_eq!(protocol(b"S"), Protocol::Native);
        assert_eq!(protocol(b"SOND\0\x02"), Protocol::Native);
        assert_eq!(protocol(b"abcd"), Protocol::Iperf3);
        assert_eq!(protocol(b"SOX"), Protocol::Iperf3);
    }

    #[test]
    fn a_native_opening_is_complete_only_with_its_whole_message() {
        let full = native_opening();
        for n in 0..full.len() {
            assert!(!native_complete(&full[..n]), "complete at {n} bytes");
        }
        assert!(native_complete(&full));
        // A version this server does not speak is answered at once.
        let other = Preamble {
            version: 9,
            reserved: [0, 0],
        }
        .encode();
        assert!(native_complete(&other));
    }

    #[test]
    fn iperf3_steps_are_complete_with_their_bytes() {
        assert!(!cookie_complete(&[b'a'; 36]));
        assert!(cookie_complete(&[b'a'; 37]));
        let json = br#"{"tcp":true}"#;
        let mut frame = u32::try_from(json.len()).unwrap().to_be_bytes().to_vec();
        frame.extend_from_slice(json);
        assert!(!params_complete(&frame[..frame.len() - 1]));
        assert!(params_complete(&frame));
        // An impossible length is for the handler to refuse.
        assert!(params_complete(&u32::MAX.to_be_bytes()));
    }

    #[test]
    fn sources_are_v4_addresses_and_v6_slash_64s() {
        let s = |a: &str| source_of(a.parse().unwrap());
        assert_eq!(s("192.0.2.7"), s("::ffff:192.0.2.7"));
        assert_ne!(s("192.0.2.7"), s("192.0.2.8"));
        assert_eq!(s("2001:db8:1:2::1"), s("2001:db8:1:2:ffff::9"));
        assert_ne!(s("2001:db8:1:2::1"), s("2001:db8:1:3::1"));
        assert_eq!(source_name(s("2001:db8:1:2::1")), "2001:db8:1:2::/64");
        assert_eq!(source_name(s("::ffff:192.0.2.7")), "192.0.2.7/32");
    }

    #[test]
    fn a_full_server_says_so_in_each_protocol() {
        let full = Full::Source {
            max: 4,
            source: source_of("192.0.2.7".parse().unwrap()),
        };
        assert_eq!(full.answer(Protocol::Iperf3), vec![255u8]);
        let native = full.answer(Protocol::Native);
        assert_eq!(native[..PREAMBLE_LEN], Preamble::CURRENT.encode());
        let msg: ServerMessage =
            decode_message(&native[PREAMBLE_LEN + FRAME_HEADER_LEN..]).unwrap();
        let ServerMessage::Refused { refusal } = msg else {
            panic!("not a refusal: {msg:?}");
        };
        assert_eq!(
            refusal.to_string(),
            "max_handshakes_per_source is 4 on this server \
             (asked: one more handshake from 192.0.2.7/32: the server is full for it)"
        );
    }
}
