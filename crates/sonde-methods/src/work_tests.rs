//! Each method run over a scripted path: the trials it actually asked
//! never exceed [`method_work`]'s bound (count, summed durations, streams,
//! rate); and for simple cases the bound is exact.

use super::*;
use crate::qos::{run_qos_checks, run_qos_scenario, Senders};
use crate::scripted::{Limit, PathDir, ScriptedPath};
use sonde_model::method::{QosRamp, SearchMode, SizeKind};
use sonde_model::{
    ByteSize, Figures, HostEnv, MethodResult, PeerKind, RttStats, Summary, TestEnv, TestResult,
    Timestamp,
};
use sonde_run::{Events, RunError, Runner, Stop};
use std::sync::Mutex;

/// Checks what a runner was asked against `bound`: no more trials, no
/// longer in all (each trial's own duration summed), no trial with more
/// streams or a higher rate (a `None` rate in the bound: unbounded).
fn within(bound: &Work, asked: &[TestSpec]) {
    assert!(!asked.is_empty(), "nothing ran");
    assert!(
        asked.len() as u64 <= bound.trials,
        "{} trials asked, bound {}",
        asked.len(),
        bound.trials
    );
    let total: Option<Duration> = asked.iter().map(|t| t.work().duration).sum();
    if let Some(most) = bound.duration {
        let total = total.expect("a trial without an end under a bounded duration");
        assert!(total <= most, "{total:?} asked, bound {most:?}");
    }
    for t in asked {
        let w = t.work();
        assert!(w.streams <= bound.streams, "{w:?} over {bound:?}: {t:?}");
        match (w.rate, bound.rate) {
            (_, None) => {}
            (Some(r), Some(b)) => assert!(r.bps() <= b.bps(), "{r:?} over {b:?}: {t:?}"),
            (None, Some(b)) => panic!("an unpaced trial under a bound of {b:?}: {t:?}"),
        }
    }
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn ms(m: u64) -> Duration {
    Duration::from_millis(m)
}

fn udp(time: Duration) -> UdpSpec {
    UdpSpec {
        host: "path".into(),
        length: 1400,
        time,
        ..UdpSpec::default()
    }
}

// --- ndr ------------------------------------------------------------------

fn shaper() -> ScriptedPath {
    let mut dir = PathDir::new(Limit::Shaper { queue_ms: 50.0 }, 50e6);
    dir.l2_bytes = 14;
    dir.noise_pct = 0.1;
    dir.sender_max_bps = 400e6;
    ScriptedPath::symmetric(dir)
}

fn ndr(sizes: &[u32], kind: SizeKind, families: Vec<IpFamily>) -> NdrSpec {
    NdrSpec {
        trial: udp(secs(2)),
        sizes: sizes.to_vec(),
        size_kind: kind,
        max_rate: Some(Rate::from_bps(300_000_000)),
        gap: ms(1),
        step: StepPlan {
            families,
            ..StepPlan::default()
        },
        ..NdrSpec::default()
    }
}

fn run_ndr(path: &ScriptedPath, spec: &NdrSpec) -> MethodResult {
    crate::ndr::run_ndr(path, spec, &Stop::new(), &Events::new()).unwrap()
}

#[test]
fn ndr_trials_stay_within_the_bound() {
    use IpFamily::{V4, V6};
    for (spec, search) in [
        (
            ndr(&[64, 512, 1400], SizeKind::Payload, vec![V6, V4]),
            SearchMode::Informed,
        ),
        (
            ndr(&[64, 1518], SizeKind::Frame, vec![V4]),
            SearchMode::Bisect,
        ),
    ] {
        let spec = NdrSpec { search, ..spec };
        let path = shaper();
        let r = run_ndr(&path, &spec);
        assert!(!r.results.is_empty());
        let bound = method_work(&MethodSpec::Ndr(spec.clone()));
        within(&bound, &path.asked());
        // The first trial of a size asks the most the bound allows.
        let top = path
            .asked()
            .iter()
            .filter_map(|t| t.work().rate)
            .max_by_key(|r| r.bps());
        let ratio = top.unwrap().bps() as f64 / bound.rate.unwrap().bps() as f64;
        assert!(ratio > 0.99, "{ratio}");
        // 30 trials a size and family, 3 of them confirming (10 s).
        let cells = spec.sizes.len() as u64 * spec.step.families.len() as u64;
        assert_eq!(bound.trials, 30 * cells);
        let each = 27 * 2 + 3 * 10;
        let gaps = ms(30 * cells - 1);
        assert_eq!(bound.duration, Some(secs(each * cells) + gaps));
        assert_eq!(bound.streams, 1);
    }
}

#[test]
fn ndr_of_any_family_is_bounded_as_ipv4_too() {
    // A literal IPv4 host: `any` is searched as IPv4, whose frames carry
    // 20 more bytes of payload than IPv6's at the same frame rate.
    let mut spec = ndr(&[128, 1518], SizeKind::Frame, Vec::new());
    spec.trial.host = "192.0.2.1".into();
    let path = shaper();
    run_ndr(&path, &spec);
    let bound = method_work(&MethodSpec::Ndr(spec.clone()));
    within(&bound, &path.asked());
    assert!(path
        .asked()
        .iter()
        .all(|t| t.family() == IpFamily::V4 || t.family() == IpFamily::Any));
}

#[test]
fn ndr_at_its_caps_stays_within_the_bound() {
    // A policer far under the slowest trial: every trial loses, and the
    // search runs down to its floor.
    let path = ScriptedPath::symmetric(PathDir::new(Limit::Policer, 1_000.0));
    let spec = ndr(&[1400], SizeKind::Payload, vec![IpFamily::V6]);
    let r = run_ndr(&path, &spec);
    assert!(r.results[0].trials >= 10, "{}", r.results[0].trials);
    within(&method_work(&MethodSpec::Ndr(spec)), &path.asked());
    // Long trials that always lose: every size fails its confirmation
    // three times and gives up.
    let runner = LongTrialsLose(shaper());
    let spec = NdrSpec {
        trial: UdpSpec {
            host: "2001:db8::1".into(),
            ..udp(secs(2))
        },
        confirm_time: secs(60),
        ..ndr(&[512, 1400], SizeKind::Payload, vec![IpFamily::V6])
    };
    let r = crate::ndr::run_ndr(&runner, &spec, &Stop::new(), &Events::new()).unwrap();
    for size in &r.results {
        assert!(!size.confirmed);
        assert_eq!(size.notes.len(), 3, "{:?}", size.notes);
    }
    let asked = runner.0.asked();
    assert_eq!(
        asked
            .iter()
            .filter(|t| t.work().duration == Some(secs(60)))
            .count(),
        6
    );
    within(&method_work(&MethodSpec::Ndr(spec)), &asked);
}

/// The scripted path, but a trial longer than 2 s loses 1 %.
struct LongTrialsLose(ScriptedPath);

impl Runner for LongTrialsLose {
    fn run(&self, spec: &TestSpec, stop: &Stop, events: &Events) -> Result<TestResult, RunError> {
        let mut r = self.0.run(spec, stop, events)?;
        if spec.work().duration > Some(secs(2)) {
            if let Some(f) = r.summary.forward.as_mut() {
                f.loss_pct = Some(1.0);
            }
        }
        Ok(r)
    }
}

#[test]
fn ndr_without_a_max_rate_is_unbounded_in_rate() {
    let spec = NdrSpec {
        max_rate: None,
        ..ndr(&[512], SizeKind::Payload, vec![IpFamily::V6])
    };
    let path = shaper();
    run_ndr(&path, &spec);
    let bound = method_work(&MethodSpec::Ndr(spec));
    assert_eq!(bound.rate, None, "the first trial is unpaced");
    within(&bound, &path.asked());
}

// --- sweep ----------------------------------------------------------------

fn run_sweep(path: &ScriptedPath, spec: &SweepSpec) {
    crate::sweep::run_sweep(path, spec, &Stop::new(), &Events::new()).unwrap();
}

fn mbps(v: &[u64]) -> SweepVariable {
    SweepVariable::Rates(v.iter().map(|m| Rate::from_bps(m * 1_000_000)).collect())
}

#[test]
fn sweep_trials_stay_within_the_bound() {
    // A punisher forward (refined), a policer back; every step twice
    // over each family; bidir as a third series.
    let path = ScriptedPath::new(
        PathDir::new(Limit::Punisher { fraction: 0.05 }, 88e6),
        PathDir::new(Limit::Policer, 88e6),
    );
    let spec = SweepSpec {
        test: udp(secs(2)).into(),
        variable: mbps(&[70, 75, 80, 85, 90, 95, 100]),
        directions: vec![Direction::Forward, Direction::Reverse, Direction::Bidir],
        gap: ms(1),
        step: StepPlan {
            repeat: RepeatRule::Times { runs: 2 },
            families: vec![IpFamily::V6, IpFamily::V4],
            ..StepPlan::default()
        },
        refine_trials: 8,
    };
    run_sweep(&path, &spec);
    let bound = method_work(&MethodSpec::Sweep(spec.clone()));
    within(&bound, &path.asked());
    // 3 series × 7 values + 2 × 8 refining steps, each 2 runs × 2 families.
    assert_eq!(bound.trials, (21 + 16) * 4);
    assert_eq!(bound.streams, 2, "bidir");
    assert_eq!(bound.rate, Some(Rate::from_bps(200_000_000)));
    assert!(path.asked().len() > 21 * 4, "the punisher was refined");
}

#[test]
fn a_stream_sweep_over_tcp_stays_within_the_bound() {
    let path = ScriptedPath::symmetric(PathDir::new(Limit::Policer, 100e6));
    let spec = SweepSpec {
        test: TcpSpec {
            host: "path".into(),
            time: secs(3),
            bitrate: Some(Rate::from_bps(10_000_000)),
            ..TcpSpec::default()
        }
        .into(),
        variable: SweepVariable::Streams(vec![1, 4, 16]),
        directions: vec![Direction::Forward],
        gap: ms(1),
        step: StepPlan::default(),
        refine_trials: 5,
    };
    run_sweep(&path, &spec);
    let bound = method_work(&MethodSpec::Sweep(spec));
    within(&bound, &path.asked());
    // No refinement outside a rate sweep.
    assert_eq!(bound.trials, 3);
    assert_eq!(bound.duration, Some(secs(9) + ms(2)));
    assert_eq!(bound.streams, 16);
    assert_eq!(bound.rate, Some(Rate::from_bps(160_000_000)));
}

#[test]
fn a_sweep_of_three_rates_with_gaps_is_exact() {
    let spec = SweepSpec {
        test: UdpSpec {
            parallel: 2,
            ..udp(secs(10))
        }
        .into(),
        variable: mbps(&[10, 20, 30]),
        directions: vec![Direction::Forward],
        gap: secs(1),
        step: StepPlan::default(),
        refine_trials: 0,
    };
    let bound = method_work(&MethodSpec::Sweep(spec));
    assert_eq!(bound.trials, 3);
    // Three 10 s steps, a gap between each two.
    assert_eq!(bound.duration, Some(secs(32)));
    assert_eq!(bound.streams, 2);
    assert_eq!(bound.rate, Some(Rate::from_bps(60_000_000)));
}

// --- repeat ---------------------------------------------------------------

fn run_repeat(path: &ScriptedPath, spec: &RepeatSpec) {
    crate::repeat::run_repeat(path, spec, &Stop::new(), &Events::new()).unwrap();
}

#[test]
fn repeat_trials_stay_within_the_bound() {
    // A spread that never narrows enough runs to the most, both families.
    let mut dir = PathDir::new(Limit::Policer, 10e6);
    dir.noise_pct = 1.0;
    let path = ScriptedPath::symmetric(dir);
    let spec = RepeatSpec {
        test: UdpSpec {
            bitrate: Rate::from_bps(20_000_000),
            direction: Direction::Bidir,
            ..udp(secs(1))
        }
        .into(),
        step: StepPlan {
            repeat: RepeatRule::UntilStable {
                stddev_pct: 0.01,
                min_runs: 3,
                max_runs: 12,
            },
            families: vec![IpFamily::V6, IpFamily::V4],
            ..StepPlan::default()
        },
    };
    run_repeat(&path, &spec);
    assert_eq!(path.trials(), 24, "every run the rule allows");
    let bound = method_work(&MethodSpec::Repeat(spec));
    within(&bound, &path.asked());
    assert_eq!(bound.trials, 24);
    assert_eq!(bound.duration, Some(secs(24)));
}

#[test]
fn a_repeat_of_a_10_s_test_three_times_is_exact() {
    let path = ScriptedPath::symmetric(PathDir::new(Limit::None, 0.0));
    let test = TcpSpec {
        host: "path".into(),
        time: secs(10),
        omit: secs(1),
        parallel: 4,
        bitrate: Some(Rate::from_bps(5_000_000)),
        ..TcpSpec::default()
    };
    let spec = RepeatSpec {
        test: test.into(),
        step: StepPlan {
            repeat: RepeatRule::Times { runs: 3 },
            ..StepPlan::default()
        },
    };
    run_repeat(&path, &spec);
    let bound = method_work(&MethodSpec::Repeat(spec));
    within(&bound, &path.asked());
    assert_eq!(
        bound,
        Work {
            duration: Some(secs(33)),
            trials: 3,
            streams: 4,
            rate: Some(Rate::from_bps(20_000_000)),
        }
    );
    assert_eq!(path.trials(), 3);
}

// --- qos ------------------------------------------------------------------

#[test]
fn qos_checks_stay_within_the_bound() {
    let (local, agent) = (
        ScriptedPath::symmetric(PathDir::new(Limit::Policer, 50e6)),
        ScriptedPath::symmetric(PathDir::new(Limit::None, 0.0)),
    );
    let mut spec = QosCheckSpec::new(udp(secs(1)));
    spec.background_rate = Some(Rate::from_bps(80_000_000));
    spec.via = Some("agent".into());
    spec.gap = ms(1);
    let senders = Senders {
        local: &local,
        agent: Some(("agent", &agent)),
    };
    let r = run_qos_checks(&senders, &spec, &Stop::new(), &Events::new()).unwrap();
    assert!(!r.interrupted);
    let mut asked = local.asked();
    asked.extend(agent.asked());
    // Marking: 4 classes from each host; policing; shaping; priority:
    // alone, then beside one background.
    assert_eq!(asked.len(), 4 * 2 + 1 + 1 + 3);
    let bound = method_work(&MethodSpec::QosCheck(spec.clone()));
    within(&bound, &asked);
    assert_eq!(bound.trials, 13);
    // The premium beside its background: 1.5 + 80 Mbit/s at once.
    assert_eq!(bound.streams, 2);
    assert_eq!(
        bound.rate,
        Some(Rate::from_bps(80_000_000 + 1_500_000)),
        "the loaded priority probe and its background"
    );
    // 8 × 5 s of marking, 5 s policing, 20 s shaping, 5 s alone and 5 s
    // beside 7 s of background after 1 s: gaps after all but the last.
    let probes = secs(8 * 5 + 5 + 20 + 5 + 5 + 7 + 1);
    assert_eq!(bound.duration, Some(probes + ms(11)));
}

fn scenario(ramp: QosRamp) -> QosScenarioSpec {
    let fg = UdpSpec {
        dscp: Dscp::new(46),
        ..udp(secs(20))
    };
    QosScenarioSpec {
        tcp_foreground: TcpSpec {
            host: fg.host.clone(),
            time: secs(20),
            bitrate: Some(Rate::from_bps(256_000)),
            ..TcpSpec::default()
        },
        udp_foreground: fg,
        ramp,
        background_rate: Rate::from_bps(80_000_000),
        background_tcp_pct: 30.0,
        background_length: 1400,
        via: None,
        lead: ms(10),
        gap: ms(1),
    }
}

#[test]
fn qos_scenarios_stay_within_the_bound() {
    let rates = (3..=6).map(|h| Rate::from_bps(h * 500_000)).collect();
    for (ramp, streams, fg_rate) in [
        (QosRamp::Rates(rates), 1, 3_000_000),
        (QosRamp::Streams(vec![6, 20, 45]), 45, 45 * 256_000),
    ] {
        let path = ScriptedPath::symmetric(PathDir::new(Limit::Policer, 100e6));
        let senders = Senders {
            local: &path,
            agent: None,
        };
        let spec = scenario(ramp);
        let steps = spec.ramp.len() as u64;
        run_qos_scenario(&senders, &spec, &Stop::new(), &Events::new()).unwrap();
        let bound = method_work(&MethodSpec::QosScenario(spec));
        within(&bound, &path.asked());
        assert_eq!(path.trials() as u64, 3 * steps);
        assert_eq!(bound.trials, 3 * steps);
        // The foreground beside a UDP and a TCP background.
        assert_eq!(bound.streams, streams + 2);
        assert_eq!(bound.rate, Some(Rate::from_bps(fg_rate + 80_000_000)));
        // Each step: 20 s of foreground, 2 × 20.02 s of background, the
        // lead and the gap.
        let step = secs(20) + 2 * ms(20_020) + ms(10) + ms(1);
        assert_eq!(bound.duration, Some(step * steps as u32));
    }
}

// --- overhead -------------------------------------------------------------

#[test]
fn overhead_probes_stay_within_the_bound_exactly() {
    let path = ScriptedPath::symmetric(PathDir::new(Limit::Policer, 50e6));
    let spec = OverheadSpec {
        probe: UdpSpec {
            bitrate: Rate::from_bps(0),
            ..udp(secs(3))
        },
        payloads: vec![200, 700, 1400],
        gap: ms(1),
    };
    crate::overhead::run_overhead(&path, &spec, &Stop::new(), &Events::new()).unwrap();
    let bound = method_work(&MethodSpec::Overhead(spec));
    within(&bound, &path.asked());
    assert_eq!(
        bound,
        Work {
            duration: Some(secs(9) + ms(3)),
            trials: 3,
            streams: 1,
            rate: None,
        },
        "unpaced probes"
    );
}

// --- tune -----------------------------------------------------------------

/// The scripted path, answering pings too (a 20 ms RTT), and every spec
/// it was asked.
struct WithPing {
    path: ScriptedPath,
    asked: Mutex<Vec<TestSpec>>,
}

impl Runner for WithPing {
    fn run(&self, spec: &TestSpec, stop: &Stop, events: &Events) -> Result<TestResult, RunError> {
        self.asked.lock().unwrap().push(spec.clone());
        if !matches!(spec, TestSpec::Ping(_)) {
            return self.path.run(spec, stop, events);
        }
        let env = TestEnv::between(HostEnv::default(), HostEnv::default(), PeerKind::Sonde);
        let mut r = TestResult::new(spec.clone(), env, Timestamp::now());
        r.summary = Summary {
            round_trip: Some(Figures {
                rtt_ms: RttStats::from_ms(&[20.0, 20.1, 19.9]),
                ..Figures::default()
            }),
            ..Summary::default()
        };
        Ok(r)
    }
}

#[test]
fn tune_and_its_lab_stay_within_the_bound() {
    let runner = WithPing {
        path: ScriptedPath::symmetric(PathDir::new(Limit::Policer, 200e6)),
        asked: Mutex::new(Vec::new()),
    };
    let test = TcpSpec {
        host: "path".into(),
        time: secs(5),
        parallel: 2,
        ..TcpSpec::default()
    };
    let spec = TuneSpec {
        test: test.clone(),
        bottleneck_time: secs(3),
        pings: 10,
        window: None,
        gap: ms(1),
    };
    crate::tune::run_tune(&runner, &spec, &Stop::new(), &Events::new()).unwrap();
    let bound = method_work(&MethodSpec::Tune(spec));
    within(&bound, &runner.asked.lock().unwrap());
    assert_eq!(bound.trials, 4);
    // 10 pings 200 ms apart and their 2 s timeout, 3 s of UDP, 2 × 5 s
    // of TCP, 2 gaps.
    assert_eq!(bound.duration, Some(secs(2 + 2 + 3 + 10) + ms(2)));
    assert_eq!(bound.rate, None, "the bottleneck probe is unpaced");

    let lab = TuneLabSpec {
        test,
        lab: "lab".into(),
        link: 0,
        rtts: vec![ms(10), ms(50)],
        windows: vec![ByteSize::from_bytes(1 << 20), ByteSize::from_bytes(4 << 20)],
        congestion: vec!["cubic".into(), "bbr".into(), "reno".into()],
        gap: ms(1),
    };
    runner.asked.lock().unwrap().clear();
    crate::tune::lab::run_tune_lab(&runner, &lab, &mut |_| Ok(()), &Stop::new(), &Events::new())
        .unwrap();
    let bound = method_work(&MethodSpec::TuneLab(lab));
    within(&bound, &runner.asked.lock().unwrap());
    assert_eq!(bound.trials, 12);
    assert_eq!(bound.duration, Some(secs(60) + ms(12)));
    assert_eq!(bound.streams, 2);
}
