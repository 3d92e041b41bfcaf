//! The search for the no-drop rate at one size: a bracket [`lo`, `hi`]
//! of frame rates (highest that passed, lowest that failed) narrowed
//! until it is within the resolution of `hi`.
//!
//! `Informed` (sonde's default) reads each failed trial: what the path
//! delivered while it was overloaded is an estimate of what it carries
//! (TRex's loss-informed guess), so the next trial goes just under that
//! estimate, and after a pass just over the rate that passed, the step
//! doubling each time the same verdict repeats. On a path that carries a
//! steady rate this brackets it in three trials. `Bisect` halves the
//! bracket every trial (RFC 2544's classic and TRex's default), the
//! yardstick the bench compares against.

use sonde_model::method::SearchMode;

/// What one trial showed and how it was judged: sonde-model's, as the
/// live output reads them ([`sonde_model::MethodEvent::NdrTrial`]).
pub use sonde_model::method::{TrialOutcome, TrialVerdict as Verdict};

/// Delay growth (ms) that, with the path falling behind, marks a
/// filling queue rather than jitter.
const QUEUE_RISE_MS: f64 = 1.0;

/// Judges a search trial: loss over `loss_bound_pct` fails it, and so
/// does a queue that was filling (delivered below offered by more than
/// a quarter of the resolution while the delay rose by more than 1 ms).
pub fn judge(o: &TrialOutcome, loss_bound_pct: f64, resolution: f64) -> Verdict {
    let over_loss = if loss_bound_pct == 0.0 {
        o.loss_pct > 0.0
    } else {
        o.loss_pct > loss_bound_pct
    };
    if over_loss {
        return Verdict::Loss;
    }
    let behind = o.delivered_pps < o.offered_pps * (1.0 - resolution / 4.0);
    if behind && o.delay_rise_ms.is_some_and(|r| r > QUEUE_RISE_MS) {
        return Verdict::QueueFilling;
    }
    Verdict::Pass
}

/// The bracket and what the failures told.
#[derive(Debug, Clone)]
pub struct Search {
    mode: SearchMode,
    /// Fraction (0.005 for 0.5 %).
    resolution: f64,
    /// Highest rate that passed (0: none yet).
    pub lo: f64,
    /// Lowest rate that failed (`None`: none yet).
    pub hi: Option<f64>,
    /// What the path delivered at the latest failure.
    estimate: Option<f64>,
    /// What it delivered at the latest trial that lost (over the bound):
    /// a path's rate measured while its queue overflowed.
    losing_delivered: Option<f64>,
    /// Consecutive passes or failures (positive: passes).
    streak: i32,
    /// Below this rate a search stops: too few packets to tell.
    floor_pps: f64,
}

impl Search {
    pub fn new(mode: SearchMode, resolution_pct: f64, floor_pps: f64) -> Self {
        Self {
            mode,
            resolution: resolution_pct / 100.0,
            lo: 0.0,
            hi: None,
            estimate: None,
            losing_delivered: None,
            streak: 0,
            floor_pps,
        }
    }

    /// The verdict the search goes by for a trial at `rate_pps`: a queue
    /// seen filling more than half a resolution under what the path
    /// delivered while it was losing is taken for a burst of the sender's
    /// (a stall, then catching up, queues for a while at any load near
    /// the rate), not for an overload, and passes.
    pub fn reconsider(&self, rate_pps: f64, verdict: Verdict) -> Verdict {
        match (verdict, self.losing_delivered) {
            (Verdict::QueueFilling, Some(c)) if rate_pps < c * (1.0 - self.resolution / 2.0) => {
                Verdict::Pass
            }
            _ => verdict,
        }
    }

    /// Takes in a trial at `rate_pps` and its verdict.
    pub fn record(&mut self, rate_pps: f64, outcome: &TrialOutcome, verdict: Verdict) {
        if verdict == Verdict::Loss {
            self.losing_delivered = Some(outcome.delivered_pps.min(rate_pps));
        }
        if verdict.passed() {
            self.lo = self.lo.max(rate_pps);
            self.streak = self.streak.max(0) + 1;
        } else {
            self.hi = Some(self.hi.map_or(rate_pps, |h| h.min(rate_pps)));
            self.estimate = Some(outcome.delivered_pps.min(rate_pps));
            self.streak = self.streak.min(0) - 1;
        }
    }

    /// A confirmation at the rate found failed: it no longer counts as
    /// passed; the search goes on below it.
    pub fn unconfirm(&mut self, outcome: &TrialOutcome) {
        let failed = self.lo;
        self.hi = Some(self.hi.map_or(failed, |h| h.min(failed)));
        self.estimate = Some(outcome.delivered_pps.min(failed));
        self.lo = 0.0;
        self.streak = -1;
    }

    /// Whether the bracket is narrow enough (or the rate below the floor).
    pub fn done(&self) -> bool {
        match self.hi {
            None => true,
            Some(hi) => hi - self.lo <= self.resolution * hi || hi < self.floor_pps,
        }
    }

    /// The next trial's rate, or `None` when done.
    pub fn next(&self) -> Option<f64> {
        if self.done() {
            return None;
        }
        let hi = self.hi?;
        let lo = self.lo;
        let mid = (lo + hi) / 2.0;
        if self.mode == SearchMode::Bisect {
            return Some(mid);
        }
        let r = self.resolution;
        // The step grows with a streak: 1, 2, 4 … resolutions.
        let step = r * f64::from(1u32 << (self.streak.unsigned_abs().clamp(1, 8) - 1));
        let guess = if self.streak < 0 {
            // After a failure: just under what the path delivered, and at
            // least a step under the failure (steps grow as failures
            // repeat, so a path that loses at every rate is left fast).
            let stepped = hi * (1.0 - step);
            match self.estimate {
                Some(e) if e > lo => stepped.min(e * (1.0 - r / 2.0)),
                _ => stepped,
            }
        } else {
            // After a pass: just over the pass (further as passes repeat),
            // or just over the estimate if it lies above.
            let stepped = lo * (1.0 + step);
            match self.estimate {
                Some(e) if e < hi => stepped.max(e * (1.0 + r / 2.0)),
                _ => stepped,
            }
        };
        // Inside the bracket by a quarter resolution; else halve it.
        Some(
            if guess > lo * (1.0 + r / 4.0) && guess < hi * (1.0 - r / 4.0) {
                guess
            } else {
                mid
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A path that carries `cap` pps: above it, loss and delivery at cap.
    fn path(cap: f64) -> impl Fn(f64) -> TrialOutcome {
        move |rate| TrialOutcome {
            offered_pps: rate,
            delivered_pps: rate.min(cap),
            loss_pct: if rate > cap {
                100.0 * (1.0 - cap / rate)
            } else {
                0.0
            },
            delay_rise_ms: Some(0.1),
        }
    }

    fn trials(mode: SearchMode, cap: f64, start: f64) -> (usize, f64) {
        let p = path(cap);
        let mut s = Search::new(mode, 0.5, 1.0);
        let o = p(start);
        s.record(start, &o, judge(&o, 0.0, 0.005));
        let mut n = 1;
        while let Some(rate) = s.next() {
            let o = p(rate);
            s.record(rate, &o, judge(&o, 0.0, 0.005));
            n += 1;
            assert!(n < 40, "runaway");
        }
        (n, s.lo)
    }

    #[test]
    fn informed_brackets_a_steady_rate_in_three_trials() {
        let (n, lo) = trials(SearchMode::Informed, 81_274.0, 200_000.0);
        assert_eq!(n, 3);
        assert!(lo <= 81_274.0 && lo > 81_274.0 * 0.995, "{lo}");
    }

    #[test]
    fn bisection_takes_eight_or_more() {
        let (n, lo) = trials(SearchMode::Bisect, 81_274.0, 200_000.0);
        assert!(n >= 8, "{n}");
        assert!(lo <= 81_274.0 && lo > 81_274.0 * 0.995, "{lo}");
    }

    #[test]
    fn a_filling_queue_fails_a_trial_without_loss() {
        let o = TrialOutcome {
            offered_pps: 1000.0,
            delivered_pps: 980.0,
            loss_pct: 0.0,
            delay_rise_ms: Some(40.0),
        };
        assert_eq!(judge(&o, 0.0, 0.005), Verdict::QueueFilling);
        let jitter_only = TrialOutcome {
            delay_rise_ms: Some(0.3),
            ..o
        };
        assert_eq!(judge(&jitter_only, 0.0, 0.005), Verdict::Pass);
        let lossy = TrialOutcome {
            loss_pct: 0.05,
            delivered_pps: 999.5,
            ..o
        };
        assert_eq!(judge(&lossy, 0.0, 0.005), Verdict::Loss);
        assert_eq!(judge(&lossy, 0.1, 0.005), Verdict::Pass);
    }

    #[test]
    fn a_burst_under_the_rate_passes() {
        let mut s = Search::new(SearchMode::Informed, 0.5, 1.0);
        let lossy = TrialOutcome {
            offered_pps: 20_000.0,
            delivered_pps: 10_000.0,
            loss_pct: 50.0,
            delay_rise_ms: Some(50.0),
        };
        s.record(20_000.0, &lossy, Verdict::Loss);
        // 2 % under what the losing trial delivered: a burst, not a queue.
        assert_eq!(s.reconsider(9_800.0, Verdict::QueueFilling), Verdict::Pass);
        // Within half a resolution of it: believed.
        assert_eq!(
            s.reconsider(9_990.0, Verdict::QueueFilling),
            Verdict::QueueFilling
        );
        assert_eq!(s.reconsider(9_800.0, Verdict::Loss), Verdict::Loss);
    }

    #[test]
    fn a_path_that_loses_at_every_rate_ends_at_the_floor() {
        let p = |rate: f64| TrialOutcome {
            offered_pps: rate,
            delivered_pps: rate * 0.99,
            loss_pct: 1.0,
            delay_rise_ms: None,
        };
        let mut s = Search::new(SearchMode::Informed, 0.5, 50.0);
        let mut rate = 100_000.0;
        let mut n = 0;
        loop {
            let o = p(rate);
            s.record(rate, &o, judge(&o, 0.0, 0.005));
            n += 1;
            match s.next() {
                Some(r) => rate = r,
                None => break,
            }
            assert!(n < 60, "runaway");
        }
        assert_eq!(s.lo, 0.0);
        assert!(s.hi.unwrap() < 50.0);
    }
}
