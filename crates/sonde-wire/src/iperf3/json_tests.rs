//! Tests of the parameters and results JSON, against fixtures written the
//! way iperf3's send_parameters and send_results build them (and checked
//! against what iperf3 3.12 and 3.21 sent on loopback).

use super::*;
use proptest::prelude::*;

/// `iperf3 -c host -u -b 10M -P 2 -R -t 5` from iperf3 3.12 over a path
/// whose TCP MSS is 1448 (the UDP length defaults to the control
/// connection's MSS).
const PARAMS_3_12: &str = r#"{"udp":true,"omit":0,"time":5,"num":0,"blockcount":0,"parallel":2,"reverse":true,"len":1448,"bandwidth":10000000,"pacing_timer":1000,"client_version":"3.12"}"#;

/// `iperf3 -c host -u --bidir -P 2 -t 5 --udp-counters-64bit
/// --skip-rx-copy` from iperf3 3.21 (which sends its GSO/GRO keys for
/// every UDP test), plus two keys a later version might add.
const PARAMS_3_21: &str = r#"{"udp":true,"omit":0,"time":5,"num":0,"blockcount":0,"parallel":2,"bidirectional":true,"len":1448,"bandwidth":1048576,"pacing_timer":1000,"gso":0,"gso_dg_size":0,"gso_bf_size":65507,"gro":0,"gro_bf_size":65507,"udp_counters_64bit":1,"skip_rx_copy":1,"client_version":"3.21","future_key":{"nested":[1,2.5,null]},"future_flag":true}"#;

/// A 3.12 server's results for a forward UDP test, as sent: iperf3 3.12
/// prints −1 as 18446744073709551615.
const RESULTS_3_12: &str = r#"{"cpu_util_total":0.37226380623554328,"cpu_util_user":0,"cpu_util_system":0.37226380623554328,"sender_has_retransmits":18446744073709551615,"streams":[{"id":1,"bytes":123200,"retransmits":18446744073709551615,"jitter":0.013638953315830316,"errors":0,"packets":88,"start_time":0,"end_time":1.003826}]}"#;

/// A 3.21 server's results for a reverse UDP test, as sent.
const RESULTS_3_21: &str = r#"{"cpu_util_total":0.505647865070073,"cpu_util_user":0.5057476771239755,"cpu_util_system":0,"sender_has_retransmits":0,"streams":[{"id":1,"bytes":126000,"retransmits":-1,"jitter":0,"errors":0,"omitted_errors":0,"packets":90,"omitted_packets":0,"start_time":0,"end_time":1.001876}]}"#;

#[test]
fn params_of_an_iperf3_3_12_client_parse_and_re_encode_byte_exact() {
    let p = Params::from_json(PARAMS_3_12.as_bytes()).unwrap();
    assert_eq!(p.protocol, Protocol::Udp);
    assert_eq!(p.direction(), Direction::Reverse);
    assert_eq!(
        (p.time, p.parallel, p.omit, p.num, p.blockcount),
        (5, 2, 0, 0, 0)
    );
    assert_eq!(
        (p.len, p.bandwidth, p.pacing_timer),
        (1448, 10_000_000, 1000)
    );
    assert_eq!(p.client_version.as_deref(), Some("3.12"));
    assert_eq!(p.counter_width(), CounterWidth::Bits32);
    assert!(!p.nodelay && !p.get_server_output && p.gso.is_none());
    assert_eq!(p.to_json().unwrap(), PARAMS_3_12.as_bytes());
    let via_serde: Params = serde_json::from_str(PARAMS_3_12).unwrap();
    assert_eq!(via_serde, p);
}

#[test]
fn sonde_client_params_encode_like_iperf3() {
    let mut p = Params::client(Protocol::Udp, Direction::Reverse, 5, 2)
        .with_len(1448)
        .with_bandwidth(10_000_000);
    p.pacing_timer = 1000;
    p.client_version = Some("3.12".into());
    assert_eq!(p.to_json().unwrap(), PARAMS_3_12.as_bytes());
    let frame = p.to_frame().unwrap();
    assert_eq!(frame[..4], (PARAMS_3_12.len() as u32).to_be_bytes());
    assert_eq!(frame[4..], *PARAMS_3_12.as_bytes());
    // Flags of both kinds are written the way iperf3 3.21 type-checks
    // them: `true` for these, 1 for those.
    let p = Params::client(Protocol::Tcp, Direction::Bidirectional, 10, 1)
        .with_udp_counters_64bit(true);
    let json = String::from_utf8(p.to_json().unwrap()).unwrap();
    assert!(json.starts_with(r#"{"tcp":true,"#), "{json}");
    assert!(json.contains(r#""bidirectional":true"#), "{json}");
    assert!(json.contains(r#""udp_counters_64bit":1"#), "{json}");
    assert!(!json.contains("reverse"), "{json}");
    assert!(json.contains(SONDE_CLIENT_VERSION), "{json}");
}

#[test]
fn params_of_an_iperf3_3_21_client_parse_and_unknown_keys_are_ignored() {
    let p = Params::from_json(PARAMS_3_21.as_bytes()).unwrap();
    assert_eq!(p.direction(), Direction::Bidirectional);
    assert_eq!(p.counter_width(), CounterWidth::Bits64);
    assert!(p.skip_rx_copy);
    assert_eq!(
        (p.gso, p.gso_dg_size, p.gso_bf_size),
        (Some(false), Some(0), Some(65507))
    );
    assert_eq!((p.gro, p.gro_bf_size), (Some(false), Some(65507)));
    assert_eq!(p.bandwidth, 1_048_576);
    let known = PARAMS_3_21
        .split(r#","future_key""#)
        .next()
        .unwrap()
        .to_string()
        + "}";
    assert_eq!(String::from_utf8(p.to_json().unwrap()).unwrap(), known);
}

#[test]
fn absent_keys_take_iperf3_server_defaults() {
    let p = Params::from_json(b"{}").unwrap();
    assert_eq!(p, Params::default());
    assert_eq!((p.protocol, p.time, p.parallel), (Protocol::Tcp, 10, 1));
    assert_eq!(p.direction(), Direction::Forward);
}

#[test]
fn flags_accept_booleans_and_numbers() {
    let p = Params::from_json(
        br#"{"udp":1,"reverse":1,"nodelay":true,"udp_counters_64bit":true,"zerocopy":2,"get_server_output":1.0,"dont_fragment":0,"repeating_payload":false,"mptcp":null}"#,
    )
    .unwrap();
    assert_eq!(p.protocol, Protocol::Udp);
    assert!(p.reverse && p.nodelay && p.udp_counters_64bit && p.zerocopy && p.get_server_output);
    assert!(!p.dont_fragment && !p.repeating_payload && !p.mptcp);
    // Integral floats are integers; `bidirectional` wins over `reverse`.
    let p =
        Params::from_json(br#"{"time":5.0,"bandwidth":1e7,"reverse":true,"bidirectional":true}"#)
            .unwrap();
    assert_eq!((p.time, p.bandwidth), (5, 10_000_000));
    assert_eq!(p.direction(), Direction::Bidirectional);
}

#[test]
fn wrong_types_are_refused_naming_the_key() {
    let err = Params::from_json(br#"{"tcp":true,"parallel":"two"}"#).unwrap_err();
    assert_eq!(
        err,
        Iperf3Error::WrongType {
            key: "parallel".into(),
            expected: "a number",
            found: r#"a string ("two")"#.into()
        }
    );
    assert!(err.to_string().contains("\"parallel\""), "{err}");
    let key_of = |json: &str| match Params::from_json(json.as_bytes()) {
        Err(Iperf3Error::WrongType { key, .. }) | Err(Iperf3Error::OutOfRange { key, .. }) => key,
        other => panic!("{json}: {other:?}"),
    };
    assert_eq!(key_of(r#"{"reverse":"yes"}"#), "reverse");
    assert_eq!(key_of(r#"{"title":5}"#), "title");
    assert_eq!(key_of(r#"{"time":-5}"#), "time");
    assert_eq!(key_of(r#"{"time":5.5}"#), "time");
    assert_eq!(key_of(r#"{"TOS":256}"#), "TOS");
    assert_eq!(key_of(r#"{"parallel":4294967296}"#), "parallel");
    assert_eq!(key_of(r#"{"window":[1]}"#), "window");
    assert_eq!(
        Params::from_json(br#"{"tcp":true,"udp":true}"#),
        Err(Iperf3Error::Conflict(
            r#"both "tcp" and "udp" are set"#.into()
        ))
    );
}

#[test]
fn payloads_that_are_not_json_objects_are_refused() {
    assert_eq!(
        Params::from_json(b"[1,2]"),
        Err(Iperf3Error::NotAnObject {
            what: "parameters",
            found: "an array"
        })
    );
    assert!(matches!(
        Params::from_json(b"{"),
        Err(Iperf3Error::NotJson(_))
    ));
    assert!(matches!(
        Results::from_json(b"{\"a\":\"\xff\"}"),
        Err(Iperf3Error::NotJson(_))
    ));
}

#[test]
fn the_data_connections_of_each_direction() {
    let bidir = Params::client(Protocol::Tcp, Direction::Bidirectional, 5, 2);
    assert_eq!(bidir.data_connections(), 4);
    let sends: Vec<_> = (0..5).map(|i| bidir.client_sends_on(i)).collect();
    assert_eq!(
        sends,
        [Some(true), Some(true), Some(false), Some(false), None]
    );
    let reverse = Params::client(Protocol::Udp, Direction::Reverse, 5, 3);
    assert_eq!(reverse.data_connections(), 3);
    assert_eq!(reverse.client_sends_on(0), Some(false));
    assert_eq!(reverse.client_sends_on(3), None);
    let ids: Vec<u32> = (0..5).map(stream_id).collect();
    assert_eq!(ids, [1, 3, 4, 5, 6]);
}

#[test]
fn results_of_iperf3_3_12_read_unsigned_minus_one_as_minus_one() {
    let r = Results::from_json(RESULTS_3_12.as_bytes()).unwrap();
    assert_eq!(r.sender_has_retransmits, -1);
    let s = r.stream(1).unwrap();
    assert_eq!(
        (s.bytes, s.retransmits, s.errors, s.packets),
        (123_200, -1, 0, 88)
    );
    assert_eq!(s.retransmits(), None);
    assert_eq!((s.omitted_errors, s.omitted_packets), (None, None));
    assert!((s.jitter - 0.013_638_953_315_830_316).abs() < 1e-15);
    assert!((r.cpu_util_total - 0.372_263_806_235_543_3).abs() < 1e-15);
    assert_eq!(s.start_time, Some(0.0));
    assert!((s.duration().unwrap() - 1.003_826).abs() < 1e-12);
}

#[test]
fn results_of_iperf3_3_21_carry_omitted_counts() {
    let r = Results::from_json(RESULTS_3_21.as_bytes()).unwrap();
    assert_eq!(r.sender_has_retransmits, 0);
    let s = &r.streams[0];
    assert_eq!((s.omitted_errors, s.omitted_packets), (Some(0), Some(0)));
    assert_eq!((s.bytes, s.packets, s.retransmits), (126_000, 90, -1));
    assert_eq!(r.congestion_used, None);
}

fn sample_results() -> Results {
    Results {
        cpu_util_total: 12.5,
        cpu_util_user: 2.25,
        cpu_util_system: 10.25,
        sender_has_retransmits: 1,
        congestion_used: Some("cubic".into()),
        server_output_json: None,
        server_output_text: Some("line 1\nline 2\n".into()),
        streams: vec![
            StreamResult {
                id: 1,
                bytes: 1_250_000,
                retransmits: 3,
                jitter: 0.0,
                errors: 0,
                omitted_errors: Some(0),
                packets: 0,
                omitted_packets: Some(0),
                start_time: Some(0.0),
                end_time: Some(5.000_25),
            },
            StreamResult {
                id: 3,
                bytes: 99,
                retransmits: -1,
                jitter: 0.5,
                errors: 2,
                omitted_errors: None,
                packets: 77,
                omitted_packets: None,
                start_time: None,
                end_time: None,
            },
        ],
    }
}

#[test]
fn results_encode_exactly_and_round_trip() {
    let r = sample_results();
    let json = String::from_utf8(r.to_json().unwrap()).unwrap();
    let expected = concat!(
        r#"{"cpu_util_total":12.5,"cpu_util_user":2.25,"cpu_util_system":10.25,"#,
        r#""sender_has_retransmits":1,"congestion_used":"cubic","#,
        r#""server_output_text":"line 1\nline 2\n","streams":["#,
        r#"{"id":1,"bytes":1250000,"retransmits":3,"jitter":0.0,"errors":0,"#,
        r#""omitted_errors":0,"packets":0,"omitted_packets":0,"start_time":0.0,"end_time":5.00025},"#,
        r#"{"id":3,"bytes":99,"retransmits":-1,"jitter":0.5,"errors":2,"packets":77}]}"#
    );
    assert_eq!(json, expected);
    assert_eq!(Results::from_json(json.as_bytes()), Ok(r.clone()));
    let via_serde: Results = serde_json::from_str(&json).unwrap();
    assert_eq!(via_serde, r);
    // Server output in JSON form comes back as it went.
    let mut with_output = r;
    with_output.server_output_text = None;
    with_output.server_output_json = Some(serde_json::json!({"start": {"version": "iperf 3.21"}}));
    let again = Results::from_json(&with_output.to_json().unwrap()).unwrap();
    assert_eq!(again, with_output);
}

#[test]
fn results_missing_keys_are_refused_naming_them() {
    let missing = |json: &str| match Results::from_json(json.as_bytes()) {
        Err(Iperf3Error::MissingKey { key }) => key,
        other => panic!("{json}: {other:?}"),
    };
    assert_eq!(missing(r#"{"cpu_util_user":0}"#), "cpu_util_total");
    let no_bytes = RESULTS_3_21.replace(r#""bytes":126000,"#, "");
    assert_eq!(missing(&no_bytes), "streams[0].bytes");
    let lone = RESULTS_3_21.replace(r#""omitted_packets":0,"#, "");
    assert_eq!(missing(&lone), "streams[0].omitted_packets");
    let wrong = RESULTS_3_21.replace(r#""streams":["#, r#""streams":[7,"#);
    assert!(matches!(
        Results::from_json(wrong.as_bytes()),
        Err(Iperf3Error::WrongType { key, expected: "an object", .. }) if key == "streams[0]"
    ));
    let text = RESULTS_3_21.replace(r#""jitter":0"#, r#""jitter":"low""#);
    assert!(matches!(
        Results::from_json(text.as_bytes()),
        Err(Iperf3Error::WrongType { key, .. }) if key == "streams[0].jitter"
    ));
}

#[test]
fn results_that_json_cannot_carry_are_not_encoded() {
    let mut r = sample_results();
    r.streams[1].jitter = f64::NAN;
    assert!(matches!(r.to_json(), Err(Iperf3Error::Encode(m)) if m.contains("streams[1].jitter")));
    let mut r = sample_results();
    r.streams[0].omitted_packets = None;
    assert!(matches!(r.to_json(), Err(Iperf3Error::Encode(_))));
}

proptest! {
    #[test]
    fn params_round_trip(
        time in any::<u32>(),
        parallel in any::<u32>(),
        bandwidth in any::<u64>(),
        tos in any::<u8>(),
        affinity in proptest::option::of(any::<u32>()),
        direction in 0u8..3,
        udp in any::<bool>(),
        wide in any::<bool>(),
        title in proptest::option::of(".{0,20}"),
    ) {
        let direction = [Direction::Forward, Direction::Reverse, Direction::Bidirectional][usize::from(direction)];
        let protocol = if udp { Protocol::Udp } else { Protocol::Tcp };
        let mut p = Params::client(protocol, direction, time, parallel)
            .with_bandwidth(bandwidth)
            .with_tos(tos)
            .with_udp_counters_64bit(wide);
        p.server_affinity = affinity;
        p.title = title;
        p.gso = Some(wide);
        prop_assert_eq!(Params::from_json(&p.to_json().unwrap()), Ok(p));
    }

    #[test]
    fn results_round_trip(
        bytes in any::<u64>(),
        retransmits in any::<i64>(),
        errors in any::<i64>(),
        id in any::<u32>(),
        omitted in proptest::option::of(any::<i64>()),
    ) {
        let mut r = sample_results();
        r.streams[0].bytes = bytes;
        r.streams[0].retransmits = retransmits;
        r.streams[1].errors = errors;
        r.streams[1].id = id;
        r.streams[1].omitted_errors = omitted;
        r.streams[1].omitted_packets = omitted;
        prop_assert_eq!(Results::from_json(&r.to_json().unwrap()), Ok(r));
    }
}
