use super::*;
use proptest::prelude::*;

const KEY: &[u8] = b"sonde STAMP test key of 32 bytes";

fn authenticated() -> Mode {
    Mode::Authenticated(HmacKey::new(KEY).unwrap())
}

fn both_modes() -> [Mode; 2] {
    [Mode::Unauthenticated, authenticated()]
}

/// HMAC-SHA-256 of `covered` under [`KEY`], first 16 bytes, computed here
/// without the codec.
fn expected_hmac(covered: &[u8]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(KEY).unwrap();
    mac.update(covered);
    mac.finalize().into_bytes()[..16].to_vec()
}

/// Rewrites the HMAC of an authenticated packet after a test edited it.
fn reseal(packet: &mut [u8]) {
    let tag = expected_hmac(&packet[..HMAC_OFFSET]);
    packet[HMAC_OFFSET..AUTH_LEN].copy_from_slice(&tag);
}

// Field values with a distinct byte pattern each, so a field at the wrong
// offset shows in a byte comparison.
const SEQ: u32 = 0xA1A2_A3A4;
const TS: NtpTimestamp = NtpTimestamp(0xB1B2_B3B4_B5B6_B7B8);
const EE_BITS: u16 = 0xC1C2;
const RECV_TS: NtpTimestamp = NtpTimestamp(0xD1D2_D3D4_D5D6_D7D8);
const SENDER_SEQ: u32 = 0xE1E2_E3E4;
const SENDER_TS: NtpTimestamp = NtpTimestamp(0xF1F2_F3F4_F5F6_F7F8);
const SENDER_EE_BITS: u16 = 0x9192;
const TTL: u8 = 0x77;

fn sample_sender(len: usize) -> SenderPacket {
    SenderPacket {
        seq: SEQ,
        timestamp: TS,
        error_estimate: ErrorEstimate::from_bits(EE_BITS),
        len,
    }
}

fn sample_reflector(len: usize) -> ReflectorPacket {
    ReflectorPacket {
        seq: SEQ,
        timestamp: TS,
        error_estimate: ErrorEstimate::from_bits(EE_BITS),
        receive_timestamp: RECV_TS,
        sender_seq: SENDER_SEQ,
        sender_timestamp: SENDER_TS,
        sender_error_estimate: ErrorEstimate::from_bits(SENDER_EE_BITS),
        sender_ttl: TTL,
        len,
    }
}

/// A zeroed packet with `bytes` written at `at`.
fn put(packet: &mut [u8], at: usize, bytes: &[u8]) {
    packet[at..at + bytes.len()].copy_from_slice(bytes);
}

// ---- Byte layouts ----

#[test]
fn sender_unauthenticated_fields_sit_at_rfc_offsets() {
    let bytes = sample_sender(44).encode(&Mode::Unauthenticated).unwrap();
    let mut expected = vec![0u8; 44];
    put(&mut expected, 0, &SEQ.to_be_bytes());
    put(&mut expected, 4, &TS.0.to_be_bytes());
    put(&mut expected, 12, &EE_BITS.to_be_bytes());
    assert_eq!(bytes, expected);
}

#[test]
fn sender_authenticated_fields_sit_at_rfc_offsets() {
    let bytes = sample_sender(112).encode(&authenticated()).unwrap();
    let mut expected = vec![0u8; 112];
    put(&mut expected, 0, &SEQ.to_be_bytes());
    put(&mut expected, 16, &TS.0.to_be_bytes());
    put(&mut expected, 24, &EE_BITS.to_be_bytes());
    let tag = expected_hmac(&expected[..96]);
    put(&mut expected, 96, &tag);
    assert_eq!(bytes, expected);
}

#[test]
fn reflector_unauthenticated_fields_sit_at_rfc_offsets() {
    let bytes = sample_reflector(44).encode(&Mode::Unauthenticated).unwrap();
    let mut expected = vec![0u8; 44];
    put(&mut expected, 0, &SEQ.to_be_bytes());
    put(&mut expected, 4, &TS.0.to_be_bytes());
    put(&mut expected, 12, &EE_BITS.to_be_bytes());
    put(&mut expected, 16, &RECV_TS.0.to_be_bytes());
    put(&mut expected, 24, &SENDER_SEQ.to_be_bytes());
    put(&mut expected, 28, &SENDER_TS.0.to_be_bytes());
    put(&mut expected, 36, &SENDER_EE_BITS.to_be_bytes());
    expected[40] = TTL;
    assert_eq!(bytes, expected);
}

#[test]
fn reflector_authenticated_fields_sit_at_rfc_offsets() {
    let bytes = sample_reflector(112).encode(&authenticated()).unwrap();
    let mut expected = vec![0u8; 112];
    put(&mut expected, 0, &SEQ.to_be_bytes());
    put(&mut expected, 16, &TS.0.to_be_bytes());
    put(&mut expected, 24, &EE_BITS.to_be_bytes());
    put(&mut expected, 32, &RECV_TS.0.to_be_bytes());
    put(&mut expected, 48, &SENDER_SEQ.to_be_bytes());
    put(&mut expected, 64, &SENDER_TS.0.to_be_bytes());
    put(&mut expected, 72, &SENDER_EE_BITS.to_be_bytes());
    expected[80] = TTL;
    let tag = expected_hmac(&expected[..96]);
    put(&mut expected, 96, &tag);
    assert_eq!(bytes, expected);
}

// ---- Lengths, MBZ and padding ----

#[test]
fn packets_shorter_than_the_base_size_are_refused() {
    let unauth = Mode::Unauthenticated;
    let bytes = sample_sender(200).encode(&unauth).unwrap();
    assert_eq!(
        SenderPacket::decode(&bytes[..43], &unauth),
        Err(StampError::TooShort { len: 43, min: 44 })
    );
    // A TWAMP-Light reflector's answer may end at the Sender TTL (41).
    assert_eq!(
        ReflectorPacket::decode(&bytes[..40], &unauth),
        Err(StampError::TooShort { len: 40, min: 44 })
    );
    assert_eq!(
        ReflectorPacket::decode(&bytes[..41], &unauth).unwrap().len,
        41
    );
    assert_eq!(SenderPacket::decode(&bytes[..44], &unauth).unwrap().len, 44);
    assert_eq!(SenderPacket::decode(&bytes, &unauth).unwrap().len, 200);
    assert_eq!(ReflectorPacket::decode(&bytes, &unauth).unwrap().len, 200);

    let auth = authenticated();
    let bytes = sample_sender(112).encode(&auth).unwrap();
    assert_eq!(
        SenderPacket::decode(&bytes[..111], &auth),
        Err(StampError::TooShort { len: 111, min: 112 })
    );
    assert_eq!(SenderPacket::decode(&bytes, &auth).unwrap().len, 112);
    assert_eq!(
        SenderPacket::decode(&[], &auth),
        Err(StampError::TooShort { len: 0, min: 112 })
    );
}

#[test]
fn encoding_checks_the_length_and_the_buffer() {
    for mode in both_modes() {
        let base = mode.base_len();
        assert_eq!(
            sample_sender(base - 1).encode(&mode),
            Err(StampError::TooShort {
                len: base - 1,
                min: base
            })
        );
        assert_eq!(
            sample_reflector(MAX_PACKET_LEN + 1).encode(&mode),
            Err(StampError::TooLong {
                len: MAX_PACKET_LEN + 1,
                max: MAX_PACKET_LEN
            })
        );
        let mut small = vec![0u8; 150];
        assert_eq!(
            sample_reflector(151).encode_into(&mode, &mut small),
            Err(StampError::BufferTooSmall {
                len: 150,
                needed: 151
            })
        );
        let mut large = vec![0xEE; 300];
        assert_eq!(sample_sender(150).encode_into(&mode, &mut large), Ok(150));
        assert!(large[150..].iter().all(|&b| b == 0xEE));
        assert_eq!(
            SenderPacket::decode(&large[..150], &mode),
            Ok(sample_sender(150))
        );
    }
    let huge = vec![0u8; MAX_PACKET_LEN + 1];
    assert_eq!(
        SenderPacket::decode(&huge, &Mode::Unauthenticated),
        Err(StampError::TooLong {
            len: MAX_PACKET_LEN + 1,
            max: MAX_PACKET_LEN
        })
    );
}

#[test]
fn mbz_and_padding_are_ignored_on_receipt_and_zeroed_on_send() {
    let unauth = Mode::Unauthenticated;
    let clean = sample_sender(64).encode(&unauth).unwrap();
    let mut dirty = clean.clone();
    dirty[14..].fill(0xFF);
    let packet = SenderPacket::decode(&dirty, &unauth).unwrap();
    assert_eq!(packet, sample_sender(64));
    assert_eq!(packet.encode(&unauth).unwrap(), clean);

    let clean = sample_reflector(64).encode(&unauth).unwrap();
    let mut dirty = clean.clone();
    dirty[14..16].fill(0xFF);
    dirty[38..40].fill(0xFF);
    dirty[41..].fill(0xFF);
    let packet = ReflectorPacket::decode(&dirty, &unauth).unwrap();
    assert_eq!(packet, sample_reflector(64));
    assert_eq!(packet.encode(&unauth).unwrap(), clean);

    let auth = authenticated();
    let clean = sample_reflector(128).encode(&auth).unwrap();
    let mut dirty = clean.clone();
    for (start, end) in [(4, 16), (26, 32), (40, 48), (52, 64), (74, 80), (81, 96)] {
        dirty[start..end].fill(0xFF);
    }
    dirty[112..].fill(0xFF);
    reseal(&mut dirty);
    let packet = ReflectorPacket::decode(&dirty, &auth).unwrap();
    assert_eq!(packet, sample_reflector(128));
    assert_eq!(packet.encode(&auth).unwrap(), clean);
}

// ---- HMAC ----

#[test]
fn flipping_any_bit_before_the_hmac_or_in_it_is_bad_hmac() {
    let auth = authenticated();
    let sender = sample_sender(128).encode(&auth).unwrap();
    let reflector = sample_reflector(128).encode(&auth).unwrap();
    assert!(SenderPacket::decode(&sender, &auth).is_ok());
    assert!(ReflectorPacket::decode(&reflector, &auth).is_ok());
    for bit in 0..AUTH_LEN * 8 {
        let (byte, mask) = (bit / 8, 1u8 << (bit % 8));
        let mut s = sender.clone();
        s[byte] ^= mask;
        assert_eq!(
            SenderPacket::decode(&s, &auth),
            Err(StampError::BadHmac),
            "bit {bit}"
        );
        let mut r = reflector.clone();
        r[byte] ^= mask;
        assert_eq!(
            ReflectorPacket::decode(&r, &auth),
            Err(StampError::BadHmac),
            "bit {bit}"
        );
    }
    // Padding after the HMAC is outside its coverage (RFC 8762 §4.4).
    let mut padded = sender;
    padded[120] ^= 1;
    assert_eq!(SenderPacket::decode(&padded, &auth), Ok(sample_sender(128)));
}

#[test]
fn another_key_is_bad_hmac() {
    let bytes = sample_sender(112).encode(&authenticated()).unwrap();
    let other = Mode::Authenticated(HmacKey::new(b"another key").unwrap());
    assert_eq!(
        SenderPacket::decode(&bytes, &other),
        Err(StampError::BadHmac)
    );
}

#[test]
fn empty_keys_are_refused_and_keys_stay_out_of_debug_output() {
    assert_eq!(
        HmacKey::new(b"").map(|_| ()),
        Err(StampError::InvalidKey { len: 0 })
    );
    assert_eq!(
        format!("{:?}", authenticated()),
        "Authenticated(HmacKey(..))"
    );
}

// ---- Reflector ----

fn reflector_ee() -> ErrorEstimate {
    ErrorEstimate {
        synchronized: true,
        format: TimestampFormat::Ntp,
        scale: 10,
        multiplier: 3,
    }
}

#[test]
fn a_200_byte_request_gets_a_200_byte_reply_with_its_padding() {
    for mode in both_modes() {
        let base = mode.base_len();
        let mut request = sample_sender(200).encode(&mode).unwrap();
        for (i, byte) in request[base..].iter_mut().enumerate() {
            *byte = i as u8 ^ 0x5A;
        }
        let reply = reflect(&request, &mode, 9, RECV_TS, TS, 61, reflector_ee()).unwrap();
        assert_eq!(reply.len(), 200);
        assert_eq!(reply[base..], request[base..]);
        assert_eq!(
            ReflectorPacket::decode(&reply, &mode),
            Ok(ReflectorPacket {
                seq: 9,
                timestamp: TS,
                error_estimate: reflector_ee(),
                receive_timestamp: RECV_TS,
                sender_seq: SEQ,
                sender_timestamp: TS,
                sender_error_estimate: ErrorEstimate::from_bits(EE_BITS),
                sender_ttl: 61,
                len: 200,
            })
        );
    }
}

#[test]
fn a_base_size_request_gets_a_base_size_reply() {
    for mode in both_modes() {
        let base = mode.base_len();
        let request = sample_sender(base).encode(&mode).unwrap();
        let reply = reflect(&request, &mode, 0, RECV_TS, TS, 64, reflector_ee()).unwrap();
        assert_eq!(reply.len(), base);
    }
}

#[test]
fn short_requests_are_refused_not_answered() {
    let request = sample_sender(44).encode(&Mode::Unauthenticated).unwrap();
    let answer = |req: &[u8], mode: &Mode| reflect(req, mode, 0, RECV_TS, TS, 64, reflector_ee());
    assert_eq!(
        answer(&request[..43], &Mode::Unauthenticated),
        Err(StampError::TooShort { len: 43, min: 44 })
    );
    assert_eq!(
        answer(&[], &Mode::Unauthenticated),
        Err(StampError::TooShort { len: 0, min: 44 })
    );
    assert_eq!(
        answer(&request, &authenticated()),
        Err(StampError::TooShort { len: 44, min: 112 })
    );
}

#[test]
fn an_authenticated_reflector_checks_the_request_and_signs_the_reply() {
    let auth = authenticated();
    let mut request = sample_sender(112).encode(&auth).unwrap();
    let reply = reflect(&request, &auth, 1, RECV_TS, TS, 64, reflector_ee()).unwrap();
    assert_eq!(&reply[96..112], expected_hmac(&reply[..96]).as_slice());
    assert!(ReflectorPacket::decode(&reply, &auth).is_ok());

    request[0] ^= 0x80;
    assert_eq!(
        reflect(&request, &auth, 1, RECV_TS, TS, 64, reflector_ee()),
        Err(StampError::BadHmac)
    );
}

#[test]
fn a_stateless_reflector_echoes_the_sequence_number() {
    let request = SenderPacket::decode(
        &sample_sender(44).encode(&Mode::Unauthenticated).unwrap(),
        &Mode::Unauthenticated,
    )
    .unwrap();
    let reply = ReflectorPacket::reply_to(&request, request.seq, RECV_TS, TS, 64, reflector_ee());
    assert_eq!((reply.seq, reply.sender_seq, reply.len), (SEQ, SEQ, 44));
}

// ---- Properties ----

fn any_error_estimate() -> impl Strategy<Value = ErrorEstimate> {
    any::<u16>().prop_map(ErrorEstimate::from_bits)
}

fn any_mode() -> impl Strategy<Value = Mode> {
    any::<bool>().prop_map(|auth| {
        if auth {
            authenticated()
        } else {
            Mode::Unauthenticated
        }
    })
}

proptest! {
    #[test]
    fn decoding_arbitrary_bytes_never_panics(
        bytes in proptest::collection::vec(any::<u8>(), 0..300),
    ) {
        for mode in both_modes() {
            let _ = SenderPacket::decode(&bytes, &mode);
            let _ = ReflectorPacket::decode(&bytes, &mode);
            if let Ok(reply) = reflect(&bytes, &mode, 1, RECV_TS, TS, 1, reflector_ee()) {
                prop_assert_eq!(reply.len(), bytes.len());
            }
        }
    }

    #[test]
    fn sender_packets_round_trip(
        seq in any::<u32>(),
        timestamp in any::<u64>(),
        error_estimate in any_error_estimate(),
        padding in 0usize..100,
        mode in any_mode(),
    ) {
        let packet = SenderPacket {
            seq,
            timestamp: NtpTimestamp(timestamp),
            error_estimate,
            len: mode.base_len() + padding,
        };
        let bytes = packet.encode(&mode).unwrap();
        prop_assert_eq!(bytes.len(), packet.len);
        prop_assert_eq!(SenderPacket::decode(&bytes, &mode), Ok(packet));
    }

    #[test]
    fn reflector_packets_round_trip(
        (seq, sender_seq) in (any::<u32>(), any::<u32>()),
        (timestamp, receive, sender_timestamp) in (any::<u64>(), any::<u64>(), any::<u64>()),
        (error_estimate, sender_error_estimate) in (any_error_estimate(), any_error_estimate()),
        sender_ttl in any::<u8>(),
        padding in 0usize..100,
        mode in any_mode(),
    ) {
        let packet = ReflectorPacket {
            seq,
            timestamp: NtpTimestamp(timestamp),
            error_estimate,
            receive_timestamp: NtpTimestamp(receive),
            sender_seq,
            sender_timestamp: NtpTimestamp(sender_timestamp),
            sender_error_estimate,
            sender_ttl,
            len: mode.base_len() + padding,
        };
        let bytes = packet.encode(&mode).unwrap();
        prop_assert_eq!(bytes.len(), packet.len);
        prop_assert_eq!(ReflectorPacket::decode(&bytes, &mode), Ok(packet));
    }
}

// ---- TWAMP-Light (RFC 5357 Appendix I) ----

#[test]
fn a_twamp_light_senders_short_packet_is_read_and_answered_at_the_base_size() {
    // RFC 5357 §4.1.2's unauthenticated test packet with no padding:
    // sequence number 7, a timestamp, an error estimate (S=1, scale 0,
    // multiplier 1).
    let mut short = vec![0u8, 0, 0, 7];
    short.extend_from_slice(&0xe000_0000_8000_0000u64.to_be_bytes());
    short.extend_from_slice(&[0x80, 0x01]);
    assert_eq!(short.len(), TWAMP_LIGHT_SENDER_MIN);
    let p = SenderPacket::decode_twamp_light(&short).unwrap();
    assert_eq!(
        (p.seq, p.timestamp, p.error_estimate.to_bits(), p.len),
        (7, NtpTimestamp(0xe000_0000_8000_0000), 0x8001, 44)
    );
    assert!(SenderPacket::decode(&short, &Mode::Unauthenticated).is_err());
    // RFC 6038's recommended 27 octets of padding: 41 bytes.
    short.resize(41, 0);
    assert_eq!(SenderPacket::decode_twamp_light(&short).unwrap().len, 44);
    assert_eq!(
        SenderPacket::decode_twamp_light(&short[..13]),
        Err(StampError::TooShort { len: 13, min: 14 })
    );
    // 44 bytes and more: STAMP's own reading, length kept.
    short.resize(60, 0);
    assert_eq!(SenderPacket::decode_twamp_light(&short).unwrap().len, 60);
}
