//! The evaluator on a real archive (a SQLite file): a `path_changed` rule
//! raises when a kept trace took another route than the trace before it,
//! and clears with the next trace on the route it is on now; a rule on a
//! registry metric no alert code names (the longest loss burst) raises
//! and clears from the figures the archive indexed.

use super::*;
use crate::config::{rules, RuleConfig};
use sonde_archive::Placement;
use sonde_model::{
    Direction, Figures, HostEnv, Summary, TestEnv, TestResult, TestSpec, Timestamp, TraceFigures,
    TraceSpec, UdpSpec,
};
use std::net::IpAddr;
use std::time::{Duration, UNIX_EPOCH};

const TARGET: &str = "2001:db8:9::9";

/// A trace toward TARGET at `at_s` through `via` (its second hop).
fn trace(at_s: u64, via: &str) -> TestResult {
    let mut env = TestEnv::between(
        HostEnv::default(),
        HostEnv::default(),
        sonde_model::PeerKind::Sonde,
    );
    env.peer = None;
    env.source = Some("2001:db8:1::1".parse().unwrap());
    env.target = Some(TARGET.parse().unwrap());
    let spec = TraceSpec {
        host: TARGET.into(),
        ..TraceSpec::default()
    };
    let mut r = TestResult::new(
        TestSpec::Trace(spec),
        env,
        Timestamp(UNIX_EPOCH + Duration::from_secs(at_s)),
    );
    let route: Vec<Option<IpAddr>> = ["2001:db8:4::1", via, TARGET]
        .iter()
        .map(|a| Some(a.parse().unwrap()))
        .collect();
    r.trace = Some(TraceFigures::of_route(TARGET.parse().unwrap(), &route));
    r
}

/// The rule written in `toml` evaluated on a fresh SQLite archive as
/// each of `results` is kept in turn: the notices' (time, edge, value).
fn edges_of(toml: &str, results: Vec<(u64, TestResult)>) -> Vec<(u64, Edge, Option<f64>)> {
    #[derive(serde::Deserialize)]
    struct File {
        alert: Vec<RuleConfig>,
    }
    let file: File = toml::from_str(toml).unwrap();
    let rules = rules(&file.alert).unwrap();
    let dir = std::env::temp_dir().join(format!(
        "sonde-alerts-{}-{}",
        std::process::id(),
        rules[0].name
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut store = Store::open(&dir.join("a.db").display().to_string()).unwrap();
    store.queue_from_now(QUEUE).unwrap();
    let mut evaluator = Evaluator::new(rules, &mut store).unwrap();
    let mut edges = Vec::new();
    for (at, r) in results {
        store.put_result(&r, &Placement::default()).unwrap();
        let (notices, taken) = evaluator.step(&mut store).unwrap();
        assert_eq!(taken, 1);
        edges.extend(notices.into_iter().map(|n| (at, n.edge, n.event.value)));
    }
    let _ = std::fs::remove_dir_all(&dir);
    edges
}

#[test]
fn a_route_change_raises_a_path_changed_alert_and_the_next_trace_clears_it() {
    let toml = "[[alert]]\nname = \"moved\"\nmetric = \"path_changed\"\ntest = \"trace\"\n";
    #[derive(serde::Deserialize)]
    struct File {
        alert: Vec<RuleConfig>,
    }
    let file: File = toml::from_str(toml).unwrap();
    assert_eq!(
        rules(&file.alert).unwrap()[0].describe(),
        "path_changed > 0.5 for 1 run(s), clears < 0.5 for 1"
    );
    let traces = [(100, "::b"), (200, "::b"), (300, "::c"), (400, "::c")]
        .into_iter()
        .map(|(at, via)| (at, trace(at, via)))
        .collect();
    assert_eq!(
        edges_of(toml, traces),
        [
            (300, Edge::Raised, Some(1.0)),
            (400, Edge::Cleared, Some(0.0))
        ]
    );
}

/// A UDP test toward TARGET at `at_s` whose longest loss burst was `burst`.
fn udp(at_s: u64, burst: u64) -> TestResult {
    let mut env = TestEnv::between(
        HostEnv::default(),
        HostEnv::default(),
        sonde_model::PeerKind::Sonde,
    );
    env.source = Some("2001:db8:1::1".parse().unwrap());
    env.target = Some(TARGET.parse().unwrap());
    let spec = UdpSpec {
        host: TARGET.into(),
        ..UdpSpec::default()
    };
    let mut r = TestResult::new(
        TestSpec::Udp(spec),
        env,
        Timestamp(UNIX_EPOCH + Duration::from_secs(at_s)),
    );
    r.summary = Summary {
        forward: Some(Figures {
            direction: Some(Direction::Forward),
            loss_burst_max: Some(burst),
            ..Figures::default()
        }),
        ..Summary::default()
    };
    r
}

#[test]
fn a_rule_on_any_registry_metric_raises_and_clears() {
    let toml = "[[alert]]\nname = \"outage\"\nmetric = \"loss_burst_max\"\nabove = 20\nfor = 2\n";
    // Two bad runs in a row raise it, two good ones (by default) clear it.
    let results = [
        (100, 3),
        (200, 50),
        (300, 60),
        (400, 70),
        (500, 2),
        (600, 1),
    ]
    .into_iter()
    .map(|(at, burst)| (at, udp(at, burst)))
    .collect();
    assert_eq!(
        edges_of(toml, results),
        [
            (300, Edge::Raised, Some(60.0)),
            (600, Edge::Cleared, Some(1.0))
        ]
    );
}

#[test]
fn a_rule_on_readings_raises_and_clears_on_a_routers_link_load() {
    let toml =
        "[[alert]]\nname = \"hot-link\"\nmetric = \"reading\"\nreading = \"to_b.out_util\"\n\
                probe = \"r1\"\nabove = 80\nfor = 2\nclear = 50\n";
    #[derive(serde::Deserialize)]
    struct File {
        alert: Vec<RuleConfig>,
    }
    let file: File = toml::from_str(toml).unwrap();
    let rules = rules(&file.alert).unwrap();
    assert_eq!(
        rules[0].describe(),
        "reading > 80 for 2 run(s), clears < 50 for 2"
    );
    let dir = std::env::temp_dir().join(format!("sonde-alerts-{}-readings", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut store = Store::open(&dir.join("a.db").display().to_string()).unwrap();
    store.queue_from_now(QUEUE).unwrap();
    let mut evaluator = Evaluator::new(rules, &mut store).unwrap();
    let reading = |probe: &str, metric: &str, at_s: i64, value: f64| sonde_readings::Reading {
        probe: probe.into(),
        metric: metric.into(),
        unit: "%".into(),
        value,
        at_ns: at_s * 1_000_000_000,
        with: None,
    };
    let mut edges = Vec::new();
    // Another probe's and another interface's readings are not the rule's.
    let steps: [(i64, f64); 7] = [
        (100, 10.0),
        (130, 90.0),
        (160, 95.0),
        (190, 60.0),
        (220, 40.0),
        (250, 30.0),
        (280, 20.0),
    ];
    for (at, value) in steps {
        let batch = [
            reading("r1", "to_b.out_util", at, value),
            reading("r2", "to_b.out_util", at, 99.0),
            reading("r1", "to_a.out_util", at, 99.0),
        ];
        store.put_readings(&batch, at * 1_000_000_000).unwrap();
        let (notices, taken) = evaluator.step(&mut store).unwrap();
        assert_eq!(taken, 1, "one reading of r1's to_b.out_util at {at}");
        edges.extend(notices.into_iter().map(|n| {
            assert_eq!(n.event.label, "reading to_b.out_util of r1");
            assert_eq!(n.source_host, "r1");
            (at, n.edge, n.event.value)
        }));
    }
    // Nothing new: nothing given again.
    assert_eq!(evaluator.step(&mut store).unwrap().1, 0);
    // The states go on from the archive: a new evaluator takes only what
    // came after.
    let mut again = Evaluator::new(evaluator.rules.clone(), &mut store).unwrap();
    store
        .put_readings(&[reading("r1", "to_b.out_util", 310, 97.0)], 0)
        .unwrap();
    assert_eq!(again.step(&mut store).unwrap().1, 1);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        edges,
        [
            (160, Edge::Raised, Some(95.0)),
            (250, Edge::Cleared, Some(30.0))
        ]
    );
}
