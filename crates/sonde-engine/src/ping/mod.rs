//! `sonde ping`: ICMP/ICMPv6 echo or STAMP test packets to a reflector,
//! one series per size, with RTT statistics per series and per interval.

pub(crate) mod echo;
pub mod icmp;
pub mod latency;
pub mod probe_opts;
pub mod sent_times;
pub mod series;
pub mod stamp;

use crate::connect::resolve;
use crate::host_env::host_env;
use crate::EngineError;
use icmp::IcmpProber;
use probe_opts::ProbeOptions;
use series::{Prober, SeriesOutcome, SeriesPlan};
use sonde_model::ping::{ClassOfServiceSeen, OneWayDelays, PingReply};
use sonde_model::udp_report::DscpCounts;
use sonde_model::{
    Figures, HostEnv, Interval, IpFamily, PingProto, PingSeries, PingSource, PingSpec, ProbeMethod,
    RttStats, Summary, TestEnv, TestResult, TestSpec, Timestamp,
};
use sonde_wire::stamp::{HmacKey, Mode};
use stamp::StampProber;
use std::net::IpAddr;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// What the caller learns while a ping runs.
pub enum PingEvent<'a> {
    /// A series is about to start: its size, target and method.
    Series {
        size: u32,
        target: IpAddr,
        method: ProbeMethod,
    },
    Reply(&'a PingReply),
}

/// Figures for the first answers among `replies` to `sent` requests.
fn counts(sent: u64, replies: &[&PingReply], reordered: Option<u64>) -> Figures {
    let firsts: Vec<f64> = replies
        .iter()
        .filter(|r| !r.duplicate)
        .map(|r| r.rtt_ms)
        .collect();
    let dups = replies.iter().filter(|r| r.duplicate).count() as u64;
    Figures::round_trip(sent, &firsts, dups, reordered)
}

fn one_way(replies: &[&PingReply], clock_synced: bool) -> Option<OneWayDelays> {
    let firsts: Vec<&&PingReply> = replies.iter().filter(|r| !r.duplicate).collect();
    let pick = |f: fn(&PingReply) -> Option<f64>| {
        let v: Vec<f64> = firsts.iter().filter_map(|r| f(r)).collect();
        RttStats::from_ms(&v)
    };
    let dwell = pick(|r| r.dwell_ms);
    dwell.map(|d| OneWayDelays {
        clock_synced,
        forward_ms: pick(|r| r.forward_ms),
        backward_ms: pick(|r| r.backward_ms),
        dwell_ms: Some(d),
    })
}

/// What the replies' Class of Service TLVs and markings said.
fn class_of_service(spec: &PingSpec, replies: &[&PingReply]) -> ClassOfServiceSeen {
    let mut seen = ClassOfServiceSeen {
        sent: spec.dscp.unwrap_or_default(),
        at_reflector: DscpCounts::default(),
        returned: DscpCounts::default(),
        not_understood: 0,
    };
    for r in replies.iter().filter(|r| !r.duplicate) {
        match r.dscp_at_reflector {
            Some(d) => seen.at_reflector.add(d.value(), 1),
            None => seen.not_understood += 1,
        }
        if let Some(d) = r.dscp_returned {
            seen.returned.add(d.value(), 1);
        }
    }
    seen
}

/// Splits a series into reporting intervals by send time.
fn intervals(o: &SeriesOutcome, size: u32, every_s: f64) -> Vec<Interval> {
    let Some(&first) = o.sent_at_s.first() else {
        return Vec::new();
    };
    let last = o.sent_at_s.last().copied().unwrap_or(first);
    let n = (((last - first) / every_s).floor() as usize) + 1;
    (0..n)
        .map(|i| {
            let (from, to) = (first + i as f64 * every_s, first + (i + 1) as f64 * every_s);
            let in_window = |t: f64| t >= from && (t < to || (i + 1 == n && t <= to));
            let sent = o.sent_at_s.iter().filter(|t| in_window(**t)).count() as u64;
            let replies: Vec<&PingReply> =
                o.replies.iter().filter(|r| in_window(r.sent_s)).collect();
            Interval {
                start_s: from,
                end_s: to.min(last.max(from)),
                omitted: false,
                size_bytes: Some(size),
                streams: Vec::new(),
                sums: Vec::new(),
                // Order is followed per series, not per interval.
                round_trip: Some(counts(sent, &replies, None)),
            }
        })
        .collect()
}

/// Runs `spec`: every size in turn, `on_event` seeing each series start
/// and each answer. `stamp_key`: the key of authenticated STAMP (`proto =
/// udp`; `None`: unauthenticated).
pub fn run_ping(
    spec: &PingSpec,
    stamp_key: Option<&[u8]>,
    stop: &AtomicBool,
    on_event: &mut dyn FnMut(PingEvent<'_>),
) -> Result<TestResult, EngineError> {
    // A source address picks the family of the target (iputils -I).
    let family = match spec.source() {
        Some(PingSource::Address(a)) if spec.family == IpFamily::Any => {
            if a.is_ipv6() {
                IpFamily::V6
            } else {
                IpFamily::V4
            }
        }
        _ => spec.family,
    };
    let addrs = resolve(&spec.host, spec.port, family)?;
    let target = *addrs.first().ok_or_else(|| EngineError::NoAddress {
        host: spec.host.clone(),
        family: "usable",
    })?;
    let opts = ProbeOptions::of(spec);
    let mut prober: Box<dyn Prober> = match spec.proto {
        PingProto::Icmp => Box::new(IcmpProber::open(target, &opts)?),
        PingProto::Udp => {
            let mode = match stamp_key {
                None => Mode::Unauthenticated,
                Some(k) => Mode::Authenticated(
                    HmacKey::new(k).map_err(|e| EngineError::Unavailable(e.to_string()))?,
                ),
            };
            Box::new(StampProber::open(
                target,
                &opts,
                mode,
                spec.clock_synced,
                spec.cos,
            )?)
        }
    };
    let method = prober.method();
    let start = Timestamp::now();
    let t0 = Instant::now();
    let deadline = spec.deadline.map(|d| t0 + d);
    let mut series = Vec::new();
    let mut all_intervals = Vec::new();
    let (mut sent, mut all_replies, mut reordered, mut interrupted) = (0, Vec::new(), 0, false);
    for size in spec.series_sizes() {
        on_event(PingEvent::Series {
            size,
            target: target.ip(),
            method,
        });
        let plan = SeriesPlan {
            size,
            count: spec.count,
            interval: spec.interval,
            timeout: spec.timeout,
            deadline,
        };
        let o = series::run(prober.as_mut(), plan, t0, stop, &mut |r| {
            on_event(PingEvent::Reply(r))
        })
        .map_err(EngineError::io("pinging"))?;
        let replies: Vec<&PingReply> = o.replies.iter().collect();
        series.push(PingSeries {
            size_bytes: size,
            figures: counts(o.sent, &replies, Some(o.reordered)),
            one_way: one_way(&replies, spec.clock_synced),
            cos: spec.cos.then(|| class_of_service(spec, &replies)),
            timestamps: Some(o.timestamps),
        });
        all_intervals.extend(intervals(
            &o,
            size,
            spec.report_interval.as_secs_f64().max(1e-3),
        ));
        sent += o.sent;
        reordered += o.reordered;
        all_replies.extend(o.replies);
        if o.interrupted {
            interrupted = true;
            break;
        }
        if o.deadline_reached {
            break;
        }
    }
    let refs: Vec<&PingReply> = all_replies.iter().collect();
    let env = TestEnv {
        client: host_env(),
        // A ping target does not describe itself.
        server: HostEnv::default(),
        peer: None,
        source: crate::connect::source_toward(target.ip(), None),
        target: Some(target.ip()),
        method: Some(method),
    };
    let mut result = TestResult::new(TestSpec::Ping(spec.clone()), env, start);
    result.duration_s = t0.elapsed().as_secs_f64();
    result.interrupted = interrupted;
    result.intervals = all_intervals;
    result.series = series;
    result.summary = Summary {
        round_trip: Some(counts(sent, &refs, Some(reordered))),
        ..Summary::default()
    };
    Ok(result)
}
