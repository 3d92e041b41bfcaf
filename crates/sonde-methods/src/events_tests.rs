//! A method's progress on its `Events` channel, as `run_method` runs it:
//! one `Event::Method` per step the result keeps, in the result's order,
//! each after the `Finished` of the trial it reports.

use crate::run_method;
use crate::scripted::{Limit, PathDir, ScriptedPath};
use sonde_model::method::{NdrSpec, NdrTrial, RepeatRule, RepeatSpec, SizeKind, StepPlan};
use sonde_model::{
    Event, IpFamily, MethodEvent, MethodResult, MethodSpec, Rate, ResultId, TestResult, TestSpec,
    UdpSpec,
};
use sonde_run::{Events, Stop};
use std::sync::Arc;
use std::time::Duration;

/// A 50 Mbit/s shaper with a 50 ms queue, a little noise.
fn shaper() -> ScriptedPath {
    let mut dir = PathDir::new(Limit::Shaper { queue_ms: 50.0 }, 50e6);
    dir.l2_bytes = 14;
    dir.noise_pct = 0.1;
    dir.sender_max_bps = 400e6;
    ScriptedPath::symmetric(dir)
}

/// `spec` run through the dispatcher over `path`: its result and every
/// event a subscriber heard, in order.
fn dispatched(path: &ScriptedPath, spec: MethodSpec) -> (MethodResult, Vec<Event>) {
    let events = Events::new();
    let rx = events.subscribe();
    let r = run_method(path, &spec, &Stop::new(), &events).unwrap();
    events.close();
    (r, rx.iter().collect())
}

/// The method events heard, each with the id of the trial whose
/// `Finished` came last before it (`None`: no trial had finished).
fn after_trials(heard: &[Event]) -> Vec<(MethodEvent, Option<ResultId>)> {
    let mut last = None;
    let mut out = Vec::new();
    for e in heard {
        match e {
            Event::Finished(r) => last = Some(r.id),
            Event::Method(m) => out.push((m.clone(), last)),
            _ => {}
        }
    }
    out
}

fn payload_of(r: &TestResult) -> (IpFamily, u32) {
    match &r.spec {
        TestSpec::Udp(u) => (u.family, u.length),
        other => panic!("not a udp trial: {other:?}"),
    }
}

#[test]
fn ndr_reports_each_trial_in_the_order_of_its_trials() {
    let path = shaper();
    let spec = NdrSpec {
        trial: UdpSpec {
            host: "path".into(),
            family: IpFamily::V6,
            ..UdpSpec::default()
        },
        sizes: vec![128, 1408],
        size_kind: SizeKind::Payload,
        max_rate: Some(Rate::from_bps(300_000_000)),
        confirm_time: Duration::from_secs(5),
        gap: Duration::ZERO,
        step: StepPlan {
            families: vec![IpFamily::V6, IpFamily::V4],
            ..StepPlan::default()
        },
        ..NdrSpec::default()
    };
    let (r, heard) = dispatched(&path, MethodSpec::Ndr(spec));
    let reported = after_trials(&heard);
    let trials: Vec<NdrTrial> = reported
        .iter()
        .map(|(m, after)| match m {
            MethodEvent::NdrTrial(t) => {
                // Each trial is reported once it has finished.
                assert_eq!(*after, Some(t.result), "{t:?}");
                *t
            }
            other => panic!("not an NDR trial: {other:?}"),
        })
        .collect();
    assert!(r.trials.len() > 4, "{}", r.trials.len());
    assert_eq!(trials.len(), r.trials.len());
    for (t, kept) in trials.iter().zip(&r.trials) {
        assert_eq!(t.result, kept.id);
        assert_eq!((t.family, t.payload_bytes), payload_of(kept));
    }
    // Per size and family: trials 1, 2, … as the result counts them, the
    // confirmation last, and the same trials the size names.
    assert_eq!(r.results.len(), 4);
    let mut rest = trials.as_slice();
    for size in &r.results {
        let n = size.trials as usize;
        let (mine, after) = rest.split_at(n);
        rest = after;
        let numbers: Vec<u32> = mine.iter().map(|t| t.trial).collect();
        assert_eq!(numbers, (1..=size.trials).collect::<Vec<_>>());
        assert!(mine
            .iter()
            .all(|t| (t.family, t.payload_bytes, t.frame_bytes)
                == (size.family, size.payload_bytes, size.frame_bytes)));
        let ids: Vec<ResultId> = mine.iter().map(|t| t.result).collect();
        assert_eq!(ids, size.trial_ids);
        assert_eq!(mine.last().map(|t| t.confirming), Some(size.confirmed));
        assert!(mine[..n - 1].iter().all(|t| !t.confirming));
    }
    assert!(rest.is_empty());
}

#[test]
fn repeat_reports_each_run_in_the_order_of_its_trials() {
    let path = shaper();
    let spec = RepeatSpec {
        test: UdpSpec {
            host: "path".into(),
            bitrate: Rate::from_bps(20_000_000),
            length: 1000,
            time: Duration::from_secs(1),
            ..UdpSpec::default()
        }
        .into(),
        step: StepPlan {
            repeat: RepeatRule::Times { runs: 3 },
            families: vec![IpFamily::V6, IpFamily::V4],
            ..StepPlan::default()
        },
    };
    let (r, heard) = dispatched(&path, MethodSpec::Repeat(spec));
    let runs: Vec<Arc<TestResult>> = after_trials(&heard)
        .into_iter()
        .map(|(m, after)| match m {
            MethodEvent::RepeatRun(run) => {
                assert_eq!(after, Some(run.id));
                run
            }
            other => panic!("not a repeat run: {other:?}"),
        })
        .collect();
    assert_eq!(r.trials.len(), 6);
    assert_eq!(runs.len(), r.trials.len());
    for (run, kept) in runs.iter().zip(&r.trials) {
        assert_eq!(**run, *kept);
    }
}
