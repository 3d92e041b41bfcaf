//! STAMP test packets (RFC 8762, Simple Two-way Active Measurement
//! Protocol): the Session-Sender's test packet and the Session-Reflector's
//! reply, in unauthenticated and authenticated mode.
//!
//! Pure encode and decode on byte slices: nothing here reads a socket or a
//! clock. The caller takes the timestamps (and the TTL or Hop Limit of a
//! received packet) and hands them in; [`reflect`] turns one received test
//! packet into the reply a Session-Reflector sends back.
//!
//! Field offsets in bytes, every field big-endian. Each byte not listed is
//! MBZ ("must be zero"); the two modes differ only in where fields sit and
//! in the trailing HMAC.
//!
//! | field (size) | sender, unauth. | sender, auth. | reflector, unauth. | reflector, auth. |
//! |---|---|---|---|---|
//! | Sequence Number (4) | 0 | 0 | 0 | 0 |
//! | Timestamp (8) | 4 | 16 | 4 | 16 |
//! | Error Estimate (2) | 12 | 24 | 12 | 24 |
//! | Receive Timestamp (8) | | | 16 | 32 |
//! | Session-Sender Sequence Number (4) | | | 24 | 48 |
//! | Session-Sender Timestamp (8) | | | 28 | 64 |
//! | Session-Sender Error Estimate (2) | | | 36 | 72 |
//! | Ses-Sender TTL (1) | | | 40 | 80 |
//! | HMAC (16) | | 96 | | 96 |
//! | base size | 44 | 112 | 44 | 112 |
//!
//! Choices this codec makes, following RFC 8762:
//!
//! - **Length.** A packet may be longer than its base size: the sender
//!   pads it, and the reflector answers with a packet of the same length
//!   ("symmetrical size", RFC 8762 §4.2 and §4.3). Decoding accepts any
//!   length from the base size up to [`MAX_PACKET_LEN`] and reports it in
//!   the packet's `len`; anything shorter is refused
//!   ([`StampError::TooShort`]), so a reply is never longer than its
//!   request. (RFC 8762 §4.6 has a reflector answer a shorter TWAMP-Light
//!   packet with a base-size one; [`reflect`] does not.)
//! - **Padding.** The encoders write it as zeros and the decoders do not
//!   read it; [`reflect`] copies the request's bytes past the base size
//!   into the reply, as RFC 8762 §4.3 asks.
//! - **MBZ.** Zeroed on transmission, ignored on receipt (RFC 8762 asks
//!   exactly that). This also lets packets of the RFC 8972 extensions,
//!   which put an SSID and TLVs where base STAMP has MBZ and padding, be
//!   decoded as base STAMP packets.
//! - **HMAC** (authenticated mode, RFC 8762 §4.4): HMAC-SHA-256 truncated
//!   to its first 16 bytes, computed over the first 96 bytes of the packet
//!   (everything before the HMAC field, six 16-byte blocks); padding after
//!   the HMAC is not covered. It is checked, in constant time, before any
//!   field is read; a mismatch is [`StampError::BadHmac`].
//! - **Timestamps** are carried as 64 raw bits ([`NtpTimestamp`]). Their
//!   format is named by the Z bit of the Error Estimate next to them: NTP
//!   (Z = 0, what [`NtpTimestamp`]'s conversions compute) or truncated
//!   PTPv2 (Z = 1, carried unchanged).

use std::fmt;

pub mod key;
mod timestamp;
pub mod tlv;

pub use timestamp::{ErrorEstimate, NtpTimestamp, TimestampFormat, NTP_UNIX_OFFSET_SECS};

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The shortest test packet a TWAMP-Light session-sender sends (RFC 5357
/// §4.1.2, Appendix I): Sequence Number, Timestamp and Error Estimate,
/// with no padding. Unauthenticated only.
pub const TWAMP_LIGHT_SENDER_MIN: usize = 14;
/// The shortest answer a TWAMP-Light session-reflector sends (RFC 5357
/// §4.2.1): the fields through the Sender TTL at byte 40, no padding.
pub const TWAMP_LIGHT_REFLECTOR_MIN: usize = 41;

/// Base size of every packet in unauthenticated mode.
pub const UNAUTH_LEN: usize = 44;
/// Base size of every packet in authenticated mode.
pub const AUTH_LEN: usize = 112;
/// Length of the (truncated) HMAC in authenticated mode.
pub const HMAC_LEN: usize = 16;
/// Offset of the HMAC in authenticated mode; the HMAC covers the bytes
/// before it.
pub const HMAC_OFFSET: usize = AUTH_LEN - HMAC_LEN;
/// Longest packet this codec reads or writes: the largest UDP payload
/// (65,535 bytes less the 8-byte UDP header, as over IPv6 without
/// jumbograms).
pub const MAX_PACKET_LEN: usize = 65_527;

/// Bytes that are not a STAMP packet this codec can read or write.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StampError {
    #[error("STAMP packet of {len} bytes is shorter than the {min}-byte minimum for its mode")]
    TooShort { len: usize, min: usize },
    #[error("STAMP packet of {len} bytes is longer than the {max}-byte maximum")]
    TooLong { len: usize, max: usize },
    #[error("STAMP packet HMAC does not match: the packet was altered or the key differs")]
    BadHmac,
    #[error("buffer of {len} bytes cannot hold a {needed}-byte STAMP packet")]
    BufferTooSmall { len: usize, needed: usize },
    #[error("an HMAC key of {len} bytes is not usable (it must not be empty)")]
    InvalidKey { len: usize },
}

/// The key of authenticated mode. Its bytes never appear in `Debug`
/// output.
#[derive(Clone)]
pub struct HmacKey(Hmac<Sha256>);

impl HmacKey {
    /// A key of any non-zero length (RFC 8762 leaves key size and
    /// distribution to the operator; RFC 4868 recommends 32 bytes for
    /// HMAC-SHA-256).
    pub fn new(key: &[u8]) -> Result<Self, StampError> {
        let invalid = StampError::InvalidKey { len: key.len() };
        if key.is_empty() {
            return Err(invalid);
        }
        Hmac::<Sha256>::new_from_slice(key)
            .map(Self)
            .map_err(|_| invalid)
    }

    /// The first 16 bytes of HMAC-SHA-256 over `covered`.
    fn tag(&self, covered: &[u8]) -> [u8; HMAC_LEN] {
        let mut mac = self.0.clone();
        mac.update(covered);
        let full = mac.finalize().into_bytes();
        let mut tag = [0u8; HMAC_LEN];
        tag.copy_from_slice(&full[..HMAC_LEN]);
        tag
    }

    /// Checks `tag` against the HMAC of `covered` in constant time.
    fn verify(&self, covered: &[u8], tag: &[u8]) -> Result<(), StampError> {
        let mut mac = self.0.clone();
        mac.update(covered);
        mac.verify_truncated_left(tag)
            .map_err(|_| StampError::BadHmac)
    }
}

impl fmt::Debug for HmacKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HmacKey(..)")
    }
}

/// The mode of a STAMP session, agreed out of band by both ends.
#[derive(Debug, Clone)]
pub enum Mode {
    /// No integrity protection; packets are at least 44 bytes.
    Unauthenticated,
    /// Each packet carries an HMAC under this key; packets are at least
    /// 112 bytes.
    Authenticated(HmacKey),
}

impl Mode {
    /// The base size of a packet in this mode, the same for both
    /// directions: 44 or 112 bytes.
    pub fn base_len(&self) -> usize {
        match self {
            Mode::Unauthenticated => UNAUTH_LEN,
            Mode::Authenticated(_) => AUTH_LEN,
        }
    }

    fn is_authenticated(&self) -> bool {
        matches!(self, Mode::Authenticated(_))
    }

    /// Checks that `len` is a packet length this mode can carry.
    fn check_len(&self, len: usize) -> Result<(), StampError> {
        let min = self.base_len();
        if len < min {
            Err(StampError::TooShort { len, min })
        } else if len > MAX_PACKET_LEN {
            Err(StampError::TooLong {
                len,
                max: MAX_PACKET_LEN,
            })
        } else {
            Ok(())
        }
    }

    /// Checks the length and, in authenticated mode, the HMAC of a
    /// received packet.
    fn open(&self, packet: &[u8]) -> Result<(), StampError> {
        self.check_len(packet.len())?;
        self.verify(packet)
    }

    /// The HMAC of a received packet at least the base size long.
    fn verify(&self, packet: &[u8]) -> Result<(), StampError> {
        match self {
            Mode::Unauthenticated => Ok(()),
            Mode::Authenticated(key) => {
                key.verify(&packet[..HMAC_OFFSET], &packet[HMAC_OFFSET..AUTH_LEN])
            }
        }
    }

    /// Zeroes the first `len` bytes of `buf` (all MBZ and padding) and
    /// returns them, ready for the fields to be written.
    fn prepare<'a>(&self, buf: &'a mut [u8], len: usize) -> Result<&'a mut [u8], StampError> {
        self.check_len(len)?;
        let have = buf.len();
        let packet = buf.get_mut(..len).ok_or(StampError::BufferTooSmall {
            len: have,
            needed: len,
        })?;
        packet.fill(0);
        Ok(packet)
    }

    /// Writes the HMAC of a packet whose fields are in place.
    fn seal(&self, packet: &mut [u8]) {
        if let Mode::Authenticated(key) = self {
            let tag = key.tag(&packet[..HMAC_OFFSET]);
            packet[HMAC_OFFSET..AUTH_LEN].copy_from_slice(&tag);
        }
    }
}

/// Where the fields of a Session-Sender test packet sit (the Sequence
/// Number is always at 0).
struct SenderLayout {
    timestamp: usize,
    error_estimate: usize,
}

impl SenderLayout {
    /// RFC 8762 §4.2.1 and §4.2.2.
    fn of(mode: &Mode) -> Self {
        if mode.is_authenticated() {
            Self {
                timestamp: 16,
                error_estimate: 24,
            }
        } else {
            Self {
                timestamp: 4,
                error_estimate: 12,
            }
        }
    }
}

/// Where the fields of a Session-Reflector test packet sit (the Sequence
/// Number is always at 0).
struct ReflectorLayout {
    timestamp: usize,
    error_estimate: usize,
    receive_timestamp: usize,
    sender_seq: usize,
    sender_timestamp: usize,
    sender_error_estimate: usize,
    sender_ttl: usize,
}

impl ReflectorLayout {
    /// RFC 8762 §4.3.1 and §4.3.2.
    fn of(mode: &Mode) -> Self {
        if mode.is_authenticated() {
            Self {
                timestamp: 16,
                error_estimate: 24,
                receive_timestamp: 32,
                sender_seq: 48,
                sender_timestamp: 64,
                sender_error_estimate: 72,
                sender_ttl: 80,
            }
        } else {
            Self {
                timestamp: 4,
                error_estimate: 12,
                receive_timestamp: 16,
                sender_seq: 24,
                sender_timestamp: 28,
                sender_error_estimate: 36,
                sender_ttl: 40,
            }
        }
    }
}

/// A Session-Sender test packet (RFC 8762 §4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SenderPacket {
    /// Sequence Number: 0 for the first packet of a session, then one more
    /// for each packet sent.
    pub seq: u32,
    /// Timestamp: when the packet was sent.
    pub timestamp: NtpTimestamp,
    /// Error Estimate of `timestamp`.
    pub error_estimate: ErrorEstimate,
    /// Length on the wire in bytes: the mode's base size plus padding.
    pub len: usize,
}

impl SenderPacket {
    /// Reads a test packet: at least the mode's base size, and in
    /// authenticated mode with a matching HMAC. MBZ and padding bytes are
    /// ignored.
    pub fn decode(buf: &[u8], mode: &Mode) -> Result<Self, StampError> {
        mode.open(buf)?;
        let at = SenderLayout::of(mode);
        Ok(Self {
            seq: read_u32(buf, 0),
            timestamp: read_timestamp(buf, at.timestamp),
            error_estimate: read_error_estimate(buf, at.error_estimate),
            len: buf.len(),
        })
    }

    /// Writes the packet into the first `self.len` bytes of `buf` (MBZ and
    /// padding zeroed, the HMAC computed in authenticated mode) and
    /// returns that length; bytes of `buf` past it are left as they are.
    pub fn encode_into(&self, mode: &Mode, buf: &mut [u8]) -> Result<usize, StampError> {
        let packet = mode.prepare(buf, self.len)?;
        let at = SenderLayout::of(mode);
        write_u32(packet, 0, self.seq);
        write_timestamp(packet, at.timestamp, self.timestamp);
        write_error_estimate(packet, at.error_estimate, self.error_estimate);
        mode.seal(packet);
        Ok(self.len)
    }

    /// The packet as a new buffer of `self.len` bytes.
    pub fn encode(&self, mode: &Mode) -> Result<Vec<u8>, StampError> {
        mode.check_len(self.len)?;
        let mut buf = vec![0u8; self.len];
        self.encode_into(mode, &mut buf)?;
        Ok(buf)
    }

    /// Reads an unauthenticated test packet of a TWAMP-Light
    /// session-sender (RFC 5357 Appendix I), which may be as short as
    /// [`TWAMP_LIGHT_SENDER_MIN`] bytes: its first 14 bytes are STAMP's.
    /// Its `len` is at least the base size (44): what the reflector
    /// answers with, the missing bytes read as zeros (RFC 8762 §4.6).
    pub fn decode_twamp_light(buf: &[u8]) -> Result<Self, StampError> {
        if buf.len() >= UNAUTH_LEN {
            return Self::decode(buf, &Mode::Unauthenticated);
        }
        if buf.len() < TWAMP_LIGHT_SENDER_MIN {
            return Err(StampError::TooShort {
                len: buf.len(),
                min: TWAMP_LIGHT_SENDER_MIN,
            });
        }
        let at = SenderLayout::of(&Mode::Unauthenticated);
        Ok(Self {
            seq: read_u32(buf, 0),
            timestamp: read_timestamp(buf, at.timestamp),
            error_estimate: read_error_estimate(buf, at.error_estimate),
            len: UNAUTH_LEN,
        })
    }
}

/// A Session-Reflector test packet, the reply to a [`SenderPacket`]
/// (RFC 8762 §4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReflectorPacket {
    /// Sequence Number of the reflector: its own count (stateful
    /// reflector) or a copy of `sender_seq` (stateless reflector).
    pub seq: u32,
    /// Timestamp: when the reply was sent.
    pub timestamp: NtpTimestamp,
    /// Error Estimate of the reflector's clock, for `timestamp` and
    /// `receive_timestamp`.
    pub error_estimate: ErrorEstimate,
    /// Receive Timestamp: when the test packet arrived.
    pub receive_timestamp: NtpTimestamp,
    /// Session-Sender Sequence Number, copied from the test packet.
    pub sender_seq: u32,
    /// Session-Sender Timestamp, copied from the test packet.
    pub sender_timestamp: NtpTimestamp,
    /// Session-Sender Error Estimate, copied from the test packet.
    pub sender_error_estimate: ErrorEstimate,
    /// Ses-Sender TTL: the TTL (IPv4) or Hop Limit (IPv6) the test packet
    /// arrived with.
    pub sender_ttl: u8,
    /// Length on the wire in bytes: the mode's base size plus padding;
    /// the same as the test packet's.
    pub len: usize,
}

impl ReflectorPacket {
    /// The reply to `request`: its sender fields copied, its length kept.
    /// Timestamps are the reflector's: `receive_ts` when the request
    /// arrived, `transmit_ts` when the reply leaves.
    pub fn reply_to(
        request: &SenderPacket,
        reflector_seq: u32,
        receive_ts: NtpTimestamp,
        transmit_ts: NtpTimestamp,
        ttl: u8,
        error_estimate: ErrorEstimate,
    ) -> Self {
        Self {
            seq: reflector_seq,
            timestamp: transmit_ts,
            error_estimate,
            receive_timestamp: receive_ts,
            sender_seq: request.seq,
            sender_timestamp: request.timestamp,
            sender_error_estimate: request.error_estimate,
            sender_ttl: ttl,
            len: request.len,
        }
    }

    /// Reads a reflector packet: at least the mode's base size, and in
    /// authenticated mode with a matching HMAC. MBZ and padding bytes are
    /// ignored. Unauthenticated, a TWAMP-Light reflector's answer of 41
    /// to 43 bytes (RFC 5357 §4.2.1, no padding) is read too: its fields
    /// sit where STAMP's do.
    pub fn decode(buf: &[u8], mode: &Mode) -> Result<Self, StampError> {
        match mode {
            Mode::Unauthenticated
                if (TWAMP_LIGHT_REFLECTOR_MIN..UNAUTH_LEN).contains(&buf.len()) =>
            {
                mode.verify(buf)?;
            }
            _ => mode.open(buf)?,
        }
        let at = ReflectorLayout::of(mode);
        Ok(Self {
            seq: read_u32(buf, 0),
            timestamp: read_timestamp(buf, at.timestamp),
            error_estimate: read_error_estimate(buf, at.error_estimate),
            receive_timestamp: read_timestamp(buf, at.receive_timestamp),
            sender_seq: read_u32(buf, at.sender_seq),
            sender_timestamp: read_timestamp(buf, at.sender_timestamp),
            sender_error_estimate: read_error_estimate(buf, at.sender_error_estimate),
            sender_ttl: buf[at.sender_ttl],
            len: buf.len(),
        })
    }

    /// Writes the packet into the first `self.len` bytes of `buf` (MBZ and
    /// padding zeroed, the HMAC computed in authenticated mode) and
    /// returns that length; bytes of `buf` past it are left as they are.
    pub fn encode_into(&self, mode: &Mode, buf: &mut [u8]) -> Result<usize, StampError> {
        let packet = mode.prepare(buf, self.len)?;
        let at = ReflectorLayout::of(mode);
        write_u32(packet, 0, self.seq);
        write_timestamp(packet, at.timestamp, self.timestamp);
        write_error_estimate(packet, at.error_estimate, self.error_estimate);
        write_timestamp(packet, at.receive_timestamp, self.receive_timestamp);
        write_u32(packet, at.sender_seq, self.sender_seq);
        write_timestamp(packet, at.sender_timestamp, self.sender_timestamp);
        write_error_estimate(packet, at.sender_error_estimate, self.sender_error_estimate);
        packet[at.sender_ttl] = self.sender_ttl;
        mode.seal(packet);
        Ok(self.len)
    }

    /// The packet as a new buffer of `self.len` bytes.
    pub fn encode(&self, mode: &Mode) -> Result<Vec<u8>, StampError> {
        mode.check_len(self.len)?;
        let mut buf = vec![0u8; self.len];
        self.encode_into(mode, &mut buf)?;
        Ok(buf)
    }
}

/// A Session-Reflector's answer to one received test packet: decodes
/// `request` (checking its HMAC first in authenticated mode) and encodes
/// the reply, of exactly the request's length, with its own HMAC. The
/// request's bytes past the base size (padding, or RFC 8972 TLVs) are
/// copied into the reply (RFC 8762 §4.3); in authenticated mode they lie
/// after the HMAC and are covered by neither.
///
/// A request shorter than the mode's base size is refused, not answered.
/// `reflector_seq` is the reflector's own count (stateful reflector); a
/// stateless reflector copies the request's number instead, which takes
/// [`SenderPacket::decode`] then [`ReflectorPacket::reply_to`].
pub fn reflect(
    request: &[u8],
    mode: &Mode,
    reflector_seq: u32,
    receive_ts: NtpTimestamp,
    transmit_ts: NtpTimestamp,
    ttl: u8,
    error_estimate: ErrorEstimate,
) -> Result<Vec<u8>, StampError> {
    let packet = SenderPacket::decode(request, mode)?;
    let mut reply = ReflectorPacket::reply_to(
        &packet,
        reflector_seq,
        receive_ts,
        transmit_ts,
        ttl,
        error_estimate,
    )
    .encode(mode)?;
    // Both are `packet.len` bytes long; the part past the base size is
    // outside the HMAC, so copying it after sealing is right.
    let base = mode.base_len();
    for (to, from) in reply.iter_mut().zip(request).skip(base) {
        *to = *from;
    }
    Ok(reply)
}

// Field access. Callers have checked the length against the mode's base
// size, and every offset of the layouts lies within it.

fn read_array<const N: usize>(buf: &[u8], at: usize) -> [u8; N] {
    let mut field = [0u8; N];
    field.copy_from_slice(&buf[at..at + N]);
    field
}

fn read_u32(buf: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(read_array(buf, at))
}

fn read_timestamp(buf: &[u8], at: usize) -> NtpTimestamp {
    NtpTimestamp(u64::from_be_bytes(read_array(buf, at)))
}

fn read_error_estimate(buf: &[u8], at: usize) -> ErrorEstimate {
    ErrorEstimate::from_bits(u16::from_be_bytes(read_array(buf, at)))
}

fn write_u32(buf: &mut [u8], at: usize, value: u32) {
    buf[at..at + 4].copy_from_slice(&value.to_be_bytes());
}

fn write_timestamp(buf: &mut [u8], at: usize, value: NtpTimestamp) {
    buf[at..at + 8].copy_from_slice(&value.0.to_be_bytes());
}

fn write_error_estimate(buf: &mut [u8], at: usize, value: ErrorEstimate) {
    buf[at..at + 2].copy_from_slice(&value.to_bits().to_be_bytes());
}

#[cfg(test)]
mod tests;
