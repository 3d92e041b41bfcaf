//! [`method_work`]: the bound on the whole work of a method, computed
//! from its spec before it runs, so that an admission gate can weigh all
//! of its trials at once: the most trials it can run, the longest it can
//! take (each trial's own [`TestSpec::work`] duration plus the method's
//! gaps and waits), and the most streams and the highest rate any trial
//! (or trials run side by side) can use.
//!
//! Each bound follows the method's code: where the code caps its trials
//! (an NDR size's [`MAX_TRIALS_PER_SIZE`], a step plan's `max_runs`) the
//! cap is used; where it does not, the comment says so and the spec's own
//! lists bound it. A trial whose rate the method sets is bounded by the
//! highest rate the method can ask; an unpaced trial leaves the rate
//! unbounded (`None`).

use crate::ndr::{frame_size, FrameSize, MAX_TRIALS_PER_SIZE};
use crate::qos::background_udp;
use crate::qos::scenario::{background_of, foreground_steps};
use crate::step::families_of;
use sonde_model::method::{
    NdrSpec, OverheadSpec, QosCheckKind, QosCheckSpec, QosScenarioSpec, RepeatRule, RepeatSpec,
    StepPlan, SweepSpec, SweepVariable, TuneLabSpec, TuneSpec,
};
use sonde_model::udp_spec::MAX_UDP_PAYLOAD;
use sonde_model::{
    Direction, Dscp, IpFamily, MethodSpec, Profile, Rate, TcpSpec, TestSpec, UdpSpec, Work,
};
use std::time::Duration;

/// The upper bound on everything `spec` can ask of the runner.
pub fn method_work(spec: &MethodSpec) -> Work {
    match spec {
        MethodSpec::Ndr(s) => ndr_work(s),
        MethodSpec::Sweep(s) => sweep_work(s),
        MethodSpec::Repeat(s) => repeat_work(s),
        MethodSpec::QosCheck(s) => qos_check_work(s),
        MethodSpec::QosScenario(s) => qos_scenario_work(s),
        MethodSpec::Overhead(s) => overhead_work(s),
        MethodSpec::Tune(s) => tune_work(s),
        MethodSpec::TuneLab(s) => tune_lab_work(s),
    }
}

// --- combinators beyond `Work`'s own ------------------------------------

/// `steps` one after another with `gap` between each two (not before the
/// first nor after the last), as a sweep's steps and an NDR's trials.
fn in_turn(steps: impl IntoIterator<Item = Work>, gap: Duration) -> Work {
    let mut all = Work::default();
    let mut ran = 0u32;
    for w in steps.into_iter().filter(|w| w.trials > 0) {
        all = all.then(w);
        ran = ran.saturating_add(1);
    }
    plus(all, gap.saturating_mul(ran.saturating_sub(1)))
}

/// Each trial of `w` followed by `gap` (`Work::with_gaps`, saturating).
fn gap_after_each(w: Work, gap: Duration) -> Work {
    let n = u32::try_from(w.trials).unwrap_or(u32::MAX);
    plus(w, gap.saturating_mul(n))
}

/// `w` and a wait of `d`.
fn plus(w: Work, d: Duration) -> Work {
    Work {
        duration: w.duration.map(|x| x.saturating_add(d)),
        ..w
    }
}

/// `a` and `b` at the same time: their streams and rates add (an
/// unpaced one makes the sum unbounded); trials and durations add too,
/// each trial counted whole, as the brief of the gate counts them (the
/// sum is also at least the wall-clock time of the two side by side).
fn alongside(a: Work, b: Work) -> Work {
    if a.trials == 0 {
        return b;
    }
    if b.trials == 0 {
        return a;
    }
    Work {
        duration: a.duration.zip(b.duration).map(|(x, y)| x.saturating_add(y)),
        trials: a.trials.saturating_add(b.trials),
        streams: a.streams.saturating_add(b.streams),
        rate: a
            .rate
            .zip(b.rate)
            .map(|(x, y)| Rate::from_bps(x.bps().saturating_add(y.bps()))),
    }
}

/// A foreground run beside a background (`qos::concurrent::run_beside`):
/// the background starts, `lead` passes, the foreground runs, the
/// background ends.
fn beside(fg: Work, bg: &[Work], lead: Duration) -> Work {
    let all = bg.iter().fold(fg, |a, b| alongside(a, *b));
    plus(all, lead)
}

/// The most runs a step plan's repeat rule makes per family (`step::
/// wants_more`): once, `runs`, or `until_stable`'s most, `max_runs` (at
/// least `min_runs`, at least 2).
fn runs_per_family(rule: &RepeatRule) -> u64 {
    match *rule {
        RepeatRule::Once => 1,
        RepeatRule::Times { runs } => u64::from(runs.max(1)),
        RepeatRule::UntilStable {
            min_runs, max_runs, ..
        } => u64::from(max_runs.max(min_runs.max(2))),
    }
}

/// The most runs of one step of `test` under `plan`: its runs per family
/// times the families (`step::families_of`: the plan's, else one).
fn plan_runs(test: &TestSpec, plan: &StepPlan) -> u64 {
    let families = families_of(test, plan).len().max(1) as u64;
    runs_per_family(&plan.repeat).saturating_mul(families)
}

// --- ndr ------------------------------------------------------------------

/// Confirmations one size may fail before its search gives up
/// (`ndr::MAX_CONFIRMS`, private there).
const NDR_MAX_CONFIRMS: u32 = 3;

/// The search trial `ndr::Ctx::trial` builds at `rate_pps` (`None`:
/// unpaced), lasting `trial_time`.
fn ndr_trial(s: &NdrSpec, family: IpFamily, fs: &FrameSize, rate_pps: Option<f64>) -> UdpSpec {
    let parallel = f64::from(s.trial.parallel.max(1));
    let bitrate = rate_pps.map_or(0, |pps| {
        (pps * f64::from(fs.payload_bytes) * 8.0 / parallel)
            .round()
            .max(1.0) as u64
    });
    UdpSpec {
        family,
        length: fs.payload_bytes,
        bitrate: Rate::from_bps(bitrate),
        time: s.trial_time,
        omit: Duration::ZERO,
        bytes: None,
        blocks: None,
        ..s.trial.clone()
    }
}

/// Per size and family, at most [`MAX_TRIALS_PER_SIZE`] trials, of which
/// at most [`NDR_MAX_CONFIRMS`] last `confirm_time` (the rest
/// `trial_time`); `gap` before every trial but the first. Every trial's
/// rate is at most the first's, `max_rate` (`search.next()` stays under
/// the lowest rate that failed, and what passed is at most the first
/// rate); without `max_rate` the first trial is unpaced and the rate is
/// unbounded. A trial of `any` family is bounded as IPv6 and as IPv4,
/// whichever asks more (IPv4's shorter headers carry more payload per
/// frame). `link_rate` only reports the medium's maximum: it caps
/// nothing the search asks.
fn ndr_work(s: &NdrSpec) -> Work {
    let families = families_of(&TestSpec::Udp(s.trial.clone()), &s.step);
    let per_size = u64::from(MAX_TRIALS_PER_SIZE);
    let confirms = u64::from(NDR_MAX_CONFIRMS.min(MAX_TRIALS_PER_SIZE.saturating_sub(1)));
    let mut trials = Vec::new();
    for &size in &s.sizes {
        for &family in &families {
            // `any` is searched as the family its host resolves to
            // (`ndr::resolve_families`), or sized as IPv6: bound both.
            let sized_as: &[IpFamily] = match family {
                IpFamily::Any => &[IpFamily::V6, IpFamily::V4],
                _ => &[family],
            };
            let size_work = sized_as
                .iter()
                .map(|&f| ndr_size_work(s, size, f, per_size, confirms))
                .fold(Work::default(), peak);
            trials.push(size_work);
        }
    }
    let all = trials.into_iter().fold(Work::default(), Work::then);
    let n = u32::try_from(all.trials).unwrap_or(u32::MAX);
    plus(all, s.gap.saturating_mul(n.saturating_sub(1)))
}

/// One size's trials over `family`: the first trial's rate for all.
fn ndr_size_work(s: &NdrSpec, size: u32, family: IpFamily, per_size: u64, confirms: u64) -> Work {
    // Sizes past the largest payload fail validation; clamped here only
    // so that the arithmetic cannot overflow.
    let fs = frame_size(size.min(MAX_UDP_PAYLOAD), s.size_kind, family);
    let first_pps = s
        .max_rate
        .map(|r| r.bps() as f64 / (8.0 * f64::from(fs.frame_bytes)));
    let search = ndr_trial(s, family, &fs, first_pps);
    let confirm = UdpSpec {
        time: s.confirm_time,
        ..search.clone()
    };
    let (search, confirm) = (search.work(), confirm.work());
    if !s.confirm_time.is_zero() && confirm.duration > search.duration {
        search
            .times(per_size - confirms)
            .then(confirm.times(confirms))
    } else {
        search.times(per_size)
    }
}

/// The larger of two bounds in every part (for work that is one or the
/// other, not both); an unbounded duration or rate is the larger.
fn peak(a: Work, b: Work) -> Work {
    if a.trials == 0 {
        return b;
    }
    if b.trials == 0 {
        return a;
    }
    Work {
        duration: a.duration.zip(b.duration).map(|(x, y)| x.max(y)),
        trials: a.trials.max(b.trials),
        streams: a.streams.max(b.streams),
        rate: a
            .rate
            .zip(b.rate)
            .map(|(x, y)| if x.bps() >= y.bps() { x } else { y }),
    }
}

// --- sweep ----------------------------------------------------------------

/// The test of each value of a sweep (`sweep::Value::apply`).
fn sweep_tests(s: &SweepSpec, series: &TestSpec) -> Vec<TestSpec> {
    match &s.variable {
        SweepVariable::Rates(v) => v.iter().map(|&r| series.with_rate(r)).collect(),
        SweepVariable::Payloads(v) => v.iter().map(|&b| series.with_length(b)).collect(),
        SweepVariable::Streams(v) => v.iter().map(|&n| series.with_parallel(n)).collect(),
        SweepVariable::Windows(v) => v.iter().map(|&w| series.with_window(w)).collect(),
    }
}

/// Per direction, every value as a step, then (rate sweeps, not bidir)
/// at most `refine_trials` more steps; each step the plan's most runs
/// times its families; `gap` between steps (none between a step's runs).
/// A refining step asks the middle of a bracket between two steps'
/// measured offered rates, per stream: the code does not clamp it, so
/// the bound takes it at the highest rate asked, which holds while a
/// paced sender does not measure above its pace.
fn sweep_work(s: &SweepSpec) -> Work {
    let runs = plan_runs(&s.test, &s.step);
    let top = match &s.variable {
        SweepVariable::Rates(v) => v.iter().copied().max_by_key(|r| r.bps()),
        _ => None,
    };
    let mut steps = Vec::new();
    for &series in &s.directions {
        let test = s.test.with_direction(series);
        steps.extend(sweep_tests(s, &test).iter().map(|t| t.work().times(runs)));
        if let Some(top) = top.filter(|_| series != Direction::Bidir) {
            let refine = test.with_rate(top).work().times(runs);
            steps.extend(std::iter::repeat_n(refine, s.refine_trials as usize));
        }
    }
    in_turn(steps, s.gap)
}

// --- repeat ---------------------------------------------------------------

/// The plan's most runs per family times its families, one after another
/// with no gap.
fn repeat_work(s: &RepeatSpec) -> Work {
    s.test.work().times(plan_runs(&s.test, &s.step))
}

// --- qos ------------------------------------------------------------------

/// The wait before the priority check's loaded probe
/// (`qos::checks::priority`'s `lead`).
const QOS_PRIORITY_LEAD: Duration = Duration::from_secs(1);

/// The probe `qos::checks::probe` builds.
fn qos_probe(s: &QosCheckSpec, class: Dscp, rate: Rate, time: Duration) -> UdpSpec {
    UdpSpec {
        dscp: Some(class),
        bitrate: rate,
        time,
        parallel: 1,
        ..s.probe.clone()
    }
}

/// Each check in turn, as many times as it is named: marking one probe
/// per class from this host and, with `via`, again from the agent;
/// policing and shaping one probe each; priority a probe alone, then
/// beside a background (1 s lead, `probe_time` + 2 s); LBE a probe of
/// `probe_time` + 2 s with a background of `probe_time` 1 s into it. Every probe run
/// on its own is followed by `gap`; the one beside the background is
/// not. The background counts whoever sends it (the agent with `via`):
/// it is part of the request.
fn qos_check_work(s: &QosCheckSpec) -> Work {
    let senders = 1 + u64::from(s.via.is_some());
    let alone = |p: UdpSpec| gap_after_each(p.work(), s.gap);
    let checks = s.checks.iter().map(|check| match check {
        QosCheckKind::Marking => s
            .classes
            .iter()
            .map(|&class| alone(qos_probe(s, class, s.marking_rate, s.probe_time)))
            .fold(Work::default(), Work::then)
            .times(senders),
        QosCheckKind::Policing => alone(qos_probe(
            s,
            s.premium,
            s.policing_probe_rate(),
            s.probe_time,
        )),
        QosCheckKind::Shaping => {
            let mut p = qos_probe(s, s.premium, s.shaping_rate, s.shaping_time);
            p.profile = Profile::OnOff {
                on: s.shaping_on,
                off: s.shaping_off,
            };
            alone(p)
        }
        QosCheckKind::Priority => {
            let premium = qos_probe(s, s.premium, s.priority_rate, s.probe_time);
            let background = background_udp(
                &s.probe,
                s.background_rate.map_or(0, Rate::bps),
                s.probe.payload_len(),
                s.probe_time
                    .saturating_add(QOS_PRIORITY_LEAD.saturating_mul(2)),
            );
            alone(premium.clone()).then(beside(
                premium.work(),
                &[background.work()],
                QOS_PRIORITY_LEAD,
            ))
        }
        QosCheckKind::Lbe => {
            let (lbe, background) = crate::qos::checks::lbe_trials(s, QOS_PRIORITY_LEAD);
            beside(background.work(), &[lbe.work()], QOS_PRIORITY_LEAD)
        }
    });
    checks.fold(Work::default(), Work::then)
}

/// One step per ramp value: the foreground beside the background mix
/// (`scenario::background_of`), after `lead`, then `gap`.
fn qos_scenario_work(s: &QosScenarioSpec) -> Work {
    let background: Vec<Work> = background_of(s).iter().map(TestSpec::work).collect();
    foreground_steps(s)
        .iter()
        .map(|fg| plus(beside(fg.work(), &background, s.lead), s.gap))
        .fold(Work::default(), Work::then)
}

// --- overhead -------------------------------------------------------------

/// One probe per payload in `payloads` (no cap in the code: the list is
/// the bound, duplicates included), each followed by `gap`.
fn overhead_work(s: &OverheadSpec) -> Work {
    s.payloads
        .iter()
        .map(|&length| {
            let probe = UdpSpec {
                length,
                ..s.probe.clone()
            };
            gap_after_each(probe.work(), s.gap)
        })
        .fold(Work::default(), Work::then)
}

// --- tune -----------------------------------------------------------------

/// The pings, the unpaced UDP probe (so no bound on the rate), `gap`,
/// the baseline TCP test, `gap`, the verifying TCP test (its window
/// changes nothing bounded here): four trials.
fn tune_work(s: &TuneSpec) -> Work {
    let (ping, udp) = crate::tune::probes(s);
    let tcp = s.test.work();
    let all = ping.work().then(udp.work()).then(tcp.times(2));
    plus(all, s.gap.saturating_mul(2))
}

/// One TCP test per RTT × congestion control × window (at most 500 by
/// validation), each followed by `gap`. The time the lab takes to change
/// a link's RTT between RTTs is the lab's, not counted here.
fn tune_lab_work(s: &TuneLabSpec) -> Work {
    let cells = s.rtts.len() as u64 * s.congestion.len() as u64 * s.windows.len() as u64;
    let test = TcpSpec {
        window: s.windows.first().copied(),
        congestion: s.congestion.first().cloned(),
        ..s.test.clone()
    };
    gap_after_each(test.work().times(cells), s.gap)
}

#[cfg(test)]
#[path = "work_tests.rs"]
mod tests;
