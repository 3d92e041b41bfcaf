//! Tests of the control decoder on whole exchanges (bytes as iperf3 3.12
//! sent them on loopback), in any read sizes, and on arbitrary bytes.

use super::*;
use proptest::prelude::*;

/// What an iperf3 3.12 client sent in a forward TCP test, in order.
fn client_side_bytes() -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let cookie = b"lhl62eg6kdw5u2skfqpawqmgfbpcxrft3rnr\0".to_vec();
    let params = br#"{"tcp":true,"omit":0,"time":1,"num":0,"blockcount":0,"parallel":1,"len":131072,"pacing_timer":1000,"client_version":"3.12"}"#.to_vec();
    let results = br#"{"cpu_util_total":98.409397029083664,"cpu_util_user":0.55795819534676683,"cpu_util_system":97.8514388337369,"sender_has_retransmits":1,"congestion_used":"bbr","streams":[{"id":1,"bytes":3228303360,"retransmits":0,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":1.000262}]}"#.to_vec();
    let mut wire = cookie;
    wire.extend(encode_json_frame(&params).unwrap());
    wire.push(State::TestEnd.to_byte());
    wire.extend(encode_json_frame(&results).unwrap());
    wire.push(State::IperfDone.to_byte());
    (wire, params, results)
}

/// Feeds `wire` in pieces of `cut` bytes, collecting every item.
fn decode_all(decoder: &mut ControlDecoder, wire: &[u8], cut: usize) -> Vec<Inbound> {
    let mut items = Vec::new();
    for piece in wire.chunks(cut) {
        let mut rest = piece;
        while !rest.is_empty() {
            let (used, item) = decoder.feed(rest).unwrap();
            assert!(used > 0 && used <= rest.len());
            rest = &rest[used..];
            items.extend(item);
        }
    }
    items
}

#[test]
fn the_server_side_decoder_reads_a_whole_test_in_any_pieces() {
    let (wire, params, results) = client_side_bytes();
    for cut in [1, 2, 3, 7, 40, wire.len()] {
        let mut decoder = ControlDecoder::with_default_caps(Reader::Server);
        let items = decode_all(&mut decoder, &wire, cut);
        assert_eq!(items.len(), 5, "cut {cut}");
        assert!(matches!(&items[0], Inbound::Cookie(c) if c.as_str().starts_with("lhl62")));
        assert_eq!(
            items[1],
            Inbound::Params(Params::from_json(&params).unwrap())
        );
        assert_eq!(items[2], Inbound::State(State::TestEnd));
        assert_eq!(
            items[3],
            Inbound::Results(Results::from_json(&results).unwrap())
        );
        assert_eq!(items[4], Inbound::State(State::IperfDone));
        assert_eq!(decoder.awaiting(), Awaiting::State);
        assert_eq!(decoder.finish(), Ok(None));
    }
}

#[test]
fn the_client_side_decoder_reads_a_whole_test() {
    let results = br#"{"cpu_util_total":1,"cpu_util_user":0.5,"cpu_util_system":0.5,"sender_has_retransmits":-1,"streams":[{"id":1,"bytes":10,"retransmits":-1,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":1}]}"#;
    let mut wire = vec![0x09, 0x0a, 0x01, 0x02, 0x0d];
    wire.extend(encode_json_frame(results).unwrap());
    wire.push(0x0e);
    let mut decoder = ControlDecoder::with_default_caps(Reader::Client);
    let items = decode_all(&mut decoder, &wire, 3);
    let states: Vec<_> = items
        .iter()
        .filter_map(|i| match i {
            Inbound::State(s) => Some(*s),
            _ => None,
        })
        .collect();
    use State::*;
    assert_eq!(
        states,
        [
            ParamExchange,
            CreateStreams,
            TestStart,
            TestRunning,
            ExchangeResults,
            DisplayResults
        ]
    );
    assert!(matches!(&items[5], Inbound::Results(r) if r.streams[0].bytes == 10));
}

#[test]
fn the_client_side_decoder_reads_server_errors() {
    let mut decoder = ControlDecoder::with_default_caps(Reader::Client);
    let wire = [0x09, 0xfe, 0, 0, 0, 0x79, 0, 0, 0, 0];
    let items = decode_all(&mut decoder, &wire, 1);
    assert_eq!(
        items.last(),
        Some(&Inbound::ServerError(ServerError {
            i_errno: 121,
            errno: Some(0)
        }))
    );
    // 3.12's authentication failure: one code, then the connection ends.
    let mut decoder = ControlDecoder::with_default_caps(Reader::Client);
    decode_all(&mut decoder, &[0x09, 0xfe, 0, 0, 0, 0x8e], 6);
    assert_eq!(decoder.awaiting(), Awaiting::ServerErrorCodes);
    assert_eq!(
        decoder.finish(),
        Ok(Some(Inbound::ServerError(ServerError {
            i_errno: 142,
            errno: None
        })))
    );
}

#[test]
fn the_decoder_refuses_oversized_params_before_buffering_them() {
    let mut decoder = ControlDecoder::new(Reader::Server, 100, 100);
    let mut wire = b"lhl62eg6kdw5u2skfqpawqmgfbpcxrft3rnr\0".to_vec();
    wire.extend_from_slice(&[0xff, 0xff, 0xff, 0xff]);
    let (used, item) = decoder.feed(&wire).unwrap();
    assert!(matches!(item, Some(Inbound::Cookie(_))));
    let err = decoder.feed(&wire[used..]).unwrap_err();
    assert_eq!(
        err,
        Iperf3Error::FrameTooLarge {
            len: u32::MAX,
            max: 100
        }
    );
    assert_eq!(decoder.buffered(), 0);
    // Once out of step, it stays refused.
    assert_eq!(decoder.feed(b"{}"), Err(err));
}

#[test]
fn the_decoder_reports_items_cut_off_by_the_end_of_the_connection() {
    let mut decoder = ControlDecoder::with_default_caps(Reader::Server);
    decoder.feed(b"abc").unwrap();
    assert_eq!(
        decoder.finish(),
        Err(Iperf3Error::Truncated {
            what: "the cookie",
            have: 3,
            need: 37
        })
    );
    let mut decoder = ControlDecoder::with_default_caps(Reader::Client);
    decoder.feed(&[0xfe]).unwrap();
    assert_eq!(
        decoder.finish(),
        Err(Iperf3Error::Truncated {
            what: "the server error codes",
            have: 0,
            need: 8
        })
    );
    let (wire, _, _) = client_side_bytes();
    let mut decoder = ControlDecoder::with_default_caps(Reader::Server);
    decode_all(&mut decoder, &wire[..37 + 10], 47);
    assert!(matches!(
        decoder.finish(),
        Err(Iperf3Error::Truncated {
            what: "the parameters",
            have: 10,
            ..
        })
    ));
}

proptest! {
    #[test]
    fn decoding_arbitrary_bytes_never_panics(
        bytes in proptest::collection::vec(any::<u8>(), 0..600),
        cut in 1usize..50,
    ) {
        for reader in [Reader::Server, Reader::Client] {
            let mut decoder = ControlDecoder::new(reader, 256, 256);
            'feed: for piece in bytes.chunks(cut) {
                let mut rest = piece;
                while !rest.is_empty() {
                    match decoder.feed(rest) {
                        Ok((used, _)) => rest = &rest[used..],
                        Err(_) => break 'feed,
                    }
                }
            }
            let _ = decoder.finish();
        }
        let _ = Cookie::parse(&bytes);
        let _ = Params::from_json(&bytes);
        let _ = Results::from_json(&bytes);
        let _ = ServerError::decode(&bytes);
        let _ = JsonFrameReader::new(64).feed(&bytes);
        for width in [CounterWidth::Bits32, CounterWidth::Bits64] {
            let _ = UdpHeader::decode(&bytes, width);
        }
        let _ = classify_connect_request(&bytes);
        let _ = classify_connect_reply(&bytes);
        if let Some(&b) = bytes.first() {
            let _ = State::from_byte(b);
        }
    }

    #[test]
    fn udp_headers_round_trip(sec in any::<u32>(), usec in any::<u32>(), count in any::<u64>()) {
        let header = UdpHeader { sec, usec, count };
        let mut buf = [0u8; UDP_HEADER_LEN_64];
        header.encode(CounterWidth::Bits64, &mut buf).unwrap();
        prop_assert_eq!(UdpHeader::decode(&buf, CounterWidth::Bits64), Ok(header));
        header.encode(CounterWidth::Bits32, &mut buf).unwrap();
        let narrow = UdpHeader { count: count & 0xffff_ffff, ..header };
        prop_assert_eq!(UdpHeader::decode(&buf, CounterWidth::Bits32), Ok(narrow));
    }

    #[test]
    fn frames_survive_any_split(
        payload in proptest::collection::vec(any::<u8>(), 1..300),
        cut in 1usize..20,
    ) {
        let wire = encode_json_frame(&payload).unwrap();
        let mut reader = JsonFrameReader::new(300);
        let mut got = None;
        for piece in wire.chunks(cut) {
            let (used, frame) = reader.feed(piece).unwrap();
            prop_assert_eq!(used, piece.len());
            if frame.is_some() {
                got = frame;
            }
        }
        prop_assert_eq!(got, Some(payload));
    }
}
