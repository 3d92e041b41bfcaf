//! UDP test packets and the hello datagram that opens a UDP stream.
//!
//! Test packet, 24-byte header then fill, all big-endian:
//!
//! | bytes | field |
//! |---|---|
//! | 0–1 | magic `0x53 0x55` ("SU") |
//! | 2 | version (1) |
//! | 3 | flags: bit 0 warm-up packet (`-O`), bit 1 end marker |
//! | 4–5 | stream id |
//! | 6 | DSCP the sender set (0–63) |
//! | 7 | reserved (0) |
//! | 8–15 | sequence number, from 0 |
//! | 16–23 | send time, ns since the Unix epoch (sender's realtime clock) |
//!
//! Once [`TestPacket::decode`] accepts a buffer no accessor can fail.

use crate::WireError;

pub const TEST_PACKET_MAGIC: [u8; 2] = [0x53, 0x55];
pub const UDP_PACKET_VERSION: u8 = 1;
pub const TEST_HEADER_LEN: usize = 24;
const FLAG_WARMUP: u8 = 1;
const FLAG_END: u8 = 2;

/// The header of one test packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TestPacket {
    pub stream: u16,
    pub seq: u64,
    pub send_ns: u64,
    pub dscp: u8,
    /// Sent during the warm-up: counted apart from the measurement.
    pub warmup: bool,
    /// The sender has finished; not a measured packet.
    pub end: bool,
}

impl TestPacket {
    /// Writes the header into the first 24 bytes of `buf`; the rest of
    /// `buf` (the fill) is left as it is.
    pub fn encode(&self, buf: &mut [u8]) -> Result<(), WireError> {
        let head = buf.get_mut(..TEST_HEADER_LEN).ok_or_else(|| {
            WireError::BadMessage(format!("a test packet needs {TEST_HEADER_LEN} bytes"))
        })?;
        head[0..2].copy_from_slice(&TEST_PACKET_MAGIC);
        head[2] = UDP_PACKET_VERSION;
        head[3] = (u8::from(self.warmup) * FLAG_WARMUP) | (u8::from(self.end) * FLAG_END);
        head[4..6].copy_from_slice(&self.stream.to_be_bytes());
        head[6] = self.dscp & 0x3f;
        head[7] = 0;
        head[8..16].copy_from_slice(&self.seq.to_be_bytes());
        head[16..24].copy_from_slice(&self.send_ns.to_be_bytes());
        Ok(())
    }

    /// Reads a header; `None` for anything that is not a version-1 test
    /// packet (stray datagrams are counted by the caller, not trusted).
    pub fn decode(buf: &[u8]) -> Option<Self> {
        let h: &[u8; TEST_HEADER_LEN] = buf.first_chunk()?;
        if h[0..2] != TEST_PACKET_MAGIC || h[2] != UDP_PACKET_VERSION {
            return None;
        }
        let u64_at = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&h[i..i + 8]);
            u64::from_be_bytes(b)
        };
        Some(Self {
            stream: u16::from_be_bytes([h[4], h[5]]),
            seq: u64_at(8),
            send_ns: u64_at(16),
            dscp: h[6] & 0x3f,
            warmup: h[3] & FLAG_WARMUP != 0,
            end: h[3] & FLAG_END != 0,
        })
    }

    /// Rewrites only the sequence number and send time of an encoded
    /// packet (the hot path of a sender).
    pub fn restamp(buf: &mut [u8], seq: u64, send_ns: u64) {
        if let Some(h) = buf.get_mut(8..TEST_HEADER_LEN) {
            h[0..8].copy_from_slice(&seq.to_be_bytes());
            h[8..16].copy_from_slice(&send_ns.to_be_bytes());
        }
    }
}

pub const HELLO_MAGIC: [u8; 2] = [0x53, 0x48];
pub const HELLO_LEN: usize = 22;

/// The datagram a client sends on a new UDP stream so the server learns
/// its address (and any NAT or firewall on the way opens): magic "SH",
/// version, a zero byte, the 16-byte test id, the stream id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpHello {
    pub test_id: [u8; 16],
    pub stream: u16,
}

impl UdpHello {
    pub fn encode(&self) -> [u8; HELLO_LEN] {
        let mut b = [0u8; HELLO_LEN];
        b[0..2].copy_from_slice(&HELLO_MAGIC);
        b[2] = UDP_PACKET_VERSION;
        b[4..20].copy_from_slice(&self.test_id);
        b[20..22].copy_from_slice(&self.stream.to_be_bytes());
        b
    }

    pub fn decode(buf: &[u8]) -> Option<Self> {
        let b: &[u8; HELLO_LEN] = buf.first_chunk()?;
        if b[0..2] != HELLO_MAGIC || b[2] != UDP_PACKET_VERSION || buf.len() != HELLO_LEN {
            return None;
        }
        let mut test_id = [0u8; 16];
        test_id.copy_from_slice(&b[4..20]);
        Some(Self {
            test_id,
            stream: u16::from_be_bytes([b[20], b[21]]),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn header_round_trips_and_fill_is_kept() {
        let p = TestPacket {
            stream: 7,
            seq: 1 << 40,
            send_ns: 1_700_000_000_123_456_789,
            dscp: 46,
            warmup: true,
            end: false,
        };
        let mut buf = vec![0xAB; 64];
        p.encode(&mut buf).unwrap();
        assert_eq!(TestPacket::decode(&buf), Some(p));
        assert_eq!(buf[24..], [0xAB; 40]);
        TestPacket::restamp(&mut buf, 9, 10);
        let q = TestPacket::decode(&buf).unwrap();
        assert_eq!((q.seq, q.send_ns, q.dscp), (9, 10, 46));
    }

    #[test]
    fn short_or_foreign_datagrams_are_not_packets() {
        assert!(TestPacket::decode(&[0x53, 0x55, 1]).is_none());
        assert!(TestPacket::decode(&[0u8; 64]).is_none());
        let mut buf = [0u8; 24];
        assert!(TestPacket {
            stream: 0,
            seq: 0,
            send_ns: 0,
            dscp: 0,
            warmup: false,
            end: false
        }
        .encode(&mut buf[..20])
        .is_err());
    }

    #[test]
    fn hello_round_trips() {
        let h = UdpHello {
            test_id: [3; 16],
            stream: 300,
        };
        assert_eq!(UdpHello::decode(&h.encode()), Some(h));
        assert!(UdpHello::decode(&h.encode()[..21]).is_none());
    }

    proptest! {
        #[test]
        fn decoding_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..100)) {
            let _ = TestPacket::decode(&bytes);
            let _ = UdpHello::decode(&bytes);
        }
    }
}
