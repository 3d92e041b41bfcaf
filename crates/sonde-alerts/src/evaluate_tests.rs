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
