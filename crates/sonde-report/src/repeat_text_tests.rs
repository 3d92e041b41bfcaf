use super::*;
use sonde_model::method::{RepeatOutcome, RepeatSpec, StepPlan};
use sonde_model::{HostEnv, PeerKind, TestEnv, TestSpec, Timestamp, UdpSpec};
use std::collections::BTreeMap;

fn stats(mean: f64) -> Stats {
    Stats {
        n: 3,
        mean,
        stddev: mean / 100.0,
        stddev_pct: 1.0,
        ci95: Some(4.303 * mean / 100.0 / 3f64.sqrt()),
        min: mean * 0.99,
        max: mean * 1.01,
    }
}

#[test]
fn the_summary_shows_each_family_and_the_ratio() {
    let spec = RepeatSpec {
        test: TestSpec::Udp(UdpSpec::default()),
        step: StepPlan {
            repeat: RepeatRule::Times { runs: 3 },
            ..StepPlan::default()
        },
    };
    let mut r = MethodResult::new(MethodSpec::Repeat(spec), Timestamp::now());
    let fam = |family, mean| StepStats {
        family,
        direction: None,
        result_ids: Vec::new(),
        stable: None,
        stats: BTreeMap::from([("throughput_bps".to_string(), stats(mean))]),
    };
    r.runs = Some(RepeatOutcome {
        metric: Metric::ThroughputBps,
        stats: vec![fam(IpFamily::V6, 5.7e6), fam(IpFamily::V4, 6.9e6)],
    });
    r.family_ratios = vec![FamilyRatio {
        metric: Metric::ThroughputBps,
        at: None,
        ipv6: 5.7e6,
        ipv4: 6.9e6,
        ratio: 5.7 / 6.9,
    }];
    let text = repeat_summary(&r);
    assert!(text.contains("Repeated: 3 runs"), "{text}");
    assert!(text.contains("IPv6: 0 runs"), "{text}");
    assert!(text.contains("IPv4: 0 runs"), "{text}");
    assert!(text.contains("5.70 Mbit/s"), "{text}");
    assert!(text.contains("0.8261"), "{text}");
}

#[test]
fn a_run_line_names_the_family_the_run_used() {
    let mut env = TestEnv::between(HostEnv::default(), HostEnv::default(), PeerKind::Sonde);
    env.target = Some("::1".parse().unwrap());
    let mut r = TestResult::new(TestSpec::Udp(UdpSpec::default()), env, Timestamp::now());
    r.summary.forward = Some(Figures {
        throughput_bps: Some(9_410_000),
        loss_pct: Some(0.25),
        ..Figures::default()
    });
    let line = run_line(2, &r);
    assert!(line.starts_with("run   2  IPv6"), "{line}");
    assert!(line.contains("throughput 9.41 Mbit/s"), "{line}");
    assert!(line.contains("loss 0.250 %"), "{line}");
}
