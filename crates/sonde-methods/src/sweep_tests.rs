//! Sweeps over the scripted path: each limiter class found where it was
//! set, each direction on its own, and the step plan applied per step.

use crate::scripted::{method_events, Limit, PathDir, ScriptedPath, StopAfter};
use crate::sweep::run_sweep;
use crate::MethodError;
use sonde_model::method::{LimiterClass, RepeatRule, StepPlan, SweepSpec, SweepVariable};
use sonde_model::{Direction, MethodKind, Rate, TcpSpec, TestSpec, UdpSpec};
use sonde_run::{Events, Stop};
use std::time::Duration;

fn udp() -> TestSpec {
    UdpSpec {
        host: "path".into(),
        length: 1400,
        time: Duration::from_secs(2),
        ..UdpSpec::default()
    }
    .into()
}

/// Rates from `from` to `to` Mbit/s by `by`.
fn rates(from: f64, to: f64, by: f64) -> SweepVariable {
    let n = ((to - from) / by).round() as usize;
    SweepVariable::Rates(
        (0..=n)
            .map(|i| Rate::from_bps(((from + by * i as f64) * 1e6).round() as u64))
            .collect(),
    )
}

fn spec(variable: SweepVariable, directions: &[Direction]) -> SweepSpec {
    SweepSpec {
        test: udp(),
        variable,
        directions: directions.to_vec(),
        gap: Duration::ZERO,
        step: StepPlan::default(),
        refine_trials: 0,
    }
}

/// The sweep's result; each step it reported on the way is one it kept.
fn sweep(path: &ScriptedPath, spec: &SweepSpec) -> sonde_model::MethodResult {
    let (r, heard) = method_events(|events| run_sweep(path, spec, &Stop::new(), events));
    let r = r.unwrap();
    let steps: Vec<_> = heard
        .into_iter()
        .map(|m| match m {
            sonde_model::MethodEvent::SweepStep(s) => s,
            other => panic!("not a sweep step: {other:?}"),
        })
        .collect();
    assert_eq!(steps, r.steps);
    r
}

fn within(got: f64, truth: f64, pct: f64) {
    assert!(
        (got - truth).abs() <= truth * pct / 100.0,
        "{got} not within {pct} % of {truth}"
    );
}

#[test]
fn an_open_path_has_no_limiter() {
    let path = ScriptedPath::symmetric(PathDir::new(Limit::None, 0.0));
    let r = sweep(
        &path,
        &spec(rates(10.0, 100.0, 10.0), &[Direction::Forward]),
    );
    assert_eq!(r.method, MethodKind::Sweep);
    assert_eq!(r.steps.len(), 10);
    assert_eq!(r.trials.len(), 10);
    assert_eq!(r.limiters.len(), 1);
    assert_eq!(r.limiters[0].class, LimiterClass::None);
    // Each step points at its trial.
    for (s, t) in r.steps.iter().zip(&r.trials) {
        assert_eq!(s.runs.result_ids, vec![t.id]);
    }
}

#[test]
fn a_shaper_with_a_queue_is_found_at_its_rate() {
    // 9 Mbit/s of frames (IPv6 1400-byte payloads: 1462-byte frames),
    // 50 ms of queue.
    let mut dir = PathDir::new(Limit::Shaper { queue_ms: 50.0 }, 9e6);
    dir.l2_bytes = 14;
    dir.noise_pct = 0.3;
    let path = ScriptedPath::symmetric(dir);
    let r = sweep(&path, &spec(rates(6.0, 12.0, 0.5), &[Direction::Forward]));
    let l = &r.limiters[0];
    assert_eq!(l.class, LimiterClass::Shaper, "{l:?}");
    // The scripted shaper's goodput counts the queue's drain in the
    // test's time (2 s + 50 ms), 2.4 % under the rate: 3 %.
    within(l.knee_bps.unwrap(), 9e6 * 1400.0 / 1462.0, 3.0);
    assert!(l.evidence.delay_rise_ms.unwrap() > 40.0, "{l:?}");
}

#[test]
fn a_policer_is_found_within_half_a_percent() {
    let mut dir = PathDir::new(Limit::Policer, 88e6);
    dir.noise_pct = 0.2;
    let path = ScriptedPath::symmetric(dir);
    let r = sweep(&path, &spec(rates(70.0, 100.0, 2.0), &[Direction::Forward]));
    let l = &r.limiters[0];
    assert_eq!(l.class, LimiterClass::Policer, "{l:?}");
    within(l.knee_bps.unwrap(), 88e6 * 1400.0 / 1448.0, 0.5);
}

#[test]
fn forward_and_reverse_are_measured_apart_and_a_punisher_refined() {
    // seed 000's GEANT: A → B punished to 5 % above 88 Mbit/s of IP
    // packets, B → A plainly policed there.
    let path = ScriptedPath::new(
        PathDir::new(Limit::Punisher { fraction: 0.05 }, 88e6),
        PathDir::new(Limit::Policer, 88e6),
    );
    let mut s = spec(
        rates(70.0, 100.0, 5.0),
        &[Direction::Forward, Direction::Reverse],
    );
    s.refine_trials = 8;
    let r = sweep(&path, &s);
    let truth = 88e6 * 1400.0 / 1448.0;
    let fwd = &r.limiters[0];
    assert_eq!(
        (fwd.direction, fwd.class),
        (Direction::Forward, LimiterClass::Punisher),
        "{fwd:?}"
    );
    within(fwd.knee_bps.unwrap(), truth, 0.5);
    let f = fwd.evidence.delivered_fraction_above_knee.unwrap();
    assert!(f < 0.06, "{f}");
    let rev = &r.limiters[1];
    assert_eq!(
        (rev.direction, rev.class),
        (Direction::Reverse, LimiterClass::Policer),
        "{rev:?}"
    );
    within(rev.knee_bps.unwrap(), truth, 0.5);
    // Every trial ran one direction; the forward bisection added steps.
    let asked = path.asked();
    let dir_of = |t: &TestSpec| match t {
        TestSpec::Udp(u) => u.direction,
        _ => unreachable!(),
    };
    let fwd_trials = asked
        .iter()
        .filter(|t| dir_of(t) == Direction::Forward)
        .count();
    let rev_trials = asked
        .iter()
        .filter(|t| dir_of(t) == Direction::Reverse)
        .count();
    assert_eq!(rev_trials, 7);
    assert!(fwd_trials > 7 && fwd_trials <= 15, "{fwd_trials}");
    assert!(r.steps.iter().any(|s| s.refined));
    assert_eq!(r.trials.len(), asked.len());
}

#[test]
fn bidir_measures_both_flows_at_once() {
    let path = ScriptedPath::new(
        PathDir::new(Limit::Policer, 50e6),
        PathDir::new(Limit::None, 0.0),
    );
    let r = sweep(&path, &spec(rates(20.0, 80.0, 10.0), &[Direction::Bidir]));
    assert_eq!(r.trials.len(), 7);
    assert_eq!(r.steps.len(), 14);
    let class_of = |d| r.limiters.iter().find(|l| l.direction == d).unwrap().class;
    assert_eq!(class_of(Direction::Forward), LimiterClass::Policer);
    assert_eq!(class_of(Direction::Reverse), LimiterClass::None);
}

#[test]
fn the_step_plan_applies_to_every_step() {
    let path = ScriptedPath::symmetric(PathDir::new(Limit::None, 0.0));
    let mut s = spec(
        SweepVariable::Payloads(vec![64, 512, 1400]),
        &[Direction::Forward],
    );
    s.step.repeat = RepeatRule::Times { runs: 3 };
    let r = sweep(&path, &s);
    assert_eq!(r.trials.len(), 9);
    assert_eq!(r.steps.len(), 3);
    assert!(r.limiters.is_empty(), "only a rate sweep names a limiter");
    assert_eq!(r.steps[1].payload_bytes, 512);
    assert_eq!(r.steps[1].runs.result_ids.len(), 3);
    let lengths: Vec<u32> = path
        .asked()
        .iter()
        .map(|t| match t {
            TestSpec::Udp(u) => u.length,
            _ => 0,
        })
        .collect();
    assert_eq!(lengths, [64, 64, 64, 512, 512, 512, 1400, 1400, 1400]);
}

#[test]
fn bad_sweeps_are_refused_naming_the_flag() {
    let path = ScriptedPath::symmetric(PathDir::new(Limit::None, 0.0));
    let run = |s: &SweepSpec| run_sweep(&path, s, &Stop::new(), &Events::new());
    let windows = spec(
        SweepVariable::Windows(vec![sonde_model::ByteSize::from_bytes(65536)]),
        &[Direction::Forward],
    );
    match run(&windows) {
        Err(MethodError::Invalid { field, .. }) => assert_eq!(field, "variable.windows"),
        other => panic!("{other:?}"),
    }
    let mut tcp = windows.clone();
    tcp.test = TcpSpec {
        host: "path".into(),
        ..TcpSpec::default()
    }
    .into();
    assert!(run(&tcp).is_ok());
    let empty = spec(SweepVariable::Rates(vec![]), &[Direction::Forward]);
    assert!(matches!(
        run(&empty),
        Err(MethodError::Invalid {
            field: "variable.rates",
            ..
        })
    ));
    assert!(run(&spec(rates(1.0, 2.0, 1.0), &[]))
        .unwrap_err()
        .is_usage());
}

#[test]
fn a_stop_keeps_what_ran() {
    let path = ScriptedPath::symmetric(PathDir::new(Limit::None, 0.0));
    let stop = Stop::new();
    let runner = StopAfter::new(&path, &stop, 3);
    let (r, heard) = method_events(|events| {
        run_sweep(
            &runner,
            &spec(rates(10.0, 100.0, 10.0), &[Direction::Forward]),
            &stop,
            events,
        )
    });
    let r = r.unwrap();
    assert_eq!(heard.len(), 3);
    assert!(r.interrupted);
    assert_eq!(r.steps.len(), 3);
    assert_eq!(r.trials.len(), 3);
}
