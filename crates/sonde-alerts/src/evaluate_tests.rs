//! The evaluator on a real archive (a SQLite file): a `path_changed` rule
//! raises when a kept trace took another route than the trace before it,
//! and clears with the next trace on the route it is on now.

use super::*;
use crate::config::{rules, RuleConfig};
use sonde_archive::Placement;
use sonde_model::{HostEnv, TestEnv, TestResult, TestSpec, Timestamp, TraceFigures, TraceSpec};
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

#[test]
fn a_route_change_raises_a_path_changed_alert_and_the_next_trace_clears_it() {
    #[derive(serde::Deserialize)]
    struct File {
        alert: Vec<RuleConfig>,
    }
    let file: File = toml::from_str(
        "[[alert]]\nname = \"moved\"\nmetric = \"path_changed\"\ntest = \"trace\"\n",
    )
    .unwrap();
    let rules = rules(&file.alert).unwrap();
    assert_eq!(
        rules[0].describe(),
        "path_changed > 0.5 for 1 run(s), clears < 0.5 for 1"
    );
    let dir = std::env::temp_dir().join(format!("sonde-alerts-{}-moved", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut store = Store::open(&dir.join("a.db").display().to_string()).unwrap();
    store.queue_from_now(QUEUE).unwrap();
    let mut evaluator = Evaluator::new(rules, &mut store).unwrap();
    let mut edges = Vec::new();
    for (at, via) in [(100, "::b"), (200, "::b"), (300, "::c"), (400, "::c")] {
        store
            .put_result(&trace(at, via), &Placement::default())
            .unwrap();
        let (notices, taken) = evaluator.step(&mut store).unwrap();
        assert_eq!(taken, 1);
        edges.extend(notices.into_iter().map(|n| (at, n.edge, n.event.value)));
    }
    assert_eq!(
        edges,
        [
            (300, Edge::Raised, Some(1.0)),
            (400, Edge::Cleared, Some(0.0))
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}
