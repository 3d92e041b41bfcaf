//! The harness the fuzz targets in `fuzz/` call, kept here so that the
//! property tests run the very same code on every `cargo test`.

use crate::stamp::{
    self, ErrorEstimate, HmacKey, Mode, NtpTimestamp, ReflectorPacket, SenderPacket, StampError,
};
use crate::{
    decode_message, ClientMessage, FrameDecoder, Preamble, ServerMessage, HANDSHAKE_FRAME_MAX,
    PREAMBLE_LEN,
};

/// Feeds arbitrary bytes to the UDP test-packet and hello decoders.
pub fn udp_datagram(data: &[u8]) {
    if let Some(p) = crate::TestPacket::decode(data) {
        let mut buf = vec![0u8; crate::TEST_HEADER_LEN];
        let _ = p.encode(&mut buf);
    }
    let _ = crate::UdpHello::decode(data);
}

/// Feeds arbitrary bytes through everything a server does with the first
/// bytes of a connection: preamble, frames (in the pieces they arrive
/// in), and both message types. Must never panic.
pub fn control_stream(data: &[u8]) {
    let Some((head, rest)) = data.split_first_chunk::<PREAMBLE_LEN>() else {
        return;
    };
    let _ = Preamble::decode(head);
    // The first byte of the rest picks how the stream is cut into reads.
    let cut = usize::from(rest.first().copied().unwrap_or(1)).max(1);
    let mut decoder = FrameDecoder::new(HANDSHAKE_FRAME_MAX);
    for piece in rest.chunks(cut) {
        if decoder.push(piece).is_err() {
            return;
        }
        while let Ok(Some(frame)) = decoder.next_frame() {
            let _ = decode_message::<ClientMessage>(&frame);
            let _ = decode_message::<ServerMessage>(&frame);
        }
    }
}

/// The key of the authenticated STAMP mode in [`stamp_packet`].
const STAMP_FUZZ_KEY: &[u8] = b"sonde fuzz key";

/// Feeds arbitrary bytes to the STAMP decoders as a Session-Sender and as a
/// Session-Reflector packet, unauthenticated and authenticated (under a
/// fixed key), and to the reflector. Whatever decodes must encode to as
/// many bytes that decode to the same packet, and a reply must be exactly
/// as long as its request and carry its padding. Panics only on a codec
/// bug.
pub fn stamp_packet(data: &[u8]) {
    let Ok(key) = HmacKey::new(STAMP_FUZZ_KEY) else {
        return;
    };
    for mode in [Mode::Unauthenticated, Mode::Authenticated(key.clone())] {
        stamp_sender_round_trip(data, &mode);
        stamp_reflector_round_trip(data, &mode);
        stamp_reflect(data, &mode);
    }
    // Random bytes almost never carry a valid HMAC, so the fields read in
    // unauthenticated mode are also sent under the key.
    if let Ok(packet) = SenderPacket::decode(data, &Mode::Unauthenticated) {
        stamp_authenticated(packet, data, &Mode::Authenticated(key));
    }
}

fn stamp_sender_round_trip(data: &[u8], mode: &Mode) {
    if let Ok(packet) = SenderPacket::decode(data, mode) {
        assert_eq!(packet.len, data.len());
        let again = packet.encode(mode);
        assert_eq!(again.as_ref().map(Vec::len), Ok(data.len()));
        assert_eq!(
            again.and_then(|b| SenderPacket::decode(&b, mode)),
            Ok(packet)
        );
    }
}

fn stamp_reflector_round_trip(data: &[u8], mode: &Mode) {
    if let Ok(packet) = ReflectorPacket::decode(data, mode) {
        assert_eq!(packet.len, data.len());
        let again = packet.encode(mode);
        assert_eq!(again.as_ref().map(Vec::len), Ok(data.len()));
        assert_eq!(
            again.and_then(|b| ReflectorPacket::decode(&b, mode)),
            Ok(packet)
        );
    }
}

fn stamp_reflect(data: &[u8], mode: &Mode) {
    let error_estimate = ErrorEstimate::from_bits(0x8001);
    let (receive, transmit) = (NtpTimestamp(1), NtpTimestamp(2));
    let Ok(reply) = stamp::reflect(data, mode, 7, receive, transmit, 64, error_estimate) else {
        return;
    };
    assert_eq!(reply.len(), data.len());
    let base = mode.base_len();
    assert_eq!(reply.get(base..), data.get(base..));
    let request = SenderPacket::decode(data, mode);
    let answer = ReflectorPacket::decode(&reply, mode);
    assert_eq!(
        answer.map(|a| (a.sender_seq, a.sender_timestamp, a.sender_error_estimate)),
        request.map(|r| (r.seq, r.timestamp, r.error_estimate))
    );
}

/// Sends `packet` signed, checks it comes back, then flips one bit the HMAC
/// covers (picked by the input) and checks the packet is refused.
fn stamp_authenticated(packet: SenderPacket, data: &[u8], mode: &Mode) {
    let signed = SenderPacket {
        len: packet.len.max(stamp::AUTH_LEN),
        ..packet
    };
    let Ok(mut bytes) = signed.encode(mode) else {
        panic!("a valid sender packet did not encode in authenticated mode");
    };
    assert_eq!(SenderPacket::decode(&bytes, mode), Ok(signed));
    let pick = data
        .iter()
        .fold(0usize, |acc, &b| acc.wrapping_mul(31) ^ usize::from(b));
    let bit = pick % (stamp::HMAC_OFFSET * 8);
    if let Some(byte) = bytes.get_mut(bit / 8) {
        *byte ^= 1 << (bit % 8);
    }
    assert_eq!(SenderPacket::decode(&bytes, mode), Err(StampError::BadHmac));
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn the_fuzz_harness_survives_random_input(data in proptest::collection::vec(any::<u8>(), 0..4096)) {
            control_stream(&data);
        }

        #[test]
        fn the_fuzz_harness_survives_near_valid_input(
            payload in proptest::collection::vec(any::<u8>(), 0..512),
            len in any::<u32>(),
        ) {
            let mut data = crate::Preamble::CURRENT.encode().to_vec();
            data.push(7);
            data.extend_from_slice(&len.to_be_bytes());
            data.extend_from_slice(&payload);
            control_stream(&data);
        }

        #[test]
        fn the_stamp_harness_survives_random_input(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            stamp_packet(&data);
        }

        #[test]
        fn the_stamp_harness_survives_near_valid_input(
            seq in any::<u32>(),
            timestamp in any::<u64>(),
            bits in any::<u16>(),
            padding in 0usize..200,
            authenticated in any::<bool>(),
        ) {
            let mode = if authenticated {
                Mode::Authenticated(HmacKey::new(STAMP_FUZZ_KEY).unwrap())
            } else {
                Mode::Unauthenticated
            };
            let packet = SenderPacket {
                seq,
                timestamp: NtpTimestamp(timestamp),
                error_estimate: ErrorEstimate::from_bits(bits),
                len: mode.base_len() + padding,
            };
            stamp_packet(&packet.encode(&mode).unwrap());
        }
    }
}
