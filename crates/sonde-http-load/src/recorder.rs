//! What one sender thread measured: histograms of latency and of each
//! phase (µs), answers by status, errors by kind, and per-second tallies
//! for the intervals. Threads merge theirs at the end; the figures come
//! from the merged histograms (3 significant digits).

use hdrhistogram::Histogram;
use sonde_model::{HttpPhases, LatencyPercentiles, PhaseStats};
use std::collections::BTreeMap;

/// Longest latency a histogram holds (µs): ten minutes.
const MAX_US: u64 = 600_000_000;

/// A phase of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Dns = 0,
    Connect = 1,
    Tls = 2,
    Processing = 3,
    Waiting = 4,
    Transfer = 5,
}

/// The phases kept in histograms of their own. A request's total is its
/// latency in a closed loop and its uncorrected latency in an open one:
/// it is read from those, not recorded a third time.
const PHASES: usize = 6;

fn hist(sigfig: u8) -> Histogram<u64> {
    // Bounds and digits are constants within hdrhistogram's range.
    Histogram::new_with_bounds(1, MAX_US, sigfig).expect("constant histogram bounds")
}

/// One second of the test.
#[derive(Debug, Clone)]
pub struct Second {
    pub requests: u64,
    /// Unanswered requests and answers of 400 and over.
    pub errors: u64,
    /// Requests without an answer.
    pub unanswered: u64,
    pub bytes: u64,
    pub latency: Histogram<u64>,
}

impl Second {
    fn new() -> Self {
        Self {
            requests: 0,
            errors: 0,
            unanswered: 0,
            bytes: 0,
            latency: hist(2),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Recorder {
    /// Latency as reported: corrected in an open loop.
    pub latency: Histogram<u64>,
    /// Open loop: from the actual send.
    pub uncorrected: Histogram<u64>,
    pub phases: Vec<Histogram<u64>>,
    pub status: BTreeMap<u16, u64>,
    pub errors: BTreeMap<&'static str, u64>,
    pub requests: u64,
    pub received_bytes: u64,
    pub seconds: Vec<Second>,
}

impl Default for Recorder {
    fn default() -> Self {
        Self {
            latency: hist(3),
            uncorrected: hist(3),
            phases: (0..PHASES).map(|_| hist(3)).collect(),
            status: BTreeMap::new(),
            errors: BTreeMap::new(),
            requests: 0,
            received_bytes: 0,
            seconds: Vec::new(),
        }
    }
}

fn us(d: std::time::Duration) -> u64 {
    (d.as_micros() as u64).clamp(1, MAX_US)
}

impl Recorder {
    fn second(&mut self, at_s: usize) -> &mut Second {
        if self.seconds.len() <= at_s {
            self.seconds.resize_with(at_s + 1, Second::new);
        }
        &mut self.seconds[at_s]
    }

    pub fn phase(&mut self, p: Phase, d: std::time::Duration) {
        let _ = self.phases[p as usize].record(us(d));
    }

    /// An answer with `status`, `bytes` long, `latency` as reported and
    /// `uncorrected` (open loop), ending `at_s` seconds into the test.
    pub fn answer(
        &mut self,
        status: u16,
        bytes: u64,
        latency: std::time::Duration,
        uncorrected: Option<std::time::Duration>,
        at_s: usize,
    ) {
        self.requests += 1;
        self.received_bytes += bytes;
        *self.status.entry(status).or_default() += 1;
        let _ = self.latency.record(us(latency));
        if let Some(u) = uncorrected {
            let _ = self.uncorrected.record(us(u));
        }
        let s = self.second(at_s);
        s.requests += 1;
        s.bytes += bytes;
        if status >= 400 {
            s.errors += 1;
        }
        let _ = s.latency.record(us(latency));
    }

    /// A request without an answer, by why.
    pub fn error(&mut self, kind: &'static str, at_s: usize) {
        *self.errors.entry(kind).or_default() += 1;
        let s = self.second(at_s);
        s.errors += 1;
        s.unanswered += 1;
    }

    /// Adds `other`'s tallies and its seconds, second by second.
    pub fn merge(&mut self, other: &Recorder) {
        self.merge_totals(other);
        for (i, s) in other.seconds.iter().enumerate() {
            let mine = self.second(i);
            mine.requests += s.requests;
            mine.errors += s.errors;
            mine.unanswered += s.unanswered;
            mine.bytes += s.bytes;
            let _ = mine.latency.add(&s.latency);
        }
    }

    /// Adds `other`'s tallies, not its seconds (a later step's, whose
    /// seconds are intervals of their own).
    pub fn merge_totals(&mut self, other: &Recorder) {
        let _ = self.latency.add(&other.latency);
        let _ = self.uncorrected.add(&other.uncorrected);
        for (a, b) in self.phases.iter_mut().zip(&other.phases) {
            let _ = a.add(b);
        }
        for (k, v) in &other.status {
            *self.status.entry(*k).or_default() += v;
        }
        for (k, v) in &other.errors {
            *self.errors.entry(k).or_default() += v;
        }
        self.requests += other.requests;
        self.received_bytes += other.received_bytes;
    }

    /// Requests without an answer, and answers of 400 or more.
    pub fn error_count(&self) -> u64 {
        self.errors.values().sum::<u64>()
            + self
                .status
                .iter()
                .filter(|(s, _)| **s >= 400)
                .map(|(_, n)| n)
                .sum::<u64>()
    }

    pub fn phases_ms(&self) -> HttpPhases {
        let p = |i: Phase| phase_stats(&self.phases[i as usize]);
        HttpPhases {
            dns: p(Phase::Dns),
            connect: p(Phase::Connect),
            tls: p(Phase::Tls),
            processing: p(Phase::Processing),
            waiting: p(Phase::Waiting),
            transfer: p(Phase::Transfer),
            total: phase_stats(if self.uncorrected.is_empty() {
                &self.latency
            } else {
                &self.uncorrected
            }),
        }
    }
}

fn ms(us: f64) -> f64 {
    us / 1000.0
}

/// ab's columns of a phase, in ms; `None` if no request had it.
pub fn phase_stats(h: &Histogram<u64>) -> Option<PhaseStats> {
    (!h.is_empty()).then(|| PhaseStats {
        count: h.len(),
        min: ms(h.min() as f64),
        mean: ms(h.mean()),
        sd: ms(h.stdev()),
        median: ms(h.value_at_quantile(0.5) as f64),
        max: ms(h.max() as f64),
    })
}

/// The percentiles of `h`, in ms; `None` if empty.
pub fn percentiles(h: &Histogram<u64>) -> Option<LatencyPercentiles> {
    let q = |q: f64| ms(h.value_at_quantile(q) as f64);
    (!h.is_empty()).then(|| LatencyPercentiles {
        mean: ms(h.mean()),
        p50: q(0.5),
        p75: q(0.75),
        p90: q(0.9),
        p99: q(0.99),
        p99_9: q(0.999),
        p99_99: q(0.9999),
        max: ms(h.max() as f64),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn merged_threads_give_the_whole_counts_and_percentiles() {
        let mut a = Recorder::default();
        let mut b = Recorder::default();
        for i in 1..=100u64 {
            let r = if i % 2 == 0 { &mut a } else { &mut b };
            r.answer(200, 10, Duration::from_millis(i), None, (i / 50) as usize);
        }
        b.answer(503, 0, Duration::from_millis(1), None, 0);
        b.error("timeout", 3);
        a.merge(&b);
        assert_eq!(a.requests, 101);
        assert_eq!(a.received_bytes, 1000);
        assert_eq!(a.error_count(), 2);
        assert_eq!(a.status[&200], 100);
        assert_eq!(a.seconds.len(), 4);
        assert_eq!(a.seconds[3].errors, 1);
        let p = percentiles(&a.latency).unwrap();
        assert!((p.p50 - 50.0).abs() <= 0.1, "{p:?}");
        assert!((p.max - 100.0).abs() <= 0.1, "{p:?}");
        assert!(percentiles(&Recorder::default().latency).is_none());
    }

    #[test]
    fn a_phase_gives_abs_columns() {
        let mut r = Recorder::default();
        for v in [1u64, 2, 3, 4, 10] {
            r.phase(Phase::Connect, Duration::from_millis(v));
        }
        let s = r.phases_ms().connect.unwrap();
        assert_eq!(s.count, 5);
        assert!((s.min - 1.0).abs() < 0.01 && (s.max - 10.0).abs() < 0.02);
        assert!((s.mean - 4.0).abs() < 0.01);
        assert!((s.median - 3.0).abs() < 0.01);
        assert!(r.phases_ms().tls.is_none());
    }
}
