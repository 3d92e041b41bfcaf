use super::*;
use crate::scripted::{method_events, Limit, PathDir, ScriptedPath, StopAfter};
use sonde_model::method::{Metric, RepeatRule, StepPlan};
use sonde_model::{IpFamily, Rate, TcpSpec, UdpSpec};
use std::time::Duration;

fn udp(family: IpFamily, direction: Direction) -> TestSpec {
    UdpSpec {
        host: "path".into(),
        bitrate: Rate::from_bps(20_000_000),
        length: 64,
        family,
        direction,
        time: Duration::from_secs(1),
        ..UdpSpec::default()
    }
    .into()
}

fn repeat(test: TestSpec, repeat: RepeatRule, families: Vec<IpFamily>) -> RepeatSpec {
    RepeatSpec {
        test,
        step: StepPlan {
            repeat,
            families,
            ..StepPlan::default()
        },
    }
}

fn quiet(dir: PathDir) -> PathDir {
    PathDir {
        noise_pct: 0.0,
        ..dir
    }
}

fn run(path: &ScriptedPath, spec: &RepeatSpec) -> Result<MethodResult, MethodError> {
    run_repeat(path, spec, &Stop::new(), &Events::new())
}

#[test]
fn three_runs_over_both_families_kept_counted_and_compared() {
    let path = ScriptedPath::symmetric(quiet(PathDir::new(Limit::Policer, 10e6)));
    let spec = repeat(
        udp(IpFamily::Any, Direction::Forward),
        RepeatRule::Times { runs: 3 },
        vec![IpFamily::V6, IpFamily::V4],
    );
    let r = run(&path, &spec).unwrap();
    assert_eq!(r.method, sonde_model::MethodKind::Repeat);
    assert!(!r.interrupted);
    // Every run, in the order it ran: 6, 4, 6, 4, 6, 4.
    let fams: Vec<IpFamily> = r.trials.iter().map(|t| t.spec.family()).collect();
    use IpFamily::{V4, V6};
    assert_eq!(fams, [V6, V4, V6, V4, V6, V4]);
    let outcome = r.runs.as_ref().unwrap();
    assert_eq!(outcome.metric, Metric::ThroughputBps);
    assert_eq!(outcome.stats.len(), 2);
    for s in &outcome.stats {
        assert_eq!(s.result_ids.len(), 3);
        for id in &s.result_ids {
            assert_eq!(r.trial(*id).unwrap().spec.family(), s.family);
        }
        let tp = s.stats["throughput_bps"];
        assert_eq!(tp.n, 3);
        let mean = s
            .result_ids
            .iter()
            .map(|id| {
                r.trial(*id)
                    .unwrap()
                    .summary
                    .headline()
                    .unwrap()
                    .throughput_bps
                    .unwrap() as f64
            })
            .sum::<f64>()
            / 3.0;
        assert!((tp.mean - mean).abs() < 1e-6);
    }
    // A policer on IP bytes: IPv6 carries 64/112 of it, IPv4 64/92.
    let tp = r
        .family_ratios
        .iter()
        .find(|f| f.metric == Metric::ThroughputBps && f.at.is_none())
        .unwrap();
    assert!((tp.ratio - 92.0 / 112.0).abs() < 1e-3, "{tp:?}");
}

#[test]
fn both_directions_at_once_are_read_per_direction() {
    let path = ScriptedPath::new(
        quiet(PathDir::new(Limit::Policer, 10e6)),
        quiet(PathDir::new(Limit::Policer, 5e6)),
    );
    let spec = repeat(
        udp(IpFamily::Any, Direction::Bidir),
        RepeatRule::Times { runs: 2 },
        vec![IpFamily::V6, IpFamily::V4],
    );
    let r = run(&path, &spec).unwrap();
    let outcome = r.runs.unwrap();
    let of = |fam, d| {
        outcome
            .stats
            .iter()
            .find(|s| s.family == fam && s.direction == Some(d))
            .unwrap()
            .stats["throughput_bps"]
            .mean
    };
    let (f6, r6) = (
        of(IpFamily::V6, Direction::Forward),
        of(IpFamily::V6, Direction::Reverse),
    );
    assert!((f6 / r6 - 2.0).abs() < 1e-3, "forward {f6} reverse {r6}");
    for at in ["forward", "reverse"] {
        let ratio = r
            .family_ratios
            .iter()
            .find(|f| f.metric == Metric::ThroughputBps && f.at.as_deref() == Some(at))
            .unwrap();
        assert!((ratio.ratio - 92.0 / 112.0).abs() < 1e-3, "{ratio:?}");
    }
}

#[test]
fn one_family_of_its_own_gives_no_ratio() {
    let path = ScriptedPath::symmetric(quiet(PathDir::new(Limit::Policer, 10e6)));
    let spec = repeat(
        udp(IpFamily::Any, Direction::Forward),
        RepeatRule::Times { runs: 2 },
        vec![],
    );
    let r = run(&path, &spec).unwrap();
    let outcome = r.runs.unwrap();
    assert_eq!(outcome.stats.len(), 1);
    assert_eq!(outcome.stats[0].family, IpFamily::Any);
    assert!(r.family_ratios.is_empty());
    assert_eq!(r.trials.len(), 2);
}

#[test]
fn broken_plans_are_refused_by_field_before_any_run() {
    let path = ScriptedPath::symmetric(PathDir::new(Limit::Policer, 10e6));
    let field = |spec: RepeatSpec| match run(&path, &spec) {
        Err(e @ MethodError::Invalid { field, .. }) => {
            assert!(e.is_usage());
            field
        }
        other => panic!("{other:?}"),
    };
    let test = udp(IpFamily::Any, Direction::Forward);
    let until = |min_runs, max_runs| RepeatRule::UntilStable {
        stddev_pct: 0.5,
        min_runs,
        max_runs,
    };
    assert_eq!(
        field(repeat(test.clone(), until(30, 10), vec![])),
        "step.repeat.min_runs"
    );
    assert_eq!(
        field(repeat(test.clone(), until(1, 10), vec![])),
        "step.repeat.min_runs"
    );
    assert_eq!(
        field(repeat(test.clone(), RepeatRule::Times { runs: 0 }, vec![])),
        "step.repeat.runs"
    );
    assert_eq!(
        field(repeat(
            test.clone(),
            RepeatRule::Once,
            vec![IpFamily::V6, IpFamily::V6]
        )),
        "step.families"
    );
    // -4 and --families 6,4 say two things.
    assert_eq!(
        field(repeat(
            udp(IpFamily::V4, Direction::Forward),
            RepeatRule::Once,
            vec![IpFamily::V6, IpFamily::V4]
        )),
        "step.families"
    );
    assert_eq!(path.trials(), 0);
}

#[test]
fn until_stable_on_a_figure_the_test_lacks_is_a_usage_error() {
    let path = ScriptedPath::symmetric(PathDir::new(Limit::Policer, 10e6));
    let tcp: TestSpec = TcpSpec {
        host: "path".into(),
        time: Duration::from_secs(1),
        ..TcpSpec::default()
    }
    .into();
    let mut spec = repeat(
        tcp,
        RepeatRule::UntilStable {
            stddev_pct: 1.0,
            min_runs: 3,
            max_runs: 50,
        },
        vec![],
    );
    spec.step.metric = Some(Metric::JitterMs);
    match run(&path, &spec) {
        Err(MethodError::Invalid {
            field: "metric", ..
        }) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(path.trials(), 1, "found out at the first run, not the 50th");
}

#[test]
fn until_stable_judges_the_named_metric() {
    // Behind a noisy policer throughput wanders while the one-way delay
    // holds: until-stable on delay_ms settles at min_runs.
    let mut dir = PathDir::new(Limit::Policer, 10e6);
    dir.noise_pct = 5.0;
    let path = ScriptedPath::symmetric(dir);
    let mut spec = repeat(
        udp(IpFamily::V6, Direction::Forward),
        RepeatRule::UntilStable {
            stddev_pct: 0.5,
            min_runs: 4,
            max_runs: 20,
        },
        vec![],
    );
    spec.step.metric = Some(Metric::DelayMs);
    let r = run(&path, &spec).unwrap();
    assert_eq!(r.trials.len(), 4);
    let stats = &r.runs.unwrap().stats[0];
    assert_eq!(stats.stable, Some(true));
    assert!(stats.stats["throughput_bps"].stddev_pct > 0.5, "{stats:?}");
}

#[test]
fn a_stop_ends_after_the_run_in_progress_with_what_ran() {
    let path = ScriptedPath::symmetric(PathDir::new(Limit::Policer, 10e6));
    let spec = repeat(
        udp(IpFamily::Any, Direction::Forward),
        RepeatRule::Times { runs: 10 },
        vec![],
    );
    let stop = Stop::new();
    let runner = StopAfter::new(&path, &stop, 2);
    let (r, heard) = method_events(|events| run_repeat(&runner, &spec, &stop, events));
    let r = r.unwrap();
    assert_eq!(heard.len(), 2);
    assert!(r.interrupted);
    assert_eq!(r.trials.len(), 2);
    assert_eq!(r.runs.unwrap().stats[0].stats["throughput_bps"].n, 2);
}
