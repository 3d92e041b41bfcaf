//! Per-packet UDP estimators: interarrival jitter, reordering, duplicates and
//! loss, one-way delay with PDV, and IPDV.
//!
//! Pure computation, no I/O and no clock: times are `i64` nanoseconds passed
//! in (send time from the packet header, the sender's realtime clock; receive
//! time from the receiver's kernel timestamp). No input panics: arithmetic is
//! widened to `i128` or saturates.

use hdrhistogram::Histogram;

/// Largest magnitude the histograms hold: one hour. [`DelayStats`] clamps the
/// deviation from its first sample to ±this, [`IpdvStats`] clamps |IPDV|.
pub const MAX_HIST_NS: u64 = 3_600_000_000_000;

/// How many sequence numbers below `NextExp` [`SequenceTracker`] remembers.
pub const DUP_WINDOW: u64 = 65_536;

const WORDS: usize = (DUP_WINDOW / 64) as usize;

/// Auto-resizing hdrhistogram with 3 significant digits (0.1 %): its memory
/// follows the largest value recorded.
#[derive(Debug, Clone)]
struct Hist(Histogram<u64>);

impl Default for Hist {
    fn default() -> Self {
        Self(Histogram::new(3).expect("3 significant digits is a valid precision"))
    }
}

/// Records `n` samples of `value` into `below` (as |value|) if negative, else
/// into `above`, clamped to [`MAX_HIST_NS`].
fn record_signed(below: &mut Hist, above: &mut Hist, value: i128, n: u64) {
    let magnitude = u64::try_from(value.unsigned_abs()).map_or(MAX_HIST_NS, |m| m.min(MAX_HIST_NS));
    let hist = if value < 0 { below } else { above };
    // Cannot fail: auto-resizing, and magnitude ≤ MAX_HIST_NS < i64::MAX / 2.
    let _ = hist.0.record_n(magnitude, n);
}

/// Nearest-rank (1-based) of percentile `q` (clamped to 0..=100) among `n`
/// samples: `ceil(q * n / 100)`, at least 1. `None` if empty or `q` is NaN.
fn nearest_rank(q: f64, n: u64) -> Option<u64> {
    if n == 0 || q.is_nan() {
        return None;
    }
    let rank = (q.clamp(0.0, 100.0) * n as f64 / 100.0).ceil() as u64;
    Some(rank.clamp(1, n))
}

/// The `rank`-th smallest recorded value (1-based), as the top of its bucket.
fn value_at_rank(h: &Hist, rank: u64) -> Option<u64> {
    let mut seen = 0u64;
    h.0.iter_recorded().find_map(|v| {
        seen = seen.saturating_add(v.count_at_value());
        (seen >= rank).then(|| v.value_iterated_to())
    })
}

/// Interarrival jitter, RFC 3550 §6.4.1, computed as in RFC 3550 Appendix A.8.
///
/// For packets i-1, i taken in ARRIVAL order, with S the send and R the
/// receive time, `D(i-1,i) = (Ri - Ri-1) - (Si - Si-1)` (the change in transit
/// time `R - S`) and `J += (|D(i-1,i)| - J) / 16`. A constant clock offset
/// cancels in D, so the clocks need not be synchronised.
#[derive(Debug, Clone, Default)]
pub struct JitterEstimator {
    last_transit_ns: Option<i64>,
    jitter_ns: f64,
}

impl JitterEstimator {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn update(&mut self, send_ns: i64, recv_ns: i64) {
        // Saturating i64 (±292 years) keeps the hot path free of 128-bit
        // arithmetic; real transit times are far inside it.
        let transit_ns = recv_ns.saturating_sub(send_ns);
        if let Some(last) = self.last_transit_ns {
            let d_ns = transit_ns.saturating_sub(last).unsigned_abs() as f64;
            self.jitter_ns += (d_ns - self.jitter_ns) / 16.0;
        }
        self.last_transit_ns = Some(transit_ns);
    }

    /// J in nanoseconds; 0.0 until two packets have been fed.
    pub fn jitter_ns(&self) -> f64 {
        self.jitter_ns
    }
}

/// What one arriving sequence number was, per RFC 4737 §3.3.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// `s >= NextExp` (any gap before it is a sequence discontinuity, not reordering).
    InOrder,
    /// `s < NextExp`, first copy: Type-P-Reordered = TRUE.
    Reordered,
    /// A copy of a number already received, or one too old to tell (see [`SequenceTracker`]).
    Duplicate,
}

/// Reordering, duplicates and loss of one stream's sequence numbers.
///
/// * RFC 4737 §3.3 (Type-P-Reordered): `NextExp` is 0 before any packet; an
///   arriving `s` is reordered iff `s < NextExp`, else `NextExp = s + 1`. A lost
///   packet is thus no reordering, and an early packet makes all it passed reordered.
/// * RFC 4737 §3.3: duplicates MUST be noted and only the first copy analysed, so
///   a duplicate counts neither as reordered nor as received (RFC 7680 §2.5: a
///   duplicated packet is received once). `reordered / received` is §4.1's ratio.
/// * Duplicate window: a bitmap of the [`DUP_WINDOW`] numbers
///   `NextExp - 65,536 .. NextExp` tells first copies from copies. An older number
///   cannot be told apart and is classed [`Arrival::Duplicate`] (and counted by
///   [`Self::stale`]), so `received` never counts a number twice and loss is never
///   understated; a packet reordered by more than 65,536 numbers therefore counts
///   as lost, like one arriving after RFC 7680's waiting time.
/// * Loss periods (RFC 3357 §2.3): a number is settled, received or lost, as
///   it leaves the window (no later copy can count then); the longest run of
///   lost numbers settled so far is kept, and [`Self::longest_loss_run`]
///   settles the rest up to the sender's end without changing the tracker.
/// * `u64` numbers do not wrap: `NextExp` saturates at `u64::MAX`.
#[derive(Debug, Clone, Default)]
pub struct SequenceTracker {
    highest: Option<u64>,
    /// Numbers below this are settled: `highest + 1 - DUP_WINDOW` or less.
    settled: u64,
    /// Lost numbers in a row just below `settled`, and the longest such run.
    run: u64,
    longest_run: u64,
    received: u64,
    duplicates: u64,
    reordered: u64,
    stale: u64,
    /// Bit `s % DUP_WINDOW` is set iff `s`, inside the window, was received
    /// (`WORDS` words, allocated by the first packet).
    seen: Vec<u64>,
}

impl SequenceTracker {
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `seq`'s bit; returns whether it was already set.
    fn test_and_set(&mut self, seq: u64) -> bool {
        let slot = seq % DUP_WINDOW;
        let (word, bit) = (&mut self.seen[(slot / 64) as usize], 1u64 << (slot % 64));
        let was = *word & bit != 0;
        *word |= bit;
        was
    }

    /// Clears the bits of `from..=to`, whose slots the advancing window reuses.
    fn forget(&mut self, from: u64, to: u64) {
        let mut left = to.saturating_sub(from).saturating_add(1);
        if left >= DUP_WINDOW {
            self.seen.fill(0);
            return;
        }
        let mut slot = from % DUP_WINDOW;
        while left > 0 {
            let (word, bit) = ((slot / 64) as usize, slot % 64);
            let step = if bit == 0 && left >= 64 { 64 } else { 1 };
            self.seen[word] &= if step == 64 { 0 } else { !(1u64 << bit) };
            slot = (slot + step) % DUP_WINDOW;
            left -= step;
        }
    }

    /// The loss runs `(run, longest)` after settling `self.settled..to`
    /// on top of `run` and `longest`: a number at or below `highest` is
    /// received if its bit is set (it is inside the window), one above it
    /// was never received. At most [`DUP_WINDOW`] bits are read.
    fn settle(&self, to: u64, mut run: u64, mut longest: u64) -> (u64, u64) {
        let from = self.settled;
        if to <= from {
            return (run, longest);
        }
        let seen_to = self
            .highest
            .map_or(from, |h| h.saturating_add(1).clamp(from, to));
        for n in from..seen_to {
            let slot = n % DUP_WINDOW;
            if self.seen[(slot / 64) as usize] & (1u64 << (slot % 64)) != 0 {
                run = 0;
            } else {
                run += 1;
                longest = longest.max(run);
            }
        }
        if to > seen_to {
            run = run.saturating_add(to - seen_to);
            longest = longest.max(run);
        }
        (run, longest)
    }

    /// The longest run of consecutive numbers below `end` (the sender's
    /// count) that were never received: RFC 3357's longest loss period,
    /// the tail's included; never more than `end` (numbers past it, which
    /// only a broken or hostile sender sends, cannot make it longer).
    pub fn longest_loss_run(&self, end: u64) -> u64 {
        let (_, longest) = self.settle(end, self.run, self.longest_run);
        longest.min(end)
    }

    pub fn observe(&mut self, seq: u64) -> Arrival {
        let inc = |c: &mut u64| *c = c.saturating_add(1);
        if self.seen.is_empty() {
            self.seen = vec![0; WORDS];
        }
        // Numbers the window is about to leave behind are settled first.
        let leaving = seq.saturating_add(1).saturating_sub(DUP_WINDOW);
        if self.highest.is_none_or(|h| seq > h) && leaving > self.settled {
            (self.run, self.longest_run) = self.settle(leaving, self.run, self.longest_run);
            self.settled = leaving;
        }
        match self.highest {
            Some(high) if seq <= high && high - seq >= DUP_WINDOW => {
                inc(&mut self.stale);
                inc(&mut self.duplicates);
                Arrival::Duplicate
            }
            Some(high) if seq <= high => {
                if self.test_and_set(seq) {
                    inc(&mut self.duplicates);
                    return Arrival::Duplicate;
                }
                inc(&mut self.received);
                inc(&mut self.reordered);
                Arrival::Reordered
            }
            _ => {
                if let Some(high) = self.highest {
                    self.forget(high.saturating_add(1), seq);
                }
                self.test_and_set(seq);
                self.highest = Some(seq);
                inc(&mut self.received);
                Arrival::InOrder
            }
        }
    }

    /// Unique sequence numbers received (first copies).
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Arrivals classed [`Arrival::Duplicate`], the [`Self::stale`] ones included.
    pub fn duplicates(&self) -> u64 {
        self.duplicates
    }

    /// Arrivals classed [`Arrival::Reordered`].
    pub fn reordered(&self) -> u64 {
        self.reordered
    }

    /// Duplicates that were older than the window, so unverifiable.
    pub fn stale(&self) -> u64 {
        self.stale
    }

    /// RFC 4737 `NextExp`: 0 before any packet, else highest + 1 (saturating).
    pub fn next_expected(&self) -> u64 {
        self.highest.map_or(0, |h| h.saturating_add(1))
    }

    /// Packets lost given that the sender sent `sent` packets (seq 0..sent):
    /// `sent - received`, saturating. Tail loss (packets after the last one
    /// received) is therefore counted.
    pub fn lost(&self, sent: u64) -> u64 {
        sent.saturating_sub(self.received)
    }
}

/// One-way delay, RFC 7679 §3.4: `delay = Rx - Tx`, negative when the clocks
/// are not synchronised; and PDV, RFC 5481 §4.2: `PDV(i) = D(i) - D(min)`,
/// which needs no clock sync.
///
/// Count, min, max and mean are exact. Percentiles (nearest rank, reported as
/// the top of the sample's bucket, clamped into `[min, max]`) come from two
/// 3-significant-digit hdrhistograms of the deviation from the FIRST sample
/// (one below it, one at or above it), so resolution is 0.1 % of the
/// deviation, not of a possibly huge, skewed absolute delay. Supported range:
/// deviations within ±[`MAX_HIST_NS`] (1 h) of the first sample; beyond it the
/// histograms clamp.
#[derive(Debug, Clone, Default)]
pub struct DelayStats {
    /// The first sample; like `min_ns` and `max_ns`, meaningful once `count > 0`.
    base_ns: i64,
    count: u64,
    sum_ns: i128,
    min_ns: i64,
    max_ns: i64,
    below: Hist,
    above: Hist,
}

impl DelayStats {
    pub fn new() -> Self {
        Self::default()
    }

    fn add_exact(&mut self, count: u64, sum_ns: i128, min_ns: i64, max_ns: i64) {
        self.count = self.count.saturating_add(count);
        self.sum_ns = self.sum_ns.saturating_add(sum_ns);
        self.min_ns = self.min_ns.min(min_ns);
        self.max_ns = self.max_ns.max(max_ns);
    }

    pub fn record(&mut self, delay_ns: i64) {
        if self.count == 0 {
            (self.base_ns, self.min_ns, self.max_ns) = (delay_ns, delay_ns, delay_ns);
        }
        self.add_exact(1, delay_ns.into(), delay_ns, delay_ns);
        let dev = i128::from(delay_ns) - i128::from(self.base_ns);
        record_signed(&mut self.below, &mut self.above, dev, 1);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn min_ns(&self) -> Option<i64> {
        (self.count > 0).then_some(self.min_ns)
    }

    pub fn max_ns(&self) -> Option<i64> {
        (self.count > 0).then_some(self.max_ns)
    }

    pub fn mean_ns(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum_ns as f64 / self.count as f64)
    }

    /// Delay at percentile `q` (clamped to 0..=100; NaN gives `None`).
    pub fn percentile_ns(&self, q: f64) -> Option<i64> {
        let below_n = self.below.0.len();
        let rank = nearest_rank(q, below_n.saturating_add(self.above.0.len()))?;
        let base = i128::from(self.base_ns);
        let delay = if rank <= below_n {
            // The smallest delays are the largest magnitudes below the base.
            let m = value_at_rank(&self.below, below_n - rank + 1)?;
            base - i128::from(self.below.0.lowest_equivalent(m))
        } else {
            base + i128::from(value_at_rank(&self.above, rank - below_n)?)
        };
        let (lo, hi) = (i128::from(self.min_ns), i128::from(self.max_ns));
        i64::try_from(delay.clamp(lo, hi)).ok()
    }

    /// PDV at percentile `q`: `percentile_ns(q) - min`, saturating.
    pub fn pdv_percentile_ns(&self, q: f64) -> Option<i64> {
        Some(self.percentile_ns(q)?.saturating_sub(self.min_ns))
    }

    /// Adds `other`'s samples (to sum streams). Its buckets are moved whole onto
    /// this base: exact when both bases are equal, otherwise at most one more
    /// 0.1 % quantisation step.
    pub fn merge(&mut self, other: &DelayStats) {
        if other.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = other.clone();
            return;
        }
        self.add_exact(other.count, other.sum_ns, other.min_ns, other.max_ns);
        let shift = i128::from(other.base_ns) - i128::from(self.base_ns);
        for (hist, sign) in [(&other.below, -1i128), (&other.above, 1)] {
            for v in hist.0.iter_recorded() {
                let m = i128::from(hist.0.lowest_equivalent(v.value_iterated_to()));
                let n = v.count_at_value();
                record_signed(&mut self.below, &mut self.above, shift + sign * m, n);
            }
        }
    }
}

/// IPDV, RFC 5481 §4.1: for consecutive sequence numbers i, i+1 both received,
/// `IPDV = D(i+1) - D(i)`.
///
/// Only the last (seq, delay) is kept, so a pair is measured when its packets
/// arrive back to back, in either order (|IPDV| is symmetric); any other step
/// (gap, reordering, same number) restarts the pairing. Feed it no duplicates.
/// |IPDV| goes to a 3-significant-digit histogram, clamped to [`MAX_HIST_NS`];
/// the exact largest |IPDV| caps the percentiles.
#[derive(Debug, Clone, Default)]
pub struct IpdvStats {
    last: Option<(u64, i64)>,
    count: u64,
    max_abs_ns: u64,
    abs_ns: Hist,
}

impl IpdvStats {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn record(&mut self, seq: u64, delay_ns: i64) {
        if let Some((_, last_delay)) = self.last.filter(|l| l.0.abs_diff(seq) == 1) {
            let ipdv = i128::from(delay_ns) - i128::from(last_delay);
            let abs = u64::try_from(ipdv.unsigned_abs()).unwrap_or(u64::MAX);
            self.max_abs_ns = self.max_abs_ns.max(abs);
            self.count = self.count.saturating_add(1);
            let _ = self.abs_ns.0.record(abs.min(MAX_HIST_NS)); // cannot fail: auto-resizing
        }
        self.last = Some((seq, delay_ns));
    }

    /// IPDV samples taken.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// |IPDV| at percentile `q` (clamped to 0..=100; NaN gives `None`).
    pub fn abs_percentile_ns(&self, q: f64) -> Option<u64> {
        let rank = nearest_rank(q, self.abs_ns.0.len())?;
        Some(value_at_rank(&self.abs_ns, rank)?.min(self.max_abs_ns))
    }

    /// Adds `other`'s samples; the pairing state (last packet) stays this one's.
    pub fn merge(&mut self, other: &IpdvStats) {
        self.count = self.count.saturating_add(other.count);
        self.max_abs_ns = self.max_abs_ns.max(other.max_abs_ns);
        let _ = self.abs_ns.0.add(&other.abs_ns.0); // cannot fail: both auto-resizing
    }
}

#[cfg(test)]
mod tests;
