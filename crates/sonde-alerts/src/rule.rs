//! When an alert is up: a threshold held for some samples, with
//! hysteresis (loss > 1 % for 3 runs raises; below 0.5 % for 3 runs
//! clears), or a SmokePing pattern (raised while it matches). Either is
//! edge-triggered: [`AlertState::update`] says only when the alert is
//! raised and when it clears, once each.

use crate::pattern::Pattern;

/// Which way a metric is bad.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Worse {
    /// Loss, jitter, RTT: bad above the threshold.
    Above,
    /// Throughput, PDR: bad below it.
    Below,
}

/// A threshold with hysteresis.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    pub worse: Worse,
    /// Past this (in the bad direction) a sample is bad.
    pub raise: f64,
    /// Bad samples in a row that raise the alert.
    pub raise_after: usize,
    /// Back past this (in the good direction) a sample is good again;
    /// between the two a sample keeps the state it finds.
    pub clear: f64,
    /// Good samples in a row that clear it.
    pub clear_after: usize,
}

/// Why a rule cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RuleError(pub String);

impl Threshold {
    /// Checks the rule: counts of at least 1, and a clear level on the
    /// good side of the raise level (or equal to it: no hysteresis).
    pub fn check(&self) -> Result<(), RuleError> {
        if self.raise_after == 0 || self.clear_after == 0 {
            return Err(RuleError(
                "raise_after and clear_after are at least 1".into(),
            ));
        }
        if !self.raise.is_finite() || !self.clear.is_finite() {
            return Err(RuleError("raise and clear are numbers".into()));
        }
        let good_side = match self.worse {
            Worse::Above => self.clear <= self.raise,
            Worse::Below => self.clear >= self.raise,
        };
        if !good_side {
            return Err(RuleError(format!(
                "clear ({}) must be on the good side of raise ({})",
                self.clear, self.raise
            )));
        }
        Ok(())
    }

    fn bad(&self, v: f64) -> bool {
        match self.worse {
            Worse::Above => v > self.raise,
            Worse::Below => v < self.raise,
        }
    }

    fn good(&self, v: f64) -> bool {
        match self.worse {
            Worse::Above => v < self.clear,
            Worse::Below => v > self.clear,
        }
    }
}

/// What raises an alert.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    Threshold(Threshold),
    Pattern(Pattern),
}

/// A change the alert went through: said once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edge {
    Raised,
    Cleared,
}

/// One alert on one path: whether it is up, and the samples in a row
/// that count toward changing that.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlertState {
    pub up: bool,
    /// Bad samples in a row while down, good ones while up.
    pub run: usize,
}

impl AlertState {
    /// Takes the newest sample (`history` is every sample kept, oldest
    /// first, the newest last; `None`: unknown). Returns the edge, if
    /// the alert was raised or cleared by it.
    pub fn update(&mut self, condition: &Condition, history: &[Option<f64>]) -> Option<Edge> {
        let before = self.up;
        match condition {
            Condition::Pattern(p) => {
                self.up = p.matches(history);
                self.run = 0;
            }
            Condition::Threshold(t) => {
                // An unknown sample changes nothing and breaks no run.
                let Some(Some(v)) = history.last() else {
                    return None;
                };
                let counts = if self.up { t.good(*v) } else { t.bad(*v) };
                self.run = if counts { self.run + 1 } else { 0 };
                let needed = if self.up {
                    t.clear_after
                } else {
                    t.raise_after
                };
                if self.run >= needed {
                    self.up = !self.up;
                    self.run = 0;
                }
            }
        }
        match (before, self.up) {
            (false, true) => Some(Edge::Raised),
            (true, false) => Some(Edge::Cleared),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::Quantity;

    fn loss_rule() -> Condition {
        Condition::Threshold(Threshold {
            worse: Worse::Above,
            raise: 1.0,
            raise_after: 3,
            clear: 0.5,
            clear_after: 3,
        })
    }

    /// The edges a series of samples gives, by the index that gave each.
    fn edges(c: &Condition, samples: &[Option<f64>]) -> Vec<(usize, Edge)> {
        let mut state = AlertState::default();
        (0..samples.len())
            .filter_map(|i| state.update(c, &samples[..=i]).map(|e| (i, e)))
            .collect()
    }

    fn s(v: &[f64]) -> Vec<Option<f64>> {
        v.iter().map(|x| Some(*x)).collect()
    }

    #[test]
    fn loss_over_one_percent_for_three_runs_raises_once_and_clears_once() {
        let c = loss_rule();
        let v = s(&[0.0, 2.0, 2.0, 3.0, 5.0, 0.8, 0.7, 0.2, 0.1, 0.3, 0.0]);
        // Raised at the third bad run; 0.8 and 0.7 are between the two
        // levels and clear nothing; three runs under 0.5 clear it.
        assert_eq!(edges(&c, &v), vec![(3, Edge::Raised), (9, Edge::Cleared)]);
    }

    #[test]
    fn a_good_sample_breaks_a_run_and_unknown_ones_do_not_count() {
        let c = loss_rule();
        let v = s(&[2.0, 2.0, 0.0, 2.0, 2.0]);
        assert!(edges(&c, &v).is_empty(), "two, a break, two");
        let v = vec![Some(2.0), None, Some(2.0), None, Some(2.0)];
        assert_eq!(edges(&c, &v), vec![(4, Edge::Raised)]);
    }

    #[test]
    fn throughput_is_bad_below_its_level() {
        let c = Condition::Threshold(Threshold {
            worse: Worse::Below,
            raise: 8e6,
            raise_after: 1,
            clear: 9e6,
            clear_after: 2,
        });
        let v = s(&[9.5e6, 7e6, 8.5e6, 9.2e6, 9.3e6]);
        assert_eq!(edges(&c, &v), vec![(1, Edge::Raised), (4, Edge::Cleared)]);
    }

    #[test]
    fn a_pattern_is_up_while_it_matches_and_says_each_change_once() {
        let c = Condition::Pattern(Pattern::parse(">0%,*2*,>0%", Quantity::LossPct).unwrap());
        let v = s(&[0.0, 5.0, 0.0, 5.0, 5.0, 0.0, 0.0, 0.0, 0.0]);
        assert_eq!(edges(&c, &v), vec![(3, Edge::Raised), (5, Edge::Cleared)]);
    }

    #[test]
    fn a_rule_that_cannot_work_is_refused() {
        let mut t = Threshold {
            worse: Worse::Above,
            raise: 1.0,
            raise_after: 3,
            clear: 2.0,
            clear_after: 3,
        };
        assert!(t.check().unwrap_err().0.contains("good side"));
        t.clear = 0.5;
        t.check().unwrap();
        t.raise_after = 0;
        assert!(t.check().is_err());
    }
}
