use super::*;
use proptest::prelude::*;
use std::time::Duration;

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

// ---- NTP timestamps ----

#[test]
fn the_unix_epoch_is_ntp_second_2208988800() {
    let epoch = NtpTimestamp::from_parts(2_208_988_800, 0);
    assert_eq!(NtpTimestamp::from_unix_nanos(0), epoch);
    assert_eq!(epoch.to_unix_nanos(), 0);
    assert_eq!(
        NtpTimestamp(0).to_unix_nanos(),
        -2_208_988_800 * NANOS_PER_SEC
    );
    // 2000-01-01T00:00:00Z: Unix 946684800, NTP 3155673600.
    let y2k = NtpTimestamp::from_unix_nanos(946_684_800 * NANOS_PER_SEC);
    assert_eq!((y2k.seconds(), y2k.fraction()), (3_155_673_600, 0));
}

#[test]
fn fractions_round_to_the_nearest_unit() {
    let half = NtpTimestamp::from_unix_nanos(500_000_000);
    assert_eq!(
        (half.seconds(), half.fraction()),
        (2_208_988_800, 0x8000_0000)
    );
    // 1 ns = 4.29 units of 2^-32 s; 999_999_999 ns = 2^32 - 4.29 units.
    assert_eq!(NtpTimestamp::from_unix_nanos(1).fraction(), 4);
    assert_eq!(
        NtpTimestamp::from_unix_nanos(999_999_999).fraction(),
        u32::MAX - 3
    );
    // Back to nanoseconds: one unit is 0.23 ns, rounding to 0.
    assert_eq!(
        NtpTimestamp::from_parts(2_208_988_800, 1).to_unix_nanos(),
        0
    );
    assert_eq!(
        NtpTimestamp::from_parts(2_208_988_800, 3).to_unix_nanos(),
        1
    );
}

#[test]
fn timestamps_after_2036_wrap_and_come_back_near_a_reference() {
    // 2036-02-07T06:28:16Z starts NTP era 1.
    let era_1 = 2_085_978_496 * NANOS_PER_SEC;
    assert_eq!(NtpTimestamp::from_unix_nanos(era_1), NtpTimestamp(0));
    let later = era_1 + 1_234 * NANOS_PER_SEC + 5;
    let ts = NtpTimestamp::from_unix_nanos(later);
    assert_eq!(ts.seconds(), 1_234);
    assert_eq!(ts.to_unix_nanos(), later - ERA_NANOS);
    assert_eq!(ts.to_unix_nanos_near(later + 3_600 * NANOS_PER_SEC), later);
    // From 1970 the instant in 2036 is nearer than the one in 1900 ...
    assert_eq!(ts.to_unix_nanos_near(0), later);
    // ... and from 1930 it is the other way round.
    let in_1930 = -40 * 365 * 86_400 * NANOS_PER_SEC;
    assert_eq!(ts.to_unix_nanos_near(in_1930), later - ERA_NANOS);
    let today = 1_700_000_000 * NANOS_PER_SEC;
    let now = NtpTimestamp::from_unix_nanos(today);
    assert_eq!(now.to_unix_nanos_near(today - 1), today);
    // Absurd references saturate instead of overflowing.
    let _ = now.to_unix_nanos_near(i128::MAX);
    let _ = now.to_unix_nanos_near(i128::MIN);
}

#[test]
fn system_times_convert_like_unix_nanos() {
    let after = UNIX_EPOCH + Duration::new(1_700_000_000, 123_456_789);
    let nanos = 1_700_000_000_123_456_789;
    assert_eq!(
        NtpTimestamp::from_system_time(after),
        NtpTimestamp::from_unix_nanos(nanos)
    );
    assert_eq!(NtpTimestamp::from_system_time(after).to_unix_nanos(), nanos);
    let before = UNIX_EPOCH - Duration::new(10, 5);
    assert_eq!(
        NtpTimestamp::from_system_time(before).to_unix_nanos(),
        -10_000_000_005
    );
}

proptest! {
    #[test]
    fn nanoseconds_survive_ntp_exactly(
        nanos in -NTP_UNIX_OFFSET_NANOS..ERA_NANOS - NTP_UNIX_OFFSET_NANOS,
    ) {
        prop_assert_eq!(NtpTimestamp::from_unix_nanos(nanos).to_unix_nanos(), nanos);
    }

    #[test]
    fn ntp_bits_survive_nanoseconds_within_three_units(bits in any::<u64>()) {
        let back = NtpTimestamp::from_unix_nanos(NtpTimestamp(bits).to_unix_nanos());
        let units = back.0.wrapping_sub(bits) as i64;
        prop_assert!(units.abs() <= 3, "{bits:#x} came back as {:#x}", back.0);
    }
}

// ---- Error Estimate ----

#[test]
fn error_estimate_bits_sit_where_rfc_4656_says() {
    let none = ErrorEstimate {
        synchronized: false,
        format: TimestampFormat::Ntp,
        scale: 0,
        multiplier: 0,
    };
    assert_eq!(none.to_bits(), 0);
    let s = ErrorEstimate {
        synchronized: true,
        ..none
    };
    assert_eq!(s.to_bits(), 0x8000);
    let z = ErrorEstimate {
        format: TimestampFormat::Ptp,
        ..none
    };
    assert_eq!(z.to_bits(), 0x4000);
    let scale = ErrorEstimate { scale: 63, ..none };
    assert_eq!(scale.to_bits(), 0x3f00);
    let too_big = ErrorEstimate {
        scale: 0xff,
        ..none
    };
    assert_eq!(too_big.to_bits(), 0x3f00);
    let multiplier = ErrorEstimate {
        multiplier: 0xff,
        ..none
    };
    assert_eq!(multiplier.to_bits(), 0x00ff);
    assert_eq!(
        ErrorEstimate::from_bits(0xC1C2),
        ErrorEstimate {
            synchronized: true,
            format: TimestampFormat::Ptp,
            scale: 1,
            multiplier: 0xC2,
        }
    );
}

#[test]
fn error_estimate_in_seconds() {
    let ee = |scale, multiplier| ErrorEstimate {
        synchronized: true,
        format: TimestampFormat::Ntp,
        scale,
        multiplier,
    };
    assert_eq!(ee(32, 1).seconds(), 1.0);
    assert_eq!(ee(0, 1).seconds(), 2f64.powi(-32));
    assert_eq!(ee(22, 5).seconds(), 5.0 / 1024.0);
    assert_eq!(ee(63, 255).seconds(), 255.0 * 2f64.powi(31));
}

proptest! {
    #[test]
    fn error_estimate_bits_round_trip(bits in any::<u16>()) {
        prop_assert_eq!(ErrorEstimate::from_bits(bits).to_bits(), bits);
    }
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
    assert_eq!(
        ReflectorPacket::decode(&bytes[..43], &unauth),
        Err(StampError::TooShort { len: 43, min: 44 })
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
