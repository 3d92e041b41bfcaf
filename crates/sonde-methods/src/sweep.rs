//! A sweep (`sonde sweep`): one variable stepped (offered rate, payload,
//! streams, TCP window), the rest held, each direction measured as its
//! own series (forward, reverse, or both at once), with an idle gap
//! between steps so queues drain. Each step runs through
//! [`run_step`](crate::step::run_step), so repeats and `--families`
//! apply per step. A rate sweep names each direction's [`limiter`]
//! (crate::limiter), and can narrow a punisher's knee by bisection.

use crate::limiter::{classify, CurvePoint};
use crate::step::{family_ratios, figures_of, run_step, step_stats, FamilyRuns};
use crate::MethodError;
use sonde_model::method::{Limiter, LimiterClass, Metric, SweepSpec, SweepStep, SweepVariable};
use sonde_model::{
    Direction, Event, Figures, IpFamily, MethodEvent, MethodResult, MethodSpec, Rate, TestResult,
    TestSpec, Timestamp,
};
use sonde_run::{Events, Runner, Stop};
use std::time::Instant;

/// A sweep's value at one step.
#[derive(Debug, Clone, Copy)]
enum Value {
    Rate(Rate),
    Payload(u32),
    Streams(u16),
    Window(sonde_model::ByteSize),
}

impl Value {
    fn apply(self, spec: &TestSpec) -> TestSpec {
        match self {
            Value::Rate(r) => spec.with_rate(r),
            Value::Payload(b) => spec.with_length(b),
            Value::Streams(n) => spec.with_parallel(n),
            Value::Window(w) => spec.with_window(w),
        }
    }

    fn as_f64(self) -> f64 {
        match self {
            Value::Rate(r) => r.bps() as f64,
            Value::Payload(b) => f64::from(b),
            Value::Streams(n) => f64::from(n),
            Value::Window(w) => w.bytes() as f64,
        }
    }
}

fn values(v: &SweepVariable) -> Vec<Value> {
    match v {
        SweepVariable::Rates(r) => r.iter().copied().map(Value::Rate).collect(),
        SweepVariable::Payloads(p) => p.iter().copied().map(Value::Payload).collect(),
        SweepVariable::Streams(s) => s.iter().copied().map(Value::Streams).collect(),
        SweepVariable::Windows(w) => w.iter().copied().map(Value::Window).collect(),
    }
}

/// The mean of a figure over a family's runs in `direction`.
fn mean_of(runs: &FamilyRuns, d: Direction, f: impl Fn(&Figures) -> Option<f64>) -> Option<f64> {
    let v: Vec<f64> = runs
        .results
        .iter()
        .filter_map(|r| figures_of(r, Some(d)).and_then(&f))
        .collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn payload_of(spec: &TestSpec) -> u32 {
    match spec {
        TestSpec::Ping(_) => 0,
        _ => spec.length().unwrap_or(0),
    }
}

/// The steps of one run of the plan: one per family and flow.
fn steps_of(series: Direction, value: f64, spec: &TestSpec, fams: &[FamilyRuns]) -> Vec<SweepStep> {
    let mut out = Vec::new();
    for fam in fams.iter().filter(|f| !f.results.is_empty()) {
        for &d in series.flows() {
            let stats = step_stats(fam, Some(d));
            let m = |metric: Metric| stats.stats.get(metric.name()).map(|s| s.mean);
            out.push(SweepStep {
                series,
                direction: d,
                family: fam.family,
                value,
                payload_bytes: payload_of(spec),
                refined: false,
                offered_bps: m(Metric::SenderThroughputBps),
                goodput_bps: m(Metric::ThroughputBps),
                pdr_pct: m(Metric::PdrPct),
                loss_pct: m(Metric::LossPct),
                jitter_ms: m(Metric::JitterMs),
                delay_ms: m(Metric::DelayMs),
                delay_p99_ms: mean_of(fam, d, |f| f.delay.map(|x| x.p99_ms)),
                retransmits: m(Metric::Retransmits),
                runs: stats,
            });
        }
    }
    out
}

/// The curve of one flow and family, for the classifier.
fn curve(steps: &[SweepStep], series: Direction, d: Direction, fam: IpFamily) -> Vec<CurvePoint> {
    steps
        .iter()
        .filter(|s| s.series == series && s.direction == d && s.family == fam)
        .filter_map(|s| {
            Some(CurvePoint {
                offered_bps: s.offered_bps?,
                delivered_bps: s.goodput_bps?,
                payload_bytes: s.payload_bytes,
                loss_pct: s.loss_pct,
                delay_avg_ms: s.delay_ms,
                delay_p99_ms: s.delay_p99_ms,
            })
        })
        .collect()
}

/// A sweep in progress: what ran so far.
struct Sweep<'a> {
    runner: &'a dyn Runner,
    spec: &'a SweepSpec,
    stop: &'a Stop,
    events: &'a Events,
    result: MethodResult,
    ran_one: bool,
}

impl Sweep<'_> {
    /// Runs one step (after the gap); false once stopped.
    fn step(
        &mut self,
        series: Direction,
        value: Value,
        refined: bool,
    ) -> Result<bool, MethodError> {
        if self.ran_one {
            crate::step::idle(self.spec.gap, self.stop);
        }
        if self.stop.is_stopped() {
            self.result.interrupted = true;
            return Ok(false);
        }
        self.ran_one = true;
        let test = value.apply(&self.spec.test.with_direction(series));
        let trials = &mut self.result.trials;
        let runs = run_step(
            self.runner,
            &test,
            &self.spec.step,
            self.stop,
            self.events,
            &mut |r: &TestResult| trials.push(r.clone()),
        );
        let runs = match runs {
            Ok(runs) => runs,
            // A stop that cut a trial's set-up short (a wait ended by the
            // signal reports itself as a failed call): keep what ran.
            Err(e) if self.stop.is_stopped() && !e.is_usage() => {
                tracing::debug!(error = %e, "sweep stopped during a trial's set-up");
                self.result.interrupted = true;
                return Ok(false);
            }
            Err(e) => return Err(e),
        };
        let mut steps = steps_of(series, value.as_f64(), &test, &runs.families);
        let stats: Vec<_> = steps
            .iter()
            .filter(|s| s.direction == series.flows()[0])
            .map(|s| s.runs.clone())
            .collect();
        let at = format!("{} {}", dir_name(series), value.as_f64());
        self.result
            .family_ratios
            .extend(family_ratios(&stats, Some(&at)));
        for s in &mut steps {
            s.refined = refined;
            self.events
                .emit(Event::Method(MethodEvent::SweepStep(s.clone())));
        }
        self.result.steps.extend(steps);
        if runs.interrupted {
            self.result.interrupted = true;
            return Ok(false);
        }
        Ok(true)
    }

    /// Narrows a punisher's knee between the highest rate delivered whole
    /// and the lowest that collapsed, by bisection of the offered rate.
    fn refine(&mut self, series: Direction) -> Result<bool, MethodError> {
        let d = series.flows()[0];
        let fam = families(&self.spec.test, &self.spec.step)[0];
        for _ in 0..self.spec.refine_trials {
            let c = classify(&curve(&self.result.steps, series, d, fam));
            let (LimiterClass::Punisher, Some((lo, hi))) = (c.class, c.evidence.bracket_bps) else {
                return Ok(true);
            };
            if hi - lo <= 0.005 * lo {
                return Ok(true);
            }
            // The bracket is in offered (sender) rate; ask the same per stream.
            let streams = match &self.spec.test {
                TestSpec::Udp(s) => f64::from(s.parallel.max(1)),
                TestSpec::Tcp(s) => f64::from(s.parallel.max(1)),
                TestSpec::Ping(_) | TestSpec::Http(_) | TestSpec::Trace(_) => 1.0,
            };
            let mid = Rate::from_bps(((lo + hi) / 2.0 / streams).round() as u64);
            if !self.step(series, Value::Rate(mid), true)? {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

fn dir_name(d: Direction) -> &'static str {
    match d {
        Direction::Forward => "forward",
        Direction::Reverse => "reverse",
        Direction::Bidir => "bidir",
    }
}

fn families(test: &TestSpec, plan: &sonde_model::method::StepPlan) -> Vec<IpFamily> {
    crate::step::families_of(test, plan)
}

/// Runs `spec` through `runner`. Each step goes on `events` as it
/// finishes ([`MethodEvent::SweepStep`], in the order of `steps`). A
/// stop ends the sweep with what ran (`interrupted`); a failed trial
/// ends it with its error.
pub fn run_sweep(
    runner: &dyn Runner,
    spec: &SweepSpec,
    stop: &Stop,
    events: &Events,
) -> Result<MethodResult, MethodError> {
    spec.validate()?;
    let began = Instant::now();
    let mut sweep = Sweep {
        runner,
        spec,
        stop,
        events,
        result: MethodResult::new(MethodSpec::Sweep(spec.clone()), Timestamp::now()),
        ran_one: false,
    };
    let is_rates = matches!(spec.variable, SweepVariable::Rates(_));
    'series: for &series in &spec.directions {
        for value in values(&spec.variable) {
            if !sweep.step(series, value, false)? {
                break 'series;
            }
        }
        if is_rates && series != Direction::Bidir && !sweep.refine(series)? {
            break;
        }
    }
    let mut result = sweep.result;
    if is_rates {
        result.limiters = limiters(spec, &result.steps);
    }
    result.duration_s = began.elapsed().as_secs_f64();
    Ok(result)
}

/// One limiter per series, flow and family measured.
fn limiters(spec: &SweepSpec, steps: &[SweepStep]) -> Vec<Limiter> {
    let mut out = Vec::new();
    for &series in &spec.directions {
        for &d in series.flows() {
            for fam in families(&spec.test, &spec.step) {
                let points = curve(steps, series, d, fam);
                if points.is_empty() {
                    continue;
                }
                let c = classify(&points);
                out.push(Limiter {
                    series,
                    direction: d,
                    family: fam,
                    class: c.class,
                    knee_bps: c.knee_bps,
                    knee_pps: c.knee_pps,
                    confidence: c.confidence,
                    evidence: c.evidence,
                });
            }
        }
    }
    out
}
