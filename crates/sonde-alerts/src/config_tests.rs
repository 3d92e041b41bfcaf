//! Tests of [`crate::config`]: rules as written, their faults, selectors.

use super::*;

fn parse(text: &str) -> Result<Rule, String> {
    #[derive(Deserialize)]
    struct File {
        alert: Vec<RuleConfig>,
    }
    let f: File = toml::from_str(text).map_err(|e| e.to_string())?;
    rules(&f.alert)
        .map(|mut r| r.remove(0))
        .map_err(|e| e.to_string())
}

#[test]
fn a_threshold_rule_reads_with_its_defaults() {
    let r = parse(
        "[[alert]]\nname = \"lossy\"\nmetric = \"loss_pct\"\ntest = \"ping\"\nabove = 1.0\n\
         for = 3\nclear = 0.5\n",
    )
    .unwrap();
    assert_eq!(
        r.describe(),
        "loss_pct > 1 for 3 run(s), clears < 0.5 for 3"
    );
    assert_eq!(r.deliveries, vec![Delivery::Log]);
    assert_eq!(r.select.test.as_deref(), Some("ping"));
}

#[test]
fn a_pattern_rule_reads_and_keeps_its_span() {
    let r = parse(
        "[[alert]]\nname = \"someloss\"\nmetric = \"loss_pct\"\n\
         pattern = \">0%,*12*,>0%,*12*,>0%\"\n",
    )
    .unwrap();
    assert_eq!(r.keep(), 27);
}

#[test]
fn faults_name_the_rule_and_the_key() {
    let cases = [
        (
            "metric = \"loss_pct\"\nbelow = 1.0",
            "below: loss_pct is bad above",
        ),
        (
            "metric = \"throughput_bps\"\npattern = \">1\"",
            "patterns compare",
        ),
        (
            "metric = \"loss_pct\"\nabove = 1.0\npattern = \">0%\"",
            "exclude",
        ),
        ("metric = \"loss_pct\"", "give above, below or pattern"),
        (
            "metric = \"loss_pct\"\nabove = 1.0\nclear = 2.0",
            "clear: clear (2)",
        ),
        ("metric = \"loss_pct\"\npattern = \">x%\"", "pattern item 1"),
        (
            "metric = \"loss_pct\"\nabove = 1.0\nnotify = [\"webhook\"]",
            "webhook: notify has webhook",
        ),
        (
            "metric = \"loss_pct\"\nabove = 1.0\nnotify = [\"webhook\"]\nwebhook = \"ftp://x\"",
            "not an http(s) URL",
        ),
        (
            "metric = \"loss_pct\"\nabove = 1.0\nsubject = \"{alrt}\"",
            "subject: unknown placeholder {alrt}",
        ),
        (
            "metric = \"loss_pct\"\nabove = 1.0\nnotify = [\"incident\"]\nseverity = \"dire\"",
            "severity: severity: 'dire' is not one of low, medium, high, critical",
        ),
        // A value no path holds would select nothing, without a word.
        (
            "metric = \"loss_pct\"\nabove = 1.0\nfamily = \"ipv7\"",
            "family: 'ipv7' is not one of v6, v4",
        ),
        (
            "metric = \"loss_pct\"\nabove = 1.0\ntest = \"icmp\"",
            "test: 'icmp' is not one of tcp, udp, ping, http",
        ),
        (
            "metric = \"loss_pct\"\nabove = 1.0\ndirection = \"up\"",
            "direction: 'up' is not one of forward, reverse, bidir",
        ),
        (
            "metric = \"loss_pct\"\nabove = 1.0\ntest = \"ping\"\ndirection = \"forward\"",
            "direction: a ping has no direction",
        ),
        // A delivery's keys without the delivery would be ignored.
        (
            "metric = \"loss_pct\"\nabove = 1.0\nemail = [\"noc@example.net\"]",
            "email: given, but notify does not list email",
        ),
        (
            "metric = \"loss_pct\"\nabove = 1.0\nseverity = \"high\"",
            "severity: given, but notify does not list incident",
        ),
    ];
    for (body, want) in cases {
        let e = parse(&format!("[[alert]]\nname = \"r\"\n{body}\n")).unwrap_err();
        assert!(e.contains("alert 'r'") && e.contains(want), "{body}: {e}");
    }
    let e = parse("[[alert]]\nname = \"r\"\nmetric = \"loss\"\nabove = 1.0\n").unwrap_err();
    assert!(e.contains("loss_pct"), "{e}");
}

#[test]
fn a_family_is_read_as_users_write_it() {
    for (written, kept) in [
        ("ipv6", "v6"),
        ("IPv6", "v6"),
        ("v6", "v6"),
        ("4", "v4"),
        ("ipv4", "v4"),
    ] {
        let r = parse(&format!(
            "[[alert]]\nname = \"r\"\nmetric = \"loss_pct\"\nabove = 1.0\nfamily = \"{written}\"\n"
        ))
        .unwrap();
        assert_eq!(r.select.family.as_deref(), Some(kept), "{written}");
        let path = PathKey {
            family: kept.into(),
            ..PathKey::default()
        };
        assert!(r.select.selects(&path), "{written}");
    }
}

#[test]
fn a_selector_selects_by_every_key_given() {
    let path = PathKey {
        test: "ping".into(),
        source: "a".into(),
        target: "b".into(),
        ..PathKey::default()
    };
    let mut s = Selector {
        test: Some("ping".into()),
        ..Selector::default()
    };
    assert!(s.selects(&path));
    s.target = Some("c".into());
    assert!(!s.selects(&path));
    assert_eq!(path.key(), "ping|a|b||||");
}

#[test]
fn a_path_is_identified_by_its_addresses_and_labelled_by_its_names() {
    let path = PathKey {
        test: "ping".into(),
        source: "A".into(),
        target: "B".into(),
        source_addr: "2001:db8::1".into(),
        target_addr: "2001:db8::2".into(),
        family: "v6".into(),
        ..PathKey::default()
    };
    assert_eq!(path.key(), "ping|2001:db8::1|2001:db8::2|v6|||");
    assert_eq!(
        path.display(),
        "ping A (2001:db8::1) → B (2001:db8::2) (v6)"
    );
    // A rule names an end by its name or its address, as users write it.
    for source in ["A", "2001:db8::1", "2001:DB8:0::1"] {
        let s = Selector {
            source: Some(source.into()),
            ..Selector::default()
        };
        assert!(s.selects(&path), "{source}");
    }
    let s = Selector {
        source: Some("2001:db8::9".into()),
        ..Selector::default()
    };
    assert!(!s.selects(&path));
    // Without addresses (a document from before), the names stand in.
    let old = PathKey {
        source_addr: String::new(),
        target_addr: String::new(),
        ..path
    };
    assert_eq!(old.key(), "ping|A|B|v6|||");
    assert_eq!(old.display(), "ping A → B (v6)");
}

#[test]
fn a_rule_on_readings_names_them_and_refuses_what_selects_tests() {
    let head = "[[alert]]\nname = \"hot\"\nmetric = \"reading\"\n";
    let r = parse(&format!("{head}reading = \"to_b.in\"\nbelow = 1\n")).unwrap();
    assert_eq!(
        r.reading,
        Some(ReadingSelect {
            probe: None,
            metric: "to_b.in".into()
        })
    );
    let cases = [
        (
            "above = 1\n",
            "alert 'hot': reading: metric = \"reading\" needs",
        ),
        (
            "reading = \"x\"\ntest = \"ping\"\nabove = 1\n",
            "alert 'hot': test: selects tests' paths",
        ),
        (
            "reading = \"a b\"\nabove = 1\n",
            "alert 'hot': reading: 'a b' is not a reading's name",
        ),
        (
            "reading = \"x\"\nprobe = \"r/1\"\nabove = 1\n",
            "alert 'hot': probe: 'r/1'",
        ),
        (
            "reading = \"x\"\npattern = \">0%\"\n",
            "alert 'hot': pattern: patterns compare % or ms, not reading",
        ),
    ];
    for (rest, want) in cases {
        let e = parse(&format!("{head}{rest}")).unwrap_err();
        assert!(e.starts_with(want), "{rest}: {e}");
    }
    let e = parse("[[alert]]\nname = \"l\"\nmetric = \"loss_pct\"\nabove = 1\nprobe = \"r1\"\n")
        .unwrap_err();
    assert_eq!(e, "alert 'l': probe: only with metric = \"reading\"");
}
