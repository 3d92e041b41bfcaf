//! Running an HTTP benchmark spec: one step (the spec's load), or a
//! ramp's steps one after another with the knee named; live progress
//! each second; the result a `TestResult` (`"test": "http"`) whose
//! intervals are the test's seconds.

use crate::{Events, RunError, Stop};
use sonde_engine::host_env::host_env;
use sonde_http_load::{percentiles, Live, Load, Prepared, Recorder, StepRun};
use sonde_model::{
    Event, Figures, HostEnv, HttpFigures, HttpSpec, HttpStep, Interval, RampSteps, RttStats,
    Summary, TestEnv, TestResult, TestSpec, Timestamp,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub fn run(spec: &HttpSpec, stop: &Stop, events: &Events) -> Result<TestResult, RunError> {
    let prepared = Prepared::new(spec)?;
    let start = Timestamp::now();
    let t0 = Instant::now();
    let live = Arc::new(Live::default());
    let loads: Vec<(Load, Option<Duration>)> = match &spec.ramp {
        None => vec![(
            Load {
                connections: spec.connections,
                rate: spec.rate,
            },
            spec.requests.is_none().then_some(spec.time),
        )],
        Some(ramp) => match &ramp.steps {
            RampSteps::Connections(c) => c
                .iter()
                .map(|c| {
                    let load = Load {
                        connections: *c,
                        rate: None,
                    };
                    (load, Some(ramp.step_time))
                })
                .collect(),
            RampSteps::Rates(r) => r
                .iter()
                .map(|r| {
                    let load = Load {
                        connections: spec.connections,
                        rate: Some(*r),
                    };
                    (load, Some(ramp.step_time))
                })
                .collect(),
        },
    };
    let flag = stop.flag();
    let mut whole = Recorder::default();
    let mut steps = Vec::new();
    let mut offset_s = 0usize;
    let mut intervals = Vec::new();
    let mut interrupted = false;
    for (load, time) in loads {
        let step = with_progress(&prepared, load, time, flag, &live, events, offset_s)?;
        let secs = step.recorder.seconds.len();
        intervals.extend(seconds(&step.recorder, offset_s));
        offset_s += secs.max(time.map_or(0, |t| t.as_secs() as usize));
        steps.push(step_figures(load, &step));
        // Its seconds are intervals already.
        whole.merge_totals(&step.recorder);
        interrupted = step.interrupted;
        if interrupted {
            break;
        }
    }
    let duration_s = t0.elapsed().as_secs_f64();
    let open_loop = spec.rate.is_some()
        || matches!(
            spec.ramp.as_ref().map(|r| &r.steps),
            Some(RampSteps::Rates(_))
        );
    let knee = spec.ramp.as_ref().and_then(|r| knee(&steps, r.rise_pct));
    let optimal_connections = matches!(
        spec.ramp.as_ref().map(|r| &r.steps),
        Some(RampSteps::Connections(_))
    )
    .then(|| optimal_load(&steps))
    .flatten();
    let figures = HttpFigures {
        requests: whole.requests,
        errors: whole.error_count(),
        requests_per_s: whole.requests as f64 / duration_s.max(1e-9),
        received_bytes: whole.received_bytes,
        throughput_bps: (whole.received_bytes as f64 * 8.0 / duration_s.max(1e-9)) as u64,
        status: whole
            .status
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect(),
        errors_by_kind: whole
            .errors
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect(),
        phases_ms: whole.phases_ms(),
        latency_ms: percentiles(&whole.latency),
        uncorrected_latency_ms: if open_loop {
            percentiles(&whole.uncorrected)
        } else {
            None
        },
        rate: spec.rate,
        steps: if spec.ramp.is_some() {
            steps
        } else {
            Vec::new()
        },
        knee,
        optimal_connections,
    };
    let env = TestEnv {
        client: host_env(),
        server: HostEnv::default(),
        peer: None,
        source: None,
        target: None,
        method: None,
    };
    let mut result = TestResult::new(TestSpec::Http(spec.clone()), env, start);
    result.duration_s = duration_s;
    result.interrupted = interrupted;
    result.intervals = intervals;
    result.summary = Summary {
        round_trip: Some(headline(&whole, duration_s)),
        ..Summary::default()
    };
    result.http = Some(figures);
    Ok(result)
}

/// Runs a step while a thread tells the live view each second.
fn with_progress(
    prepared: &Prepared,
    load: Load,
    time: Option<Duration>,
    stop: &Arc<AtomicBool>,
    live: &Arc<Live>,
    events: &Events,
    offset_s: usize,
) -> Result<StepRun, RunError> {
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut last = (0u64, 0u64);
            let mut second = 0usize;
            let begun = Instant::now();
            while !done.load(Ordering::Relaxed) {
                let next = begun + Duration::from_secs(second as u64 + 1);
                while Instant::now() < next && !done.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(20));
                }
                if done.load(Ordering::Relaxed) {
                    break;
                }
                let (requests, _, bytes) = live.totals();
                let now = (requests, bytes);
                events.emit(Event::Interval(one_second(
                    offset_s + second,
                    Figures {
                        received_packets: Some(now.0 - last.0),
                        received_bytes: Some(now.1 - last.1),
                        throughput_bps: Some((now.1 - last.1) * 8),
                        ..Figures::default()
                    },
                )));
                last = now;
                second += 1;
            }
        });
        let out = prepared.run_step(load, time, stop, live);
        done.store(true, Ordering::Relaxed);
        out.map_err(RunError::from)
    })
}

/// Requests as round trips: sent, answered, never answered (and the
/// share of them), the answers' bytes and rate, and their latency.
fn round_trips(
    answered: u64,
    unanswered: u64,
    bytes: u64,
    secs: f64,
    h: &hdrhistogram::Histogram<u64>,
) -> Figures {
    let sent = answered + unanswered;
    Figures {
        sent_packets: Some(sent),
        received_packets: Some(answered),
        lost_packets: Some(unanswered),
        loss_pct: Some(if sent == 0 {
            0.0
        } else {
            100.0 * unanswered as f64 / sent as f64
        }),
        duplicates: Some(0),
        received_bytes: Some(bytes),
        throughput_bps: Some((bytes as f64 * 8.0 / secs.max(1e-9)) as u64),
        rtt_ms: rtt_stats(h),
        ..Figures::default()
    }
}

/// The whole test's round trips: the result's headline.
fn headline(r: &Recorder, duration_s: f64) -> Figures {
    let unanswered = r.errors.values().sum();
    round_trips(
        r.requests,
        unanswered,
        r.received_bytes,
        duration_s,
        &r.latency,
    )
}

fn rtt_stats(h: &hdrhistogram::Histogram<u64>) -> Option<RttStats> {
    let p = percentiles(h)?;
    Some(RttStats {
        min: h.min() as f64 / 1000.0,
        avg: p.mean,
        max: p.max,
        mdev: h.stdev() / 1000.0,
        p50: p.p50,
        p90: p.p90,
        p99: p.p99,
    })
}

/// Second `second` of the test as an interval of answers (`round_trip`).
fn one_second(second: usize, round_trip: Figures) -> Interval {
    let start_s = second as f64;
    Interval {
        start_s,
        end_s: start_s + 1.0,
        omitted: false,
        size_bytes: None,
        streams: Vec::new(),
        sums: Vec::new(),
        round_trip: Some(round_trip),
    }
}

/// Each second of a step as an interval, numbered from `offset_s`.
fn seconds(r: &Recorder, offset_s: usize) -> Vec<Interval> {
    r.seconds
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let figures = round_trips(s.requests, s.unanswered, s.bytes, 1.0, &s.latency);
            one_second(offset_s + i, figures)
        })
        .collect()
}

fn step_figures(load: Load, step: &StepRun) -> HttpStep {
    let secs = step.elapsed.as_secs_f64().max(1e-9);
    HttpStep {
        connections: load.rate.is_none().then_some(load.connections),
        rate: load.rate,
        requests: step.recorder.requests,
        errors: step.recorder.error_count(),
        requests_per_s: step.recorder.requests as f64 / secs,
        latency_ms: percentiles(&step.recorder.latency),
        phases_ms: Some(step.recorder.phases_ms()),
    }
}

/// Kleinrock's optimal load: the highest throughput of any step times the
/// lowest median latency of any step (requests in flight at the knee).
pub fn optimal_load(steps: &[HttpStep]) -> Option<f64> {
    let most = steps.iter().map(|s| s.requests_per_s).fold(0.0, f64::max);
    let least = steps
        .iter()
        .filter_map(|s| s.latency_ms.map(|l| l.p50))
        .fold(f64::INFINITY, f64::min);
    (most > 0.0 && least.is_finite()).then(|| most * least / 1000.0)
}

/// The knee: the first step whose median latency is more than
/// `rise_pct` over the first step's, or that has errors.
pub fn knee(steps: &[HttpStep], rise_pct: f64) -> Option<usize> {
    let base = steps.first()?.latency_ms?.p50;
    steps.iter().enumerate().skip(1).find_map(|(i, s)| {
        let rose = s
            .latency_ms
            .is_some_and(|l| l.p50 > base * (1.0 + rise_pct / 100.0));
        (rose || s.errors > 0).then_some(i)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_model::LatencyPercentiles;

    fn step(c: u32, p50: f64, errors: u64) -> HttpStep {
        HttpStep {
            connections: Some(c),
            rate: None,
            requests: 100,
            errors,
            requests_per_s: 100.0,
            phases_ms: None,
            latency_ms: Some(LatencyPercentiles {
                mean: p50,
                p50,
                p75: p50,
                p90: p50,
                p99: p50,
                p99_9: p50,
                p99_99: p50,
                max: p50,
            }),
        }
    }

    #[test]
    fn the_knee_is_the_first_step_over_the_rise_or_with_errors() {
        let steps = [
            step(1, 5.0, 0),
            step(4, 5.2, 0),
            step(8, 5.4, 0),
            step(9, 5.7, 0),
        ];
        assert_eq!(knee(&steps, 10.0), Some(3));
        assert_eq!(knee(&steps, 20.0), None);
        let steps = [step(1, 5.0, 0), step(2, 5.0, 1)];
        assert_eq!(knee(&steps, 10.0), Some(1));
        assert_eq!(knee(&[], 10.0), None);
        // 1,600 a second at best, 5 ms at best: 8 in flight.
        let mut steps = [step(1, 5.0, 0), step(8, 5.5, 0), step(16, 10.0, 0)];
        steps[2].requests_per_s = 1600.0;
        assert_eq!(optimal_load(&steps), Some(8.0));
    }
}
