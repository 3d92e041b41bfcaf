//! RFC 2544 §26.1 throughput (`sonde ndr`): the highest rate at which a
//! trial loses nothing (or at most `loss_pct`), per frame size, each size
//! found by a [`Search`] and confirmed by a longer trial.
//!
//! Per size: a first trial at the maximum rate (`max_rate`, or the
//! unpaced sender's); if it passes, that is the rate. Otherwise the
//! search narrows the bracket to `resolution_pct` of its upper end, with
//! `gap` idle between trials so queues drain, then a trial of
//! `confirm_time` at the rate found must pass on loss alone (RFC 2544's
//! criterion; it asks for 60 s). A failed confirmation sends the search
//! on below it (at most three times).

mod frames;
mod search;

pub use frames::{efficiency_pct, frame_size, max_pps, FrameSize};
pub use search::{judge, Search, TrialOutcome, Verdict};

use crate::step::families_of;
use crate::MethodError;
use sonde_model::method::{FamilyRatio, Metric, NdrSize, NdrSpec, NdrTrial};
use sonde_model::{
    Event, IpFamily, MethodEvent, MethodResult, MethodSpec, Rate, TestResult, TestSpec, Timestamp,
    UdpSpec,
};
use sonde_run::{Events, RunError, Runner, Stop};
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// Most trials one size may take, confirmations included.
pub const MAX_TRIALS_PER_SIZE: u32 = 30;
/// Confirmations one size may fail before its search gives up.
const MAX_CONFIRMS: u32 = 3;

/// Runs the search of `spec` through `runner`: every size over every
/// family (`spec.step.families`, or the trial's own, made concrete by
/// [`resolve_families`], whose spec the result keeps), in that order.
/// Each trial, judged, goes on `events` as it finishes
/// ([`MethodEvent::NdrTrial`], one per trial in `trials`, in order). A
/// stop ends the method with what ran (`interrupted`).
pub fn run_ndr(
    runner: &dyn Runner,
    spec: &NdrSpec,
    stop: &Stop,
    events: &Events,
) -> Result<MethodResult, MethodError> {
    spec.validate()?;
    let spec = &resolve_families(runner, spec)?;
    let mut result = MethodResult::new(MethodSpec::Ndr(spec.clone()), Timestamp::now());
    let clock = Instant::now();
    let families = families_of(&TestSpec::Udp(spec.trial.clone()), &spec.step);
    let mut ctx = Ctx {
        runner,
        spec,
        stop,
        events,
        trials: Vec::new(),
        count: 0,
    };
    'sizes: for &size in &spec.sizes {
        for &family in &families {
            let fs = frame_size(size, spec.size_kind, family);
            match ctx.search_size(family, &fs) {
                Ok(found) => result.results.push(found),
                Err(Halt::Stopped) => {
                    result.interrupted = true;
                    break 'sizes;
                }
                Err(Halt::Failed(e)) => return Err(e),
            }
        }
    }
    result.family_ratios = ratios(&result.results);
    result.trials = ctx.trials;
    result.duration_s = clock.elapsed().as_secs_f64();
    Ok(result)
}

/// `spec` with the family its frame sizes need (an IPv4 header is 20
/// bytes shorter than IPv6's): a trial of `family = any` (and no
/// `step.families`) gets the family of the first address its host has,
/// IPv6 first, as the runner connects. Each family searched must have an
/// address, else a usage error names `trial.host` (or `step.families`).
/// A literal address is its own answer; any other host is looked up
/// through [`Runner::resolve`] (no socket here). A runner that cannot
/// tell (its tests start elsewhere) leaves `any`, sized as IPv6.
pub fn resolve_families(runner: &dyn Runner, spec: &NdrSpec) -> Result<NdrSpec, MethodError> {
    let mut spec = spec.clone();
    let (families, field) = if spec.step.families.is_empty() {
        (vec![spec.trial.family], "trial.host")
    } else {
        (spec.step.families.clone(), "step.families")
    };
    let host = spec.trial.host.as_str();
    let literal = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
        .ok();
    let mut found = None;
    for family in families {
        let first = match literal {
            Some(ip) if family_of(ip, family) => Some(ip),
            _ => runner
                .resolve(host, family)
                .map_err(|e| MethodError::Invalid {
                    field,
                    detail: e.to_string(),
                })?
                .first()
                .copied(),
        };
        if family == IpFamily::Any && field == "trial.host" {
            found = first;
        }
    }
    if let Some(ip) = found {
        spec.trial.family = if ip.is_ipv4() {
            IpFamily::V4
        } else {
            IpFamily::V6
        };
    }
    Ok(spec)
}

/// Whether `ip` is an address of `family`.
fn family_of(ip: IpAddr, family: IpFamily) -> bool {
    match family {
        IpFamily::Any => true,
        IpFamily::V4 => ip.is_ipv4(),
        IpFamily::V6 => ip.is_ipv6(),
    }
}

/// What ends a search early: a stop, or a trial that failed.
enum Halt {
    Stopped,
    Failed(MethodError),
}

struct Ctx<'a> {
    runner: &'a dyn Runner,
    spec: &'a NdrSpec,
    stop: &'a Stop,
    events: &'a Events,
    trials: Vec<TestResult>,
    /// Trials started in all.
    count: usize,
}

impl Ctx<'_> {
    /// One trial at `rate_pps` (`None`: unpaced) for `time`.
    fn trial(
        &mut self,
        family: IpFamily,
        fs: &FrameSize,
        rate_pps: Option<f64>,
        time: Duration,
    ) -> Result<(TrialOutcome, usize), Halt> {
        if !self.trials.is_empty() && !self.spec.gap.is_zero() {
            crate::step::idle(self.spec.gap, self.stop);
        }
        if self.stop.is_stopped() {
            return Err(Halt::Stopped);
        }
        let parallel = f64::from(self.spec.trial.parallel.max(1));
        let bitrate = rate_pps.map_or(0, |pps| {
            (pps * f64::from(fs.payload_bytes) * 8.0 / parallel)
                .round()
                .max(1.0) as u64
        });
        let test = UdpSpec {
            family,
            length: fs.payload_bytes,
            bitrate: Rate::from_bps(bitrate),
            time,
            omit: Duration::ZERO,
            bytes: None,
            blocks: None,
            ..self.spec.trial.clone()
        };
        self.count += 1;
        match self
            .runner
            .run(&TestSpec::Udp(test), self.stop, self.events)
        {
            Ok(r) => {
                let o = outcome(&r, fs, self.spec.trial.direction);
                self.trials.push(r);
                if self.trials.last().is_some_and(|r| r.interrupted) {
                    return Err(Halt::Stopped);
                }
                Ok((o, self.trials.len() - 1))
            }
            Err(RunError::Interrupted) => Err(Halt::Stopped),
            Err(source) => Err(Halt::Failed(MethodError::Trial {
                trial: self.count,
                source,
            })),
        }
    }

    /// Tells the listeners how the trial kept at `index` was judged.
    #[allow(clippy::too_many_arguments)]
    fn report(
        &self,
        family: IpFamily,
        fs: &FrameSize,
        trial: u32,
        confirming: bool,
        outcome: TrialOutcome,
        verdict: Verdict,
        index: usize,
    ) {
        self.events
            .emit(Event::Method(MethodEvent::NdrTrial(NdrTrial {
                family,
                frame_bytes: fs.frame_bytes,
                payload_bytes: fs.payload_bytes,
                raised_from: fs.raised_from,
                trial,
                confirming,
                outcome,
                verdict,
                result: self.trials[index].id,
            })));
    }

    /// Searches one size over one family.
    fn search_size(&mut self, family: IpFamily, fs: &FrameSize) -> Result<NdrSize, Halt> {
        let spec = self.spec;
        let res = spec.resolution_pct / 100.0;
        let frame_bits = f64::from(fs.frame_bytes) * 8.0;
        let first_rate = spec.max_rate.map(|r| r.bps() as f64 / frame_bits);
        // Fewer than 20 packets in a trial cannot tell a rate.
        let floor = 20.0 / spec.trial_time.as_secs_f64();
        let mut search = Search::new(spec.search, spec.resolution_pct, floor);
        let mut ids = Vec::new();
        let mut notes = Vec::new();
        if let Some(asked) = fs.raised_from {
            notes.push(format!(
                "{asked}-byte frames cannot carry IP, UDP and sonde's test header; searched at {} bytes",
                fs.frame_bytes
            ));
        }
        let mut n = 0u32;
        let (o, i) = self.trial(family, fs, first_rate, spec.trial_time)?;
        n += 1;
        ids.push(self.trials[i].id);
        let v = search.reconsider(
            first_rate.unwrap_or(o.offered_pps),
            judge(&o, spec.loss_pct, res),
        );
        // The first trial's rate is what the sender reached (all of
        // it, when unpaced); short of the asked maximum, say so.
        let start = first_rate.map_or(o.offered_pps, |r| r.min(o.offered_pps.max(r * 0.999)));
        if first_rate.is_some_and(|r| o.offered_pps < r * (1.0 - res)) {
            notes.push(format!(
                "the sender reached {:.0} frames/s of the {:.0} asked",
                o.offered_pps,
                first_rate.unwrap_or_default()
            ));
        }
        self.report(family, fs, n, false, o, v, i);
        search.record(start, &o, v);
        let mut confirms = 0;
        // The rate found, the trial whose figures report it, and whether
        // that trial confirmed it.
        let (found, shown, confirmed) = loop {
            while let Some(rate) = search.next() {
                if n >= MAX_TRIALS_PER_SIZE {
                    break;
                }
                let (o, i) = self.trial(family, fs, Some(rate), spec.trial_time)?;
                n += 1;
                ids.push(self.trials[i].id);
                let v = search.reconsider(rate, judge(&o, spec.loss_pct, res));
                self.report(family, fs, n, false, o, v, i);
                search.record(rate, &o, v);
            }
            if search.lo <= 0.0 {
                break (None, None, false);
            }
            if spec.confirm_time.is_zero() || n >= MAX_TRIALS_PER_SIZE {
                break (Some(search.lo), None, false);
            }
            let rate = search.lo;
            let (o, i) = self.trial(family, fs, Some(rate), spec.confirm_time)?;
            n += 1;
            ids.push(self.trials[i].id);
            // RFC 2544 judges the long trial by loss alone.
            let v = if over_loss(o.loss_pct, spec.loss_pct) {
                Verdict::Loss
            } else {
                Verdict::Pass
            };
            self.report(family, fs, n, true, o, v, i);
            if v.passed() {
                break (Some(rate), Some(i), true);
            }
            confirms += 1;
            notes.push(format!(
                "{:.0} frames/s passed a {} s trial but lost {:.4} % over {} s",
                rate,
                spec.trial_time.as_secs_f64(),
                o.loss_pct,
                spec.confirm_time.as_secs_f64()
            ));
            if confirms >= MAX_CONFIRMS {
                // No rate held over the long trial: the last one tried is
                // reported, with its loss, as not confirmed.
                break (Some(rate), Some(i), false);
            }
            search.unconfirm(&o);
        };
        Ok(self.size_result(family, fs, found, shown, confirmed, n, ids, notes))
    }

    #[allow(clippy::too_many_arguments)]
    fn size_result(
        &self,
        family: IpFamily,
        fs: &FrameSize,
        found: Option<f64>,
        shown: Option<usize>,
        confirmed: bool,
        trials: u32,
        trial_ids: Vec<sonde_model::ResultId>,
        notes: Vec<String>,
    ) -> NdrSize {
        let spec = self.spec;
        let confirm = shown.map(|i| &self.trials[i]);
        let figures = confirm.and_then(|r| r.summary.direction(spec.trial.direction));
        // The rate offered in the confirming trial, as the sender counted
        // it; else the rate the search settled on.
        let pps = match (found, figures.and_then(|f| f.sender_throughput_bps)) {
            (Some(_), Some(sent_bps)) => sent_bps as f64 / (8.0 * f64::from(fs.payload_bytes)),
            (Some(rate), None) => rate,
            (None, _) => 0.0,
        };
        let frame_bits = 8.0 * f64::from(fs.frame_bytes);
        let max = spec.link_rate.map(|r| max_pps(r.bps(), fs.frame_bytes));
        NdrSize {
            family,
            payload_bytes: fs.payload_bytes,
            frame_bytes: fs.frame_bytes,
            rate_bps: (pps * frame_bits).round() as u64,
            rate_pps: pps,
            payload_rate_bps: (pps * 8.0 * f64::from(fs.payload_bytes)).round() as u64,
            loss_pct: figures.and_then(|f| f.loss_pct).unwrap_or(0.0),
            trials,
            confirmed,
            efficiency_pct: efficiency_pct(fs.frame_bytes),
            max_pps: max,
            max_frame_bps: max.map(|m| (m * frame_bits).round() as u64),
            delay: figures.and_then(|f| f.delay),
            rtt_p50_ms: confirm
                .and_then(|r| r.summary.latency.as_ref())
                .and_then(|l| l.loaded.rtt_ms.as_ref())
                .map(|r| r.p50),
            trial_ids,
            notes,
        }
    }
}

fn over_loss(loss_pct: f64, bound_pct: f64) -> bool {
    if bound_pct == 0.0 {
        loss_pct > 0.0
    } else {
        loss_pct > bound_pct
    }
}

/// What a trial's result says, in frames per second of this size.
fn outcome(r: &TestResult, fs: &FrameSize, d: sonde_model::Direction) -> TrialOutcome {
    let per_bit = 1.0 / (8.0 * f64::from(fs.payload_bytes));
    let f = r.summary.direction(d);
    let get = |v: Option<u64>| v.map_or(0.0, |b| b as f64 * per_bit);
    TrialOutcome {
        offered_pps: get(f.and_then(|f| f.sender_throughput_bps)),
        delivered_pps: get(f.and_then(|f| f.throughput_bps)),
        // A trial with no figures for its direction lost everything.
        loss_pct: f.and_then(|f| f.loss_pct).unwrap_or(100.0),
        delay_rise_ms: f.and_then(|f| f.delay).map(|d| d.p99_ms - d.min_ms),
    }
}

/// IPv6's no-drop payload rate over IPv4's, size by size (both searched).
fn ratios(results: &[NdrSize]) -> Vec<FamilyRatio> {
    let mut out = Vec::new();
    for v6 in results.iter().filter(|r| r.family == IpFamily::V6) {
        let twin = results.iter().find(|r| {
            r.family == IpFamily::V4
                && (r.frame_bytes == v6.frame_bytes || r.payload_bytes == v6.payload_bytes)
        });
        if let Some(v4) = twin.filter(|r| r.payload_rate_bps > 0) {
            out.push(FamilyRatio {
                metric: Metric::ThroughputBps,
                at: Some(if v4.frame_bytes == v6.frame_bytes {
                    format!("frame {} B", v6.frame_bytes)
                } else {
                    format!("payload {} B", v6.payload_bytes)
                }),
                ipv6: v6.payload_rate_bps as f64,
                ipv4: v4.payload_rate_bps as f64,
                ratio: v6.payload_rate_bps as f64 / v4.payload_rate_bps as f64,
            });
        }
    }
    out
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
