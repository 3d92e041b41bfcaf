//! ICMP and ICMPv6 echo messages: building requests and reading replies
//! (pure; the socket is in `icmp.rs`).

/// Echo request / reply types of ICMP (RFC 792) and ICMPv6 (RFC 4443).
const ECHO_REQUEST_V4: u8 = 8;
const ECHO_REPLY_V4: u8 = 0;
const ECHO_REQUEST_V6: u8 = 128;
const ECHO_REPLY_V6: u8 = 129;

/// Length of the echo header (type, code, checksum, identifier, sequence).
pub const ECHO_HEADER: usize = 8;

pub use sonde_wire::inet::checksum;

/// An echo request with `payload_len` bytes of data after the header: the
/// first 8 carry `stamp` (the send time, for whoever looks at the wire),
/// the rest a counting pattern. The checksum is filled in for IPv4; the
/// kernel computes ICMPv6's (it covers a pseudo-header) and a datagram
/// ICMP socket rewrites the identifier and checksum itself.
pub fn request(v6: bool, id: u16, seq: u16, payload_len: usize, stamp: u64) -> Vec<u8> {
    let mut p = vec![0u8; ECHO_HEADER + payload_len];
    p[0] = if v6 { ECHO_REQUEST_V6 } else { ECHO_REQUEST_V4 };
    p[4..6].copy_from_slice(&id.to_be_bytes());
    p[6..8].copy_from_slice(&seq.to_be_bytes());
    let stamp = stamp.to_be_bytes();
    for (i, b) in p[ECHO_HEADER..].iter_mut().enumerate() {
        *b = stamp.get(i).copied().unwrap_or(i as u8);
    }
    if !v6 {
        let c = checksum(&p);
        p[2..4].copy_from_slice(&c.to_be_bytes());
    }
    p
}

/// What a reply says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    pub id: u16,
    pub seq: u16,
    /// ICMP data bytes (after the echo header).
    pub payload_len: usize,
    /// From the IPv4 header, when the socket delivers it.
    pub ttl: Option<u8>,
}

/// Reads an echo reply from what a socket delivered: `with_ip_header` for
/// a raw IPv4 socket (which gets the IP header too). `None` for anything
/// else (other ICMP messages, short or garbled packets).
pub fn parse_reply(v6: bool, with_ip_header: bool, data: &[u8]) -> Option<Reply> {
    let (icmp, ttl) = if with_ip_header {
        let ihl = usize::from(data.first()? & 0x0f) * 4;
        if ihl < 20 || data.first()? >> 4 != 4 {
            return None;
        }
        (data.get(ihl..)?, data.get(8).copied())
    } else {
        (data, None)
    };
    let want = if v6 { ECHO_REPLY_V6 } else { ECHO_REPLY_V4 };
    if icmp.len() < ECHO_HEADER || icmp[0] != want || icmp[1] != 0 {
        return None;
    }
    Some(Reply {
        id: u16::from_be_bytes([icmp[4], icmp[5]]),
        seq: u16::from_be_bytes([icmp[6], icmp[7]]),
        payload_len: icmp.len() - ECHO_HEADER,
        ttl,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_v4_request_checksums_to_zero() {
        let p = request(false, 0x1234, 7, 56, 99);
        assert_eq!(p.len(), 64);
        assert_eq!(p[0], 8);
        assert_eq!(checksum(&p), 0, "a packet with its checksum sums to 0");
        // Odd lengths pad with a zero byte.
        let odd = request(false, 1, 2, 7, 0);
        assert_eq!(checksum(&odd), 0);
    }

    #[test]
    fn replies_are_recognised_with_and_without_an_ip_header() {
        let mut reply = request(false, 0xbeef, 42, 56, 1);
        reply[0] = 0;
        let r = parse_reply(false, false, &reply).unwrap();
        assert_eq!((r.id, r.seq, r.payload_len, r.ttl), (0xbeef, 42, 56, None));
        let mut with_ip = vec![
            0x45, 0, 0, 84, 0, 0, 0, 0, 61, 1, 0, 0, 198, 18, 1, 2, 198, 18, 1, 1,
        ];
        with_ip.extend(&reply);
        let r = parse_reply(false, true, &with_ip).unwrap();
        assert_eq!((r.seq, r.ttl), (42, Some(61)));
        // A request is not a reply; an ICMPv6 reply is not an ICMP one.
        assert!(parse_reply(false, false, &request(false, 1, 1, 8, 0)).is_none());
        let mut v6 = request(true, 1, 9, 8, 0);
        v6[0] = 129;
        assert!(parse_reply(false, false, &v6).is_none());
        assert_eq!(parse_reply(true, false, &v6).map(|r| r.seq), Some(9));
        // Short or garbled input is no reply and no panic.
        assert!(parse_reply(false, true, &[0x4f; 10]).is_none());
        assert!(parse_reply(false, true, &[0x41; 30]).is_none());
        assert!(parse_reply(true, false, &[129, 0, 0]).is_none());
    }
}
