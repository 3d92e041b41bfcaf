//! Byte-level tests: state bytes, cookies, frames, UDP and server errors.
//! Fixtures were written by hand from iperf3's source and checked against
//! bytes captured from iperf3 3.12 and 3.21 on loopback. The control
//! decoder is tested in `control_tests.rs`, JSON in `json_tests.rs`.

use super::*;

/// Every state with its byte, written out by hand.
const STATE_BYTES: [(State, u8); 18] = [
    (State::TestStart, 0x01),
    (State::TestRunning, 0x02),
    (State::ResultRequest, 0x03),
    (State::TestEnd, 0x04),
    (State::StreamBegin, 0x05),
    (State::StreamRunning, 0x06),
    (State::StreamEnd, 0x07),
    (State::AllStreamsEnd, 0x08),
    (State::ParamExchange, 0x09),
    (State::CreateStreams, 0x0a),
    (State::ServerTerminate, 0x0b),
    (State::ClientTerminate, 0x0c),
    (State::ExchangeResults, 0x0d),
    (State::DisplayResults, 0x0e),
    (State::IperfStart, 0x0f),
    (State::IperfDone, 0x10),
    (State::AccessDenied, 0xff),
    (State::ServerError, 0xfe),
];

#[test]
fn state_bytes_match_iperf3_values() {
    for (state, byte) in STATE_BYTES {
        assert_eq!(state.to_byte(), byte, "{}", state.name());
        assert_eq!(u8::from(state), byte);
        assert_eq!(State::from_byte(byte), Ok(state));
        assert_eq!(State::try_from(byte as i8), Ok(state));
    }
    assert_eq!(State::AccessDenied.as_i8(), -1);
    assert_eq!(State::ServerError.as_i8(), -2);
    assert_eq!(State::TestEnd.sender(), Some(Side::Client));
    assert_eq!(State::ExchangeResults.sender(), Some(Side::Server));
    assert_eq!(State::IperfStart.sender(), None);
}

#[test]
fn unknown_state_bytes_are_refused_naming_the_value() {
    for byte in [0x00u8, 0x11, 0x7f, 0x80, 0xfd] {
        let err = State::from_byte(byte).unwrap_err();
        assert_eq!(err, Iperf3Error::UnknownState(byte as i8));
        assert!(err.to_string().contains(&format!("{:#04x}", byte)), "{err}");
    }
    assert!(State::from_byte(0xfd)
        .unwrap_err()
        .to_string()
        .contains("-3"));
}

#[test]
fn cookie_from_random_is_byte_exact() {
    let mut random = [0u8; COOKIE_CHARS];
    for (i, r) in random.iter_mut().enumerate() {
        *r = i as u8;
    }
    random[33] = 255; // 255 % 32 = 31: '7'
    random[34] = 32; // 'a' again
    random[35] = 97; // 97 % 32 = 1: 'b'
    let cookie = Cookie::from_random(&random);
    let expected: [u8; COOKIE_LEN] = *b"abcdefghijklmnopqrstuvwxyz234567a7ab\0";
    assert_eq!(cookie.as_bytes(), &expected);
    assert_eq!(cookie.as_str(), "abcdefghijklmnopqrstuvwxyz234567a7ab");
    assert!(cookie.uses_iperf3_alphabet());
    assert_eq!(Cookie::parse(&expected), Ok(cookie));
}

#[test]
fn cookies_of_real_and_old_iperf3_clients_parse() {
    // Sent by iperf3 3.12 on loopback.
    let real = b"lhl62eg6kdw5u2skfqpawqmgfbpcxrft3rnr\0";
    let cookie = Cookie::parse(real).unwrap();
    assert_eq!(cookie.to_string(), "lhl62eg6kdw5u2skfqpawqmgfbpcxrft3rnr");
    assert!(cookie.uses_iperf3_alphabet());
    // iperf3 before 3.2 put a host name and a time in it.
    let old = b"probe-7.example.1500000000.123456.4f\0";
    let cookie = Cookie::parse(old).unwrap();
    assert!(!cookie.uses_iperf3_alphabet());
}

#[test]
fn bad_cookies_are_refused_with_the_reason() {
    let good = *b"lhl62eg6kdw5u2skfqpawqmgfbpcxrft3rnr\0";
    assert_eq!(
        Cookie::parse(&good[..36]),
        Err(Iperf3Error::BadLength {
            what: "cookie",
            len: 36,
            expected: "37"
        })
    );
    let mut longer = good.to_vec();
    longer.push(0);
    assert!(matches!(
        Cookie::parse(&longer),
        Err(Iperf3Error::BadLength { len: 38, .. })
    ));
    let mut no_nul = good;
    no_nul[36] = b'x';
    assert_eq!(
        Cookie::parse(&no_nul),
        Err(Iperf3Error::CookieUnterminated { found: b'x' })
    );
    let mut early_nul = good;
    early_nul[10] = 0;
    assert_eq!(
        Cookie::parse(&early_nul),
        Err(Iperf3Error::CookieByte { index: 10, byte: 0 })
    );
    let mut space = good;
    space[0] = b' ';
    assert!(matches!(
        Cookie::parse(&space),
        Err(Iperf3Error::CookieByte { index: 0, .. })
    ));
}

#[test]
fn json_frame_encoding_is_byte_exact() {
    let frame = encode_json_frame(br#"{"tcp":true}"#).unwrap();
    let expected: &[u8] = &[
        0x00, 0x00, 0x00, 0x0c, b'{', b'"', b't', b'c', b'p', b'"', b':', b't', b'r', b'u', b'e',
        b'}',
    ];
    assert_eq!(frame, expected);
    assert_eq!(encode_json_frame(b""), Err(Iperf3Error::EmptyFrame));
}

#[test]
fn a_4_gib_length_is_refused_before_buffering() {
    let mut reader = JsonFrameReader::new(PARAMS_MAX_LEN);
    // 0xffffffff: 4 GiB − 1, and more bytes already behind it.
    let mut wire = vec![0xff, 0xff, 0xff, 0xff];
    wire.extend_from_slice(&[b'{'; 100]);
    assert_eq!(
        reader.feed(&wire),
        Err(Iperf3Error::FrameTooLarge {
            len: u32::MAX,
            max: PARAMS_MAX_LEN
        })
    );
    assert_eq!(reader.buffered(), 0);
    assert!(reader.is_idle());
    // Arriving a byte at a time, it is refused on the fourth byte.
    let mut reader = JsonFrameReader::new(PARAMS_MAX_LEN);
    for _ in 0..3 {
        assert_eq!(reader.feed(&[0xff]), Ok((1, None)));
    }
    assert!(reader.feed(&[0xff]).is_err());
    assert_eq!(reader.buffered(), 0);
    // The cap itself is allowed, one more is not.
    let cap = 1000u32;
    assert_eq!(json_frame_len(cap.to_be_bytes(), 1000), Ok(1000));
    assert_eq!(
        json_frame_len((cap + 1).to_be_bytes(), 1000),
        Err(Iperf3Error::FrameTooLarge {
            len: 1001,
            max: 1000
        })
    );
}

#[test]
fn a_zero_length_is_refused() {
    let mut reader = JsonFrameReader::new(PARAMS_MAX_LEN);
    assert_eq!(
        reader.feed(&[0, 0, 0, 0, b'{']),
        Err(Iperf3Error::EmptyFrame)
    );
    assert_eq!(json_frame_len([0; 4], 10), Err(Iperf3Error::EmptyFrame));
}

#[test]
fn the_frame_reader_leaves_the_next_bytes_to_the_caller() {
    let mut wire = encode_json_frame(b"{}").unwrap();
    wire.push(State::DisplayResults.to_byte());
    let mut reader = JsonFrameReader::new(64);
    assert_eq!(reader.feed(&wire), Ok((6, Some(b"{}".to_vec()))));
    assert!(reader.is_idle());
    // In pieces: the needed count tracks prefix, then payload.
    let mut reader = JsonFrameReader::new(64);
    assert_eq!(reader.feed(&wire[..2]), Ok((2, None)));
    assert_eq!(reader.needed(), 2);
    assert_eq!(reader.feed(&wire[2..5]), Ok((3, None)));
    assert_eq!(reader.needed(), 1);
    assert_eq!(reader.feed(&wire[5..]), Ok((1, Some(b"{}".to_vec()))));
}

#[test]
fn server_error_reports_are_byte_exact() {
    let report = ServerError {
        i_errno: 142,
        errno: Some(0),
    };
    assert_eq!(report.encode(), [0xfe, 0, 0, 0, 0x8e, 0, 0, 0, 0]);
    assert_eq!(ServerError::decode(&report.encode()[1..]), Ok(report));
    assert_eq!(report.name(), Some("IEAUTHTEST"));
    assert!(report.description().is_some());
    // errno 98 (EADDRINUSE on Linux) with IESTREAMLISTEN.
    let listen = ServerError::decode(&[0, 0, 0, 0xca, 0, 0, 0, 0x62]).unwrap();
    assert_eq!((listen.i_errno, listen.errno), (202, Some(98)));
    // iperf3 3.12 closes after the first code when authentication fails.
    assert_eq!(
        ServerError::decode(&[0, 0, 0, 0x8e]),
        Ok(ServerError {
            i_errno: 142,
            errno: None
        })
    );
    assert!(matches!(
        ServerError::decode(&[0, 0, 0]),
        Err(Iperf3Error::BadLength { len: 3, .. })
    ));
    assert_eq!(
        ServerError {
            i_errno: 9999,
            errno: None
        }
        .name(),
        None
    );
}

#[test]
fn udp_header_with_32_bit_counter_is_byte_exact() {
    // The first datagram of a 3.12 server in a reverse UDP test; bytes
    // 12 and on are fill.
    let datagram = [
        0x00, 0x00, 0x0f, 0xc0, 0x00, 0x07, 0xc0, 0x03, 0x00, 0x00, 0x00, 0x01, 0xe0, 0xfc, 0x8b,
        0x3d,
    ];
    let header = UdpHeader::decode(&datagram, CounterWidth::Bits32).unwrap();
    assert_eq!(
        header,
        UdpHeader {
            sec: 4032,
            usec: 507_907,
            count: 1
        }
    );
    let mut buf = [0xaa; 20];
    header.encode(CounterWidth::Bits32, &mut buf).unwrap();
    assert_eq!(buf[..12], datagram[..12]);
    assert_eq!(buf[12..], [0xaa; 8]);
    // The counter wraps at 32 bits, as iperf3's does.
    let big = UdpHeader {
        sec: 1,
        usec: 2,
        count: 0x1_0000_0005,
    };
    big.encode(CounterWidth::Bits32, &mut buf).unwrap();
    assert_eq!(buf[8..12], [0, 0, 0, 5]);
}

#[test]
fn udp_header_with_64_bit_counter_is_byte_exact() {
    let header = UdpHeader {
        sec: 0x0102_0304,
        usec: 999_999,
        count: 0x0a0b_0c0d_0e0f_1011,
    };
    let expected = [
        0x01, 0x02, 0x03, 0x04, 0x00, 0x0f, 0x42, 0x3f, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10,
        0x11,
    ];
    let mut buf = [0u8; UDP_HEADER_LEN_64];
    header.encode(CounterWidth::Bits64, &mut buf).unwrap();
    assert_eq!(buf, expected);
    assert_eq!(
        UdpHeader::decode(&expected, CounterWidth::Bits64),
        Ok(header)
    );
}

#[test]
fn short_datagrams_and_buffers_are_refused() {
    assert_eq!(
        UdpHeader::decode(&[0; 11], CounterWidth::Bits32),
        Err(Iperf3Error::TooShort {
            what: "UDP datagram",
            len: 11,
            need: 12
        })
    );
    assert!(UdpHeader::decode(&[0; 15], CounterWidth::Bits64).is_err());
    assert!(UdpHeader::decode(&[0; 12], CounterWidth::Bits32).is_ok());
    // A connect request is not a test datagram.
    assert!(UdpHeader::decode(&UDP_CONNECT_REQUEST, CounterWidth::Bits32).is_err());
    let header = UdpHeader {
        sec: 0,
        usec: 0,
        count: 1,
    };
    assert!(header.encode(CounterWidth::Bits64, &mut [0; 12]).is_err());
}

#[test]
fn udp_connect_values_per_version() {
    assert_eq!(UDP_CONNECT_REQUEST, [0x39, 0x38, 0x37, 0x36]);
    assert_eq!(UDP_CONNECT_REPLY, [0x36, 0x37, 0x38, 0x39]);
    assert_eq!(LEGACY_UDP_CONNECT_REQUEST, [0x15, 0xcd, 0x5b, 0x07]);
    assert_eq!(LEGACY_UDP_CONNECT_REPLY, [0xb1, 0x68, 0xde, 0x3a]);
    let current = ConnectFlavor::Current;
    assert_eq!(classify_connect_request(b"9876"), Some(current));
    assert_eq!(classify_connect_reply(b"6789"), Some(current));
    assert_eq!(
        classify_connect_request(b"6789"),
        Some(ConnectFlavor::BigEndianHost)
    );
    assert_eq!(
        classify_connect_reply(&[0xb1, 0x68, 0xde, 0x3a]),
        Some(ConnectFlavor::Legacy)
    );
    assert_eq!(
        classify_connect_request(&[0x07, 0x5b, 0xcd, 0x15]),
        Some(ConnectFlavor::LegacyBigEndianHost)
    );
    assert_eq!(
        classify_connect_reply(&[0x3a, 0xde, 0x68, 0xb1]),
        Some(ConnectFlavor::LegacyBigEndianHost)
    );
    assert_eq!(classify_connect_request(b"987"), None);
    assert_eq!(classify_connect_request(b"98765"), None);
    // A test datagram that starts with "6789" is not a reply.
    assert_eq!(classify_connect_reply(b"6789\0\0\0\x01\0\0\0\x01"), None);
}
