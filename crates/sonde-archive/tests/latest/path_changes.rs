//! A path's route changes, found as traces are kept, on both backends (a
//! SQLite file and the PostgreSQL on this machine): a trace is compared
//! with the one before it on the same path and with the same probes; a
//! hop that did not answer is a wildcard (what an earlier trace heard
//! there stands for it), a hop that answered from another router is a
//! change, kept with both routes and the first hop that differs.

use crate::common::on_both;
use sonde_archive::Placement;
use sonde_model::{
    HostEnv, TestEnv, TestResult, TestSpec, Timestamp, TraceFigures, TraceProto, TraceSpec,
};
use std::net::IpAddr;
use std::time::{Duration, UNIX_EPOCH};

const SOURCE: &str = "2001:db8:1::1";
const TARGET: &str = "2001:db8:9::9";

/// A trace from SOURCE to TARGET at `at_s` whose hops answered from
/// `route` (`None`: no answer), the last being the target.
fn trace(at_s: u64, proto: TraceProto, route: &[Option<&str>]) -> TestResult {
    let spec = TraceSpec {
        host: TARGET.into(),
        proto,
        ..TraceSpec::default()
    };
    let env = TestEnv {
        client: HostEnv::default(),
        server: HostEnv::default(),
        peer: None,
        source: Some(SOURCE.parse().unwrap()),
        target: Some(TARGET.parse().unwrap()),
        method: None,
    };
    let mut r = TestResult::new(
        TestSpec::Trace(spec),
        env,
        Timestamp(UNIX_EPOCH + Duration::from_secs(at_s)),
    );
    let route: Vec<Option<IpAddr>> = route
        .iter()
        .map(|a| a.map(|a| a.parse().unwrap()))
        .collect();
    r.trace = Some(TraceFigures::of_route(TARGET.parse().unwrap(), &route));
    r
}

fn ip(a: &str) -> Option<IpAddr> {
    Some(a.parse().unwrap())
}

#[test]
fn a_trace_that_takes_another_route_is_a_change_and_a_silent_hop_is_not() {
    on_both("pathchg", |open, _| {
        let mut s = open();
        let here = Placement::default();
        let first = trace(
            100,
            TraceProto::Icmp,
            &[Some("::a"), Some("::b"), Some(TARGET)],
        );
        let silent = trace(200, TraceProto::Icmp, &[Some("::a"), None, Some(TARGET)]);
        let moved = trace(
            300,
            TraceProto::Icmp,
            &[Some("::a"), Some("::c"), Some(TARGET)],
        );
        // Another kind of probe is another comparison: TCP's first.
        let tcp = trace(
            400,
            TraceProto::Tcp,
            &[Some("::a"), Some("::d"), Some(TARGET)],
        );
        for r in [&first, &silent, &moved, &tcp] {
            assert!(s.put_result(r, &here).unwrap());
        }
        let changes = s.path_changes(None, 100).unwrap();
        assert_eq!(changes.len(), 1, "{changes:?}");
        let c = &changes[0];
        // Compared with the trace before it, the silent one, whose hop 2
        // is taken from the first: ::b there, ::c now.
        assert_eq!(c.result_id, moved.id.to_string());
        assert_eq!(c.previous_id, silent.id.to_string());
        assert_eq!(c.at_hop, 2);
        assert_eq!(c.before, [ip("::a"), ip("::b"), ip(TARGET)]);
        assert_eq!(c.after, [ip("::a"), ip("::c"), ip(TARGET)]);
        assert_eq!(
            (c.source_addr.as_deref(), c.target_addr.as_str()),
            (Some(SOURCE), TARGET)
        );
        assert!(s
            .path_changes(Some("2001:db8:9::8"), 100)
            .unwrap()
            .is_empty());
        // Kept again (a forwarded copy), nothing new is found.
        assert!(!s.put_result(&moved, &here).unwrap());
        assert_eq!(s.path_changes(Some(TARGET), 100).unwrap().len(), 1);
    });
}
