//! Tests of [`crate::spec`].

use super::*;
use std::time::Duration;

#[test]
fn default_spec_needs_only_a_host() {
    assert_eq!(TcpSpec::default().validate().unwrap_err().field, "host");
    TcpSpec {
        host: "::1".into(),
        ..TcpSpec::default()
    }
    .validate()
    .unwrap();
}

#[test]
fn a_missing_field_takes_its_default_and_an_unknown_one_is_refused() {
    let s: TcpSpec = serde_json::from_str(r#"{"host": "::1", "time_s": "1m"}"#).unwrap();
    assert_eq!(s.time, Duration::from_secs(60));
    assert_eq!(s.parallel, 1);
    assert_eq!(s.peer, PeerKind::Auto);
    let e = serde_json::from_str::<TcpSpec>(r#"{"host": "::1", "streams": 4}"#).unwrap_err();
    assert!(e.to_string().contains("streams"), "{e}");
}

#[test]
fn limits_name_the_field() {
    let s = TcpSpec {
        host: "::1".into(),
        parallel: 129,
        ..TcpSpec::default()
    };
    assert_eq!(s.validate().unwrap_err().field, "parallel");
    let s = TcpSpec {
        host: "::1".into(),
        flowlabel: Some(1 << 20),
        ..TcpSpec::default()
    };
    assert_eq!(s.validate().unwrap_err().field, "flowlabel");
    let s = TcpSpec {
        host: "::1".into(),
        congestion: Some("cubic; rm".into()),
        ..TcpSpec::default()
    };
    assert_eq!(s.validate().unwrap_err().field, "congestion");
}

#[test]
fn bidir_splits_streams() {
    let s = TcpSpec {
        parallel: 3,
        direction: Direction::Bidir,
        ..TcpSpec::default()
    };
    assert_eq!(s.stream_count(), 6);
    assert_eq!(s.stream_direction(2), Direction::Forward);
    assert_eq!(s.stream_direction(3), Direction::Reverse);
}

#[test]
fn json_uses_unit_names_and_round_trips() {
    let s = TcpSpec {
        host: "::1".into(),
        bitrate: Some(Rate::from_bps(5_000_000)),
        ..TcpSpec::default()
    };
    let j = serde_json::to_value(&s).unwrap();
    assert_eq!(j["time_s"], 10.0);
    assert_eq!(j["bitrate_bps"], 5_000_000);
    let back: TcpSpec = serde_json::from_value(j).unwrap();
    assert_eq!(back, s);
}

#[test]
fn client_keys_are_written_only_when_set_and_round_trip() {
    let plain = TcpSpec {
        host: "::1".into(),
        ..TcpSpec::default()
    };
    let j = serde_json::to_value(&plain).unwrap();
    for key in [
        "bytes",
        "blocks",
        "bind",
        "cport",
        "connect_timeout_s",
        "no_delay",
        "zerocopy",
    ] {
        assert!(j.get(key).is_none(), "{key} written when unset: {j}");
    }
    let s: TcpSpec = toml::from_str(
        "host = \"::1\"\nbytes = \"2G\"\nbind = \"::1\"\ncport = 5300\n\
         connect_timeout_s = \"1.5s\"\nno_delay = true\nzerocopy = true\n",
    )
    .unwrap();
    s.validate().unwrap();
    assert_eq!(s.byte_budget(), Some(2 << 30));
    assert_eq!(s.connect_timeout, Some(Duration::from_millis(1500)));
    let back: TcpSpec = serde_json::from_value(serde_json::to_value(&s).unwrap()).unwrap();
    assert_eq!(back, s);
    let blocks = TcpSpec {
        blocks: Some(10),
        length: ByteSize::from_bytes(1000),
        ..plain
    };
    assert_eq!(blocks.byte_budget(), Some(10_000));
}

#[test]
fn a_family_is_read_as_users_write_it() {
    for (written, family) in [
        ("v6", IpFamily::V6),
        ("ipv6", IpFamily::V6),
        ("IPv6", IpFamily::V6),
        ("6", IpFamily::V6),
        ("ipv4", IpFamily::V4),
        ("4", IpFamily::V4),
        ("any", IpFamily::Any),
    ] {
        let read: IpFamily = serde_json::from_value(serde_json::json!(written)).unwrap();
        assert_eq!(read, family, "{written}");
    }
    // Written as ever: v6 and v4.
    assert_eq!(serde_json::to_value(IpFamily::V6).unwrap(), "v6");
    let e = serde_json::from_value::<IpFamily>(serde_json::json!("ipv7")).unwrap_err();
    assert!(e.to_string().contains("ipv7"), "{e}");
}
