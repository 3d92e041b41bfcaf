use super::*;

fn spec() -> PingSpec {
    PingSpec {
        host: "::1".into(),
        ..PingSpec::default()
    }
}

#[test]
fn the_default_size_is_the_protocol_s() {
    spec().validate().unwrap();
    assert_eq!(spec().series_sizes(), vec![56], "iputils' 56 data bytes");
    let stamp = PingSpec {
        proto: PingProto::Udp,
        ..spec()
    };
    assert_eq!(stamp.series_sizes(), vec![44]);
    let authenticated = PingSpec {
        key_file: Some("k".into()),
        ..stamp
    };
    authenticated.validate().unwrap();
    assert_eq!(authenticated.series_sizes(), vec![112]);
}

#[test]
fn rules_name_their_field() {
    let field = |s: PingSpec| s.validate().unwrap_err().field;
    assert_eq!(
        field(PingSpec {
            interval: Duration::from_micros(500),
            ..spec()
        }),
        "interval_s"
    );
    assert_eq!(
        field(PingSpec {
            key_file: Some("k".into()),
            ..spec()
        }),
        "key_file"
    );
    assert_eq!(
        field(PingSpec {
            proto: PingProto::Udp,
            sizes: vec![43],
            ..spec()
        }),
        "sizes"
    );
    assert_eq!(
        field(PingSpec {
            proto: PingProto::Udp,
            key_file: Some("k".into()),
            sizes: vec![64],
            ..spec()
        }),
        "sizes"
    );
    assert_eq!(field(PingSpec::default()), "host");
    for ttl in [0, 256] {
        assert_eq!(
            field(PingSpec {
                ttl: Some(ttl),
                ..spec()
            }),
            "ttl"
        );
    }
    assert_eq!(
        field(PingSpec {
            deadline: Some(Duration::ZERO),
            ..spec()
        }),
        "deadline_s"
    );
    for bad in ["", "a/b", "sixteen-chars-xx", "eth 0"] {
        assert_eq!(
            field(PingSpec {
                interface: Some(bad.into()),
                ..spec()
            }),
            "interface",
            "{bad:?}"
        );
    }
    assert_eq!(
        field(PingSpec {
            interface: Some("127.0.0.1".into()),
            family: IpFamily::V6,
            ..spec()
        }),
        "interface"
    );
}

#[test]
fn iputils_flags_take_their_ranges_and_forms() {
    let ok = PingSpec {
        ttl: Some(1),
        deadline: Some(Duration::from_secs(3)),
        interface: Some("lo".into()),
        timestamps: true,
        ..spec()
    };
    ok.validate().unwrap();
    assert_eq!(ok.source(), Some(PingSource::Interface("lo")));
    let by_address = PingSpec {
        ttl: Some(255),
        interface: Some("::1".into()),
        ..spec()
    };
    by_address.validate().unwrap();
    assert_eq!(
        by_address.source(),
        Some(PingSource::Address("::1".parse().unwrap()))
    );
    // The deadline is seconds in JSON, and any duration in TOML.
    let json = serde_json::to_value(&ok).unwrap();
    assert_eq!(json["deadline_s"], 3.0);
    let back: PingSpec = serde_json::from_value(json).unwrap();
    assert_eq!(back, ok);
    let t: PingSpec = toml::from_str("host = \"::1\"\ndeadline_s = \"500ms\"\n").unwrap();
    assert_eq!(t.deadline, Some(Duration::from_millis(500)));
    let none: PingSpec = toml::from_str("host = \"::1\"\n").unwrap();
    assert_eq!(none.deadline, None);
}
