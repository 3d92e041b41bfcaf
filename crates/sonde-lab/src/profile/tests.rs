//! The profile readers and checks, against known inputs.

use super::*;
use sonde_model::UnitError;
use ProfileError as P;

/// The direction keys `text` (TOML), read.
pub(super) fn read(text: &str) -> Result<DirectionProfile, ProfileError> {
    DirectionProfile::from_table(&toml::from_str::<Table>(text).unwrap())
}

/// The direction keys `text`, read and checked.
fn checked(text: &str) -> Result<DirectionProfile, ProfileError> {
    let p = read(text)?;
    p.check()?;
    Ok(p)
}

fn key_of(e: &ProfileError) -> &str {
    match e {
        P::UnknownKey { key, .. }
        | P::MissingKey { key, .. }
        | P::WrongType { key, .. }
        | P::BadRate { key, .. }
        | P::BadSize { key, .. }
        | P::BadDuration { key, .. }
        | P::BadPercentage { key, .. }
        | P::PercentageOutOfRange { key, .. }
        | P::BadInteger { key, .. }
        | P::BadQueue { key, .. }
        | P::BadDscp { key, .. }
        | P::BadPrefix { key, .. }
        | P::UnknownChoice { key, .. }
        | P::BadPoliceAction { key, .. }
        | P::RateTooLow { key, .. }
        | P::PolicerBurstTooSmall { key, .. } => key,
        other => panic!("{other:?} names no key"),
    }
}

#[test]
fn every_key_reads() {
    // Read, not checked: a policer and filtering do not go together.
    let p = read(
        r#"
        rate = "155M"
        queue_ms = 20
        loss = { p = "1%", r = 0.25 }
        delay = "10ms 500us"
        jitter = "1ms"
        jitter_dist = "normal"
        line_rate = 2000000
        duplicate = "0.5%"
        reorder = 0.02
        policer = [{ rate = "7.75M", burst = "15K", dscp = "EF", protocol = "tcp", action = "remark:CS1", punish = "5%" }]
        diffserv = { priority = ["EF", 40], lbe = ["CS1"], lbe_min = "2%" }
        marking = "filter"
        ef_from = ["2001:2::/48", "198.18.0.0/15"]
        "#,
    )
    .unwrap();
    assert_eq!(p.rate, Some(Rate::from_bps(155_000_000)));
    assert_eq!(p.queue_ms, Some(20));
    assert_eq!(p.delay, Some(Duration::from_micros(10_500)));
    assert_eq!(p.jitter_dist, Some(JitterDist::Normal));
    assert_eq!(p.line_rate, Some(Rate::from_bps(2_000_000)));
    assert_eq!(p.reorder, Some(Probability(0.02)));
    let g = match p.loss {
        Some(LossSpec::Gilbert(g)) => g,
        other => panic!("{other:?}"),
    };
    assert_eq!((g.p, g.r, g.loss_good, g.loss_bad), (0.01, 0.25, 0.0, 1.0));
    let pol = &p.policer.as_ref().unwrap()[0];
    assert_eq!(pol.burst_bytes(), 15 * 1024);
    assert_eq!(pol.protocol, Some(PolicedProtocol::Tcp));
    assert_eq!(
        pol.action,
        Some(PoliceAction::Remark(Dscp::new(8).unwrap()))
    );
    let d = p.diffserv.as_ref().unwrap();
    assert_eq!(d.priority_dscps(), vec![Dscp::EF, Dscp::new(40).unwrap()]);
    assert_eq!(d.lbe_share(), 0.02);
    assert_eq!(p.marking, Some(Marking::Filter));
    assert_eq!(p.ef_from.as_ref().map(Vec::len), Some(2));
    // Queues: packets, bytes, a bare number of packets.
    for (text, limit) in [
        ("\"100p\"", QueueLimit::Packets(100)),
        ("\"100 packets\"", QueueLimit::Packets(100)),
        ("\"64K\"", QueueLimit::Bytes(65_536)),
        ("50", QueueLimit::Packets(50)),
    ] {
        assert_eq!(read(&format!("queue = {text}")).unwrap().queue, Some(limit));
    }
    assert_eq!(
        read("loss = 0.01").unwrap().loss,
        Some(LossSpec::Random(0.01))
    );
}

#[test]
fn a_bare_number_of_seconds_is_a_duration_as_everywhere() {
    let p = read("delay = 0.02\njitter = \"1ms\"").unwrap();
    assert_eq!(p.delay, Some(Duration::from_millis(20)));
    assert_eq!(p.jitter, Some(Duration::from_millis(1)));
}

#[test]
fn a_value_that_cannot_be_read_names_its_key_and_value() {
    let e = read("delay = \"soon\"").unwrap_err();
    assert_eq!(
        e,
        P::BadDuration {
            key: "delay".into(),
            value: "soon".into()
        }
    );
    assert!(matches!(
        read("jitter = \"5 parsecs\"").unwrap_err(),
        P::BadDuration { key, value } if key == "jitter" && value == "5 parsecs"
    ));
    assert!(matches!(
        read("rate = \"fast\"").unwrap_err(),
        P::BadRate { key, source: UnitError::Malformed { input, .. } }
            if key == "rate" && input == "fast"
    ));
    assert!(matches!(
        read("line_rate = -5").unwrap_err(),
        P::BadRate { key, .. } if key == "line_rate"
    ));
    assert_eq!(
        read("loss = \"150%\"").unwrap_err(),
        P::PercentageOutOfRange {
            key: "loss".into(),
            value: "150%".into()
        }
    );
    assert_eq!(
        read("duplicate = 1.5").unwrap_err(),
        P::PercentageOutOfRange {
            key: "duplicate".into(),
            value: "1.5".into()
        }
    );
    assert_eq!(
        read("reorder = \"abc\"").unwrap_err(),
        P::BadPercentage {
            key: "reorder".into(),
            value: "abc".into()
        }
    );
    assert_eq!(
        read("queue_ms = -1").unwrap_err(),
        P::BadInteger {
            key: "queue_ms".into(),
            value: "-1".into()
        }
    );
    for q in ["\"lots\"", "\"0p\"", "0"] {
        assert!(
            matches!(read(&format!("queue = {q}")).unwrap_err(), P::BadQueue { key, .. } if key == "queue"),
            "{q}"
        );
    }
    assert_eq!(
        read("jitter_dist = \"wobbly\"").unwrap_err(),
        P::UnknownChoice {
            key: "jitter_dist".into(),
            value: "wobbly".into(),
            choices: "\"uniform\", \"normal\" or \"pareto-normal\""
        }
    );
    assert!(matches!(
        read("marking = \"paint\"").unwrap_err(),
        P::UnknownChoice { key, .. } if key == "marking"
    ));
    assert_eq!(
        read("ef_from = [\"2001:2::/48\", \"nope\"]").unwrap_err(),
        P::BadPrefix {
            key: "ef_from[2]".into(),
            value: "nope".into()
        }
    );
    assert!(matches!(
        read("speed = 1").unwrap_err(),
        P::UnknownKey { key, .. } if key == "speed"
    ));
    // The wrong TOML type.
    for (text, key, found) in [
        ("loss = [1]", "loss", "array"),
        ("queue = true", "queue", "boolean"),
        ("delay = { ms = 1 }", "delay", "table"),
        ("policer = { rate = \"1M\" }", "policer", "table"),
        ("policer = [\"1M\"]", "policer[1]", "string"),
        ("diffserv = \"EF\"", "diffserv", "string"),
        ("ef_from = \"2001:2::/48\"", "ef_from", "string"),
        ("jitter_dist = 1", "jitter_dist", "integer"),
    ] {
        assert!(
            matches!(read(text).unwrap_err(), P::WrongType { key: k, found: f, .. } if k == key && f == found),
            "{text}"
        );
    }
}

#[test]
fn nested_keys_are_named_by_their_path() {
    assert_eq!(
        read("loss = { p = \"1%\" }").unwrap_err(),
        P::MissingKey {
            key: "loss.r".into(),
            why: "Gilbert-Elliott loss needs p (good→bad) and r (bad→good), per packet"
        }
    );
    assert!(matches!(
        read("loss = { p = \"1%\", r = 0.3, q = 1 }").unwrap_err(),
        P::UnknownKey { key, .. } if key == "loss.q"
    ));
    assert!(matches!(
        read("loss = { p = \"1%\", r = \"300%\" }").unwrap_err(),
        P::PercentageOutOfRange { key, value } if key == "loss.r" && value == "300%"
    ));
    assert!(matches!(
        read("policer = [{ rate = \"1M\" }, { burst = 3000 }]").unwrap_err(),
        P::MissingKey { key, .. } if key == "policer[2].rate"
    ));
    assert!(matches!(
        read("policer = [{ rate = \"1M\", colour = \"red\" }]").unwrap_err(),
        P::UnknownKey { key, .. } if key == "policer[1].colour"
    ));
    assert_eq!(
        read("policer = [{ rate = \"1M\", action = \"shout\" }]").unwrap_err(),
        P::BadPoliceAction {
            key: "policer[1].action".into(),
            value: "shout".into()
        }
    );
    assert!(matches!(
        read("policer = [{ rate = \"1M\", action = \"remark:QQ\" }]").unwrap_err(),
        P::BadDscp { key, .. } if key == "policer[1].action"
    ));
    assert!(matches!(
        read("policer = [{ rate = \"1M\", dscp = \"XX\" }]").unwrap_err(),
        P::BadDscp { key, .. } if key == "policer[1].dscp"
    ));
    assert!(matches!(
        read("policer = [{ rate = \"1M\", protocol = \"icmp\" }]").unwrap_err(),
        P::UnknownChoice { key, .. } if key == "policer[1].protocol"
    ));
    assert!(matches!(
        read("policer = [{ rate = \"1M\", burst = \"big\" }]").unwrap_err(),
        P::BadSize { key, .. } if key == "policer[1].burst"
    ));
    assert!(matches!(
        read("policer = [{ rate = \"fast\" }]").unwrap_err(),
        P::BadRate { key, .. } if key == "policer[1].rate"
    ));
    assert!(matches!(
        read("policer = [{ rate = \"1M\", punish = \"200%\" }]").unwrap_err(),
        P::PercentageOutOfRange { key, .. } if key == "policer[1].punish"
    ));
    assert!(matches!(
        read("diffserv = { lbe = [\"CS1\", 64] }").unwrap_err(),
        P::BadDscp { key, .. } if key == "diffserv.lbe[2]"
    ));
    assert!(matches!(
        read("diffserv = { lbe_min = \"x\" }").unwrap_err(),
        P::BadPercentage { key, .. } if key == "diffserv.lbe_min"
    ));
    assert!(matches!(
        read("diffserv = { share = 1 }").unwrap_err(),
        P::UnknownKey { key, .. } if key == "diffserv.share"
    ));
}

#[test]
fn keys_that_do_not_go_together_are_each_their_own_kind() {
    let err = |text: &str| checked(text).unwrap_err();
    assert_eq!(
        err("delay = \"11s\""),
        P::DelayTooLong {
            delay: Duration::from_secs(11)
        }
    );
    assert_eq!(
        err("delay = \"10ms\"\njitter = \"20ms\""),
        P::JitterAboveDelay {
            jitter: Duration::from_millis(20),
            delay: Duration::from_millis(10)
        }
    );
    // Normal jitter may exceed the delay.
    assert!(checked("delay = \"10ms\"\njitter = \"20ms\"\njitter_dist = \"normal\"").is_ok());
    assert_eq!(
        err("rate = \"1k\""),
        P::RateTooLow {
            key: "rate".into(),
            bps: 1000
        }
    );
    assert!(matches!(err("line_rate = 100"), P::RateTooLow { key, .. } if key == "line_rate"));
    assert_eq!(err("queue = \"10p\"\nqueue_ms = 5"), P::QueueAndQueueMs);
    assert_eq!(err("reorder = \"5%\""), P::ReorderWithoutDelay);
    assert_eq!(err("diffserv = {}"), P::DiffservWithoutRate);
    assert_eq!(
        err("rate = \"10M\"\ndiffserv = { lbe_min = \"100%\" }"),
        P::LbeShareTooHigh { lbe_min: 1.0 }
    );
    assert_eq!(
        err("rate = \"10M\"\ndiffserv = { lbe = [\"EF\"] }"),
        P::DscpInPriorityAndLbe { dscp: Dscp::EF }
    );
    assert_eq!(err("marking = \"filter\""), P::FilterWithoutEfFrom);
    assert_eq!(err("ef_from = [\"2001:2::/48\"]"), P::EfFromWithoutFilter);
    assert_eq!(
        err("marking = \"trust\"\nef_from = [\"2001:2::/48\"]"),
        P::EfFromWithoutFilter
    );
    assert_eq!(
        err("policer = [{ rate = \"1M\" }, { rate = \"1k\" }]"),
        P::RateTooLow {
            key: "policer[2].rate".into(),
            bps: 1000
        }
    );
    assert_eq!(
        err("policer = [{ rate = \"1M\", burst = 1000 }]"),
        P::PolicerBurstTooSmall {
            key: "policer[1].burst".into(),
            burst: 1000
        }
    );
    for marking in [Marking::Reset, Marking::Filter] {
        let e = err(&format!(
            "policer = [{{ rate = \"1M\" }}]\nmarking = \"{}\"\n{}",
            marking.name(),
            if marking == Marking::Filter {
                "ef_from = [\"2001:2::/48\"]"
            } else {
                ""
            }
        ));
        assert_eq!(e, P::PolicerBeforeMarking { marking });
    }
    // An empty list of policers is no policer.
    assert!(checked("policer = []\nmarking = \"reset\"").is_ok());
}

#[test]
fn every_read_error_names_a_key() {
    for text in [
        "speed = 1",
        "loss = { p = \"1%\" }",
        "loss = [1]",
        "rate = \"x\"",
        "policer = [{ rate = \"1M\", burst = \"x\" }]",
        "delay = \"x\"",
        "duplicate = \"x\"",
        "duplicate = 2",
        "queue_ms = \"x\"",
        "queue = \"x\"",
        "policer = [{ rate = \"1M\", dscp = 99 }]",
        "ef_from = [\"x\"]",
        "marking = \"x\"",
        "policer = [{ rate = \"1M\", action = \"x\" }]",
    ] {
        let e = read(text).unwrap_err();
        let key = key_of(&e);
        assert!(e.to_string().contains(key), "{text}: {e}");
    }
}

#[test]
fn a_flow_label_reads_in_decimal_or_hex_and_within_20_bits() {
    assert_eq!(read("flow_label = 0").unwrap().flow_label, Some(0));
    assert_eq!(
        read("flow_label = \"0x12345\"").unwrap().flow_label,
        Some(0x12345)
    );
    assert_eq!(
        read("flow_label = 1048575").unwrap().flow_label,
        Some(0xF_FFFF)
    );
    for bad in [
        "flow_label = 1048576",
        "flow_label = \"0xfffff1\"",
        "flow_label = \"x\"",
        "flow_label = -1",
    ] {
        assert!(
            matches!(read(bad).unwrap_err(), P::BadFlowLabel { key, .. } if key == "flow_label"),
            "{bad}"
        );
    }
}

#[test]
fn rio_reads_table_8_by_default_and_names_what_is_wrong() {
    let p = checked("line_rate = \"1M\"\nrio = {}").unwrap();
    let imp = p.impairment();
    assert_eq!(imp.rio, Some(Rio::default()));
    assert_eq!(imp.line_queue, RIO_QUEUE, "seed 004's queue of 30");
    let own = checked(
        "line_rate = \"1M\"\nline_queue = 50\n\
         rio = { red = { min = 5, max = 10.5, max_p = \"50%\" }, green = { max_p = 0 }, weight = 0.002 }",
    )
    .unwrap()
    .impairment();
    let rio = own.rio.unwrap();
    assert_eq!((rio.red.min, rio.red.max, rio.red.max_p), (5.0, 10.5, 0.5));
    assert_eq!((rio.green.min, rio.green.max_p), (11.0, 0.0));
    assert_eq!(
        (rio.yellow, rio.weight, own.line_queue),
        (Rio::default().yellow, 0.002, 50)
    );
    let plain = checked("line_rate = \"1M\"\nline_queue = 30")
        .unwrap()
        .impairment();
    assert_eq!((plain.line_queue, plain.rio), (30, None));

    let err = |text: &str| checked(text).unwrap_err();
    let named = |e: ProfileError| match e {
        P::BadLineQueue { key, .. } => key,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        named(err(
            "line_rate = \"1M\"\nrio = { red = { min = 9, max = 8 } }"
        )),
        "rio.red"
    );
    assert_eq!(
        named(err("line_rate = \"1M\"\nrio = { yellow = { min = -1 } }")),
        "rio.yellow.min"
    );
    assert_eq!(
        named(err("line_rate = \"1M\"\nrio = { weight = 0 }")),
        "rio.weight"
    );
    assert_eq!(
        named(err("line_rate = \"1M\"\nline_queue = 0")),
        "line_queue"
    );
    assert!(matches!(
        err("line_rate = \"1M\"\nrio = { blue = {} }"),
        P::UnknownKey { key, .. } if key == "rio.blue"
    ));
    assert!(matches!(
        err("line_rate = \"1M\"\nrio = { green = { max_p = \"150%\" } }"),
        P::PercentageOutOfRange { key, .. } if key == "rio.green.max_p"
    ));
    assert!(matches!(
        err("rio = {}"),
        P::LineQueueWithoutLineRate { key: "rio" }
    ));
    assert!(matches!(
        err("rate = \"1M\"\nline_queue = 30"),
        P::LineQueueWithoutLineRate { key: "line_queue" }
    ));
    assert!(
        err("line_rate = \"1M\"\nrio = { red = { min = 9, max = 8 } }")
            .to_string()
            .contains("rio.red: min must be below max")
    );
}
