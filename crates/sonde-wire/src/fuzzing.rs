//! The harness the fuzz targets in `fuzz/` call, kept here so that the
//! property tests run the very same code on every `cargo test`.

use crate::iperf3::{
    self, ControlDecoder, Cookie, CounterWidth, Inbound, JsonFrameReader, Params, Reader, Results,
    ServerError, State, UdpHeader,
};
use crate::stamp::{
    self, ErrorEstimate, HmacKey, Mode, NtpTimestamp, ReflectorPacket, SenderPacket, StampError,
};
use crate::{
    decode_message, encode_message, ClientMessage, FrameDecoder, Preamble, ServerMessage,
    HANDSHAKE_FRAME_MAX, PREAMBLE_LEN,
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

/// The secret [`auth_exchange`] proves with.
const AUTH_FUZZ_SECRET: &[u8] = b"sonde fuzz token secret";

/// Feeds arbitrary bytes through the server's side of the token
/// exchange (docs/protocol.md, "Authentication"): frames decoded as
/// client messages; a hello's name and nonce proved over, a proof
/// checked against the last hello (or none). Must never panic, and a
/// proof from anything but the secret must never verify.
pub fn auth_exchange(data: &[u8]) {
    let server = crate::auth::HexBytes([0x5a; crate::auth::NONCE_LEN]);
    let mut hello: Option<(String, crate::auth::Nonce)> = None;
    let mut decoder = FrameDecoder::new(HANDSHAKE_FRAME_MAX);
    if decoder.push(data).is_err() {
        return;
    }
    while let Ok(Some(frame)) = decoder.next_frame() {
        match decode_message::<ClientMessage>(&frame) {
            Ok(ClientMessage::AuthHello {
                token_name,
                client_nonce,
            }) => {
                let _ = crate::auth::valid_token_name(&token_name);
                let answer = crate::auth::server_proof(
                    AUTH_FUZZ_SECRET,
                    &server,
                    &client_nonce,
                    &token_name,
                );
                let _ = encode_message(&ServerMessage::Authenticated {
                    class: token_name.clone(),
                    proof: answer,
                });
                hello = Some((token_name, client_nonce));
            }
            Ok(ClientMessage::AuthProof { mac }) => {
                if let Some((name, client)) = &hello {
                    let good = crate::auth::client_proof(AUTH_FUZZ_SECRET, &server, client, name);
                    assert_eq!(
                        crate::auth::verify_client(AUTH_FUZZ_SECRET, &server, client, name, &mac),
                        mac == good
                    );
                }
            }
            _ => {}
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
        // A TWAMP-Light reflector's short answer (41 to 43 bytes) is read,
        // never written: sonde's reflector answers with the base size.
        if packet.len < mode.base_len() {
            assert!(packet.len >= crate::stamp::TWAMP_LIGHT_REFLECTOR_MIN);
            return;
        }
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

/// Cap on iperf3 JSON frames in [`iperf3_control`]: small, so that the
/// fuzzer also reaches the refusals.
const IPERF3_FUZZ_CAP: usize = 4096;

/// Feeds arbitrary bytes to the iperf3 codecs. The first byte picks the
/// side whose control stream the rest is (even: the server reading the
/// client, odd: the client reading the server) and, from its other bits,
/// the size of the reads; the rest goes through the control decoder:
/// cookie, state bytes, length-prefixed JSON under a cap, error codes.
/// Every item that decodes must encode back to an equal item. The whole
/// input is also tried as a UDP datagram (both header layouts, connect
/// request and reply), a cookie, server error codes, and parameters and
/// results JSON. Panics only on a codec bug.
pub fn iperf3_control(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let reader = if mode & 1 == 0 {
        Reader::Server
    } else {
        Reader::Client
    };
    let cut = usize::from(mode >> 1).max(1);
    let mut decoder = ControlDecoder::new(reader, IPERF3_FUZZ_CAP, IPERF3_FUZZ_CAP);
    'feed: for piece in rest.chunks(cut) {
        let mut piece = piece;
        while !piece.is_empty() {
            let Ok((used, item)) = decoder.feed(piece) else {
                break 'feed;
            };
            assert!(
                used > 0 && used <= piece.len(),
                "the decoder took {used} bytes"
            );
            piece = piece.get(used..).unwrap_or_default();
            if let Some(item) = item {
                iperf3_round_trip(&item);
            }
        }
    }
    if let Ok(Some(item)) = decoder.finish() {
        iperf3_round_trip(&item);
    }
    iperf3_whole_input(data);
    iperf3_whole_input(rest);
}

fn iperf3_round_trip(item: &Inbound) {
    match item {
        Inbound::Cookie(cookie) => assert_eq!(Cookie::parse(cookie.as_bytes()), Ok(*cookie)),
        Inbound::State(state) => assert_eq!(State::from_byte(state.to_byte()), Ok(*state)),
        Inbound::Params(params) => assert_eq!(
            params.to_json().and_then(|j| Params::from_json(&j)),
            Ok(params.clone())
        ),
        Inbound::Results(results) => iperf3_results_round_trip(results),
        Inbound::ServerError(report) => {
            let codes = report.encode();
            let sent = if report.errno.is_some() { 9 } else { 5 };
            assert_eq!(codes[0], State::ServerError.to_byte());
            assert_eq!(ServerError::decode(&codes[1..sent]), Ok(*report));
        }
    }
}

/// Results that decoded must encode (their numbers are finite, their
/// omitted counts paired) and decode again to the same values, floats
/// within rounding: serde_json's default float parsing may differ from
/// the printed value in the last bit.
fn iperf3_results_round_trip(results: &Results) {
    let json = results.to_json();
    assert!(json.is_ok(), "decoded results did not encode: {json:?}");
    let again = json.and_then(|j| Results::from_json(&j));
    let Ok(again) = again else {
        panic!("encoded results did not decode: {again:?}");
    };
    let floats = |r: &Results| {
        let mut v = vec![r.cpu_util_total, r.cpu_util_user, r.cpu_util_system];
        for s in &r.streams {
            v.extend([
                s.jitter,
                s.start_time.unwrap_or(0.0),
                s.end_time.unwrap_or(0.0),
            ]);
        }
        v
    };
    let (a, b) = (floats(results), floats(&again));
    assert!(
        a.iter().zip(&b).all(|(x, y)| close(*x, *y)),
        "{a:?} != {b:?}"
    );
    let without_floats = |r: &Results| {
        let mut r = r.clone();
        (r.cpu_util_total, r.cpu_util_user, r.cpu_util_system) = (0.0, 0.0, 0.0);
        for s in &mut r.streams {
            s.jitter = 0.0;
            s.start_time = s.start_time.map(|_| 0.0);
            s.end_time = s.end_time.map(|_| 0.0);
        }
        r.server_output_json = None;
        r
    };
    assert_eq!(without_floats(results), without_floats(&again));
    assert_eq!(
        results.server_output_json.is_some(),
        again.server_output_json.is_some()
    );
}

fn close(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= 4.0 * f64::EPSILON * a.abs().max(b.abs())
}

/// Tries `data` whole as each fixed-size or self-contained iperf3 item.
fn iperf3_whole_input(data: &[u8]) {
    for width in [CounterWidth::Bits32, CounterWidth::Bits64] {
        if let Ok(header) = UdpHeader::decode(data, width) {
            let mut again = data.to_vec();
            assert!(header.encode(width, &mut again).is_ok());
            assert_eq!(again, data);
        }
    }
    if let Some(flavor) = iperf3::classify_connect_request(data) {
        assert_eq!(flavor.request(), data);
    }
    if let Some(flavor) = iperf3::classify_connect_reply(data) {
        assert_eq!(flavor.reply(), data);
    }
    if let Ok(cookie) = Cookie::parse(data) {
        assert_eq!(cookie.as_bytes(), data);
    }
    if let Ok(report) = ServerError::decode(data) {
        iperf3_round_trip(&Inbound::ServerError(report));
    }
    if let Ok((used, Some(payload))) = JsonFrameReader::new(IPERF3_FUZZ_CAP).feed(data) {
        assert_eq!(
            iperf3::encode_json_frame(&payload).ok().as_deref(),
            data.get(..used)
        );
    }
    if let Ok(params) = Params::from_json(data) {
        iperf3_round_trip(&Inbound::Params(params));
    }
    if let Ok(results) = Results::from_json(data) {
        iperf3_results_round_trip(&results);
    }
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
        fn the_iperf3_harness_survives_random_input(data in proptest::collection::vec(any::<u8>(), 0..2048)) {
            iperf3_control(&data);
        }

        #[test]
        fn the_iperf3_harness_survives_near_valid_input(
            server_side in any::<bool>(),
            cut in 0u8..64,
            flip in any::<usize>(),
            bit in 0u8..8,
            time in any::<u32>(),
            bytes in any::<u64>(),
        ) {
            let mut data = vec![(cut << 1) | u8::from(!server_side)];
            let results = Results {
                cpu_util_total: 1.5,
                cpu_util_user: 0.5,
                cpu_util_system: 1.0,
                sender_has_retransmits: -1,
                congestion_used: None,
                server_output_json: None,
                server_output_text: None,
                streams: vec![iperf3::StreamResult {
                    id: 1,
                    bytes,
                    retransmits: -1,
                    jitter: 0.25,
                    errors: 0,
                    omitted_errors: Some(0),
                    packets: 0,
                    omitted_packets: Some(0),
                    start_time: Some(0.0),
                    end_time: Some(f64::from(time)),
                }],
            };
            if server_side {
                let params = Params::client(iperf3::Protocol::Udp, iperf3::Direction::Reverse, time, 2);
                data.extend_from_slice(Cookie::from_random(&[7; 36]).as_bytes());
                data.extend(params.to_frame().unwrap());
                data.push(State::TestEnd.to_byte());
                data.extend(results.to_frame().unwrap());
                data.push(State::IperfDone.to_byte());
            } else {
                data.extend([9, 10, 1, 2, 13]);
                data.extend(results.to_frame().unwrap());
                data.extend([14, 0xfe, 0, 0, 0, 0x79, 0, 0, 0, 0]);
            }
            iperf3_control(&data);
            let at = 1 + flip % (data.len() - 1);
            data[at] ^= 1 << bit;
            iperf3_control(&data);
        }

        #[test]
        fn the_auth_harness_survives_random_input(data in proptest::collection::vec(any::<u8>(), 0..400)) {
            auth_exchange(&data);
        }

        #[test]
        fn the_auth_harness_survives_near_valid_input(
            name in "[a-z]{0,70}",
            nonce in any::<[u8; 32]>(),
            mac in any::<[u8; 32]>(),
            flip in any::<usize>(),
            bit in 0u8..8,
        ) {
            let mut data = Vec::new();
            data.extend(encode_message(&ClientMessage::AuthHello {
                token_name: name,
                client_nonce: crate::auth::HexBytes(nonce),
            }).unwrap());
            data.extend(encode_message(&ClientMessage::AuthProof {
                mac: crate::auth::HexBytes(mac),
            }).unwrap());
            auth_exchange(&data);
            let at = flip % data.len();
            data[at] ^= 1 << bit;
            auth_exchange(&data);
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
