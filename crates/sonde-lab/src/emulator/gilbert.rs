//! Gilbert-Elliott loss: a two-state Markov chain (good and bad) with its
//! own loss probability in each state, so losses come in bursts.

use super::random::Rng;
use serde::{Deserialize, Serialize};

/// The chain's parameters, as probabilities per packet.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Gilbert {
    /// Good → bad.
    pub p: f64,
    /// Bad → good.
    pub r: f64,
    /// Loss probability in the good state (often 0).
    pub loss_good: f64,
    /// Loss probability in the bad state (1 in Gilbert's original model).
    pub loss_bad: f64,
}

impl Gilbert {
    /// The long-run loss probability: π_bad·loss_bad + π_good·loss_good,
    /// with π_bad = p / (p + r).
    pub fn mean_loss(&self) -> f64 {
        if self.p + self.r <= 0.0 {
            return self.loss_good;
        }
        let bad = self.p / (self.p + self.r);
        bad * self.loss_bad + (1.0 - bad) * self.loss_good
    }
}

/// The chain running over a stream of packets.
#[derive(Debug, Clone)]
pub struct GilbertState {
    model: Gilbert,
    bad: bool,
}

impl GilbertState {
    pub fn new(model: Gilbert) -> Self {
        Self { model, bad: false }
    }

    /// Moves the chain one packet on and says whether that packet is lost.
    pub fn lose(&mut self, rng: &mut Rng) -> bool {
        let m = &self.model;
        self.bad = if self.bad {
            !rng.chance(m.r)
        } else {
            rng.chance(m.p)
        };
        rng.chance(if self.bad { m.loss_bad } else { m.loss_good })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn losses_average_to_the_stationary_rate_and_come_in_bursts() {
        // p = 1 %, r = 25 %: π_bad = 1/26, mean burst 1/r = 4 packets.
        let model = Gilbert {
            p: 0.01,
            r: 0.25,
            loss_good: 0.0,
            loss_bad: 1.0,
        };
        let mut g = GilbertState::new(model);
        let mut rng = Rng::new(3);
        let n = 2_000_000;
        let (mut lost, mut bursts, mut prev) = (0u64, 0u64, false);
        for _ in 0..n {
            let l = g.lose(&mut rng);
            lost += u64::from(l);
            bursts += u64::from(l && !prev);
            prev = l;
        }
        let rate = lost as f64 / n as f64;
        let expected = model.mean_loss();
        assert!((expected - 1.0 / 26.0).abs() < 1e-12);
        assert!(
            (rate - expected).abs() / expected < 0.03,
            "{rate} vs {expected}"
        );
        let mean_burst = lost as f64 / bursts as f64;
        assert!((mean_burst - 4.0).abs() < 0.15, "mean burst {mean_burst}");
    }

    #[test]
    fn loss_in_both_states_adds_up() {
        let model = Gilbert {
            p: 0.05,
            r: 0.2,
            loss_good: 0.01,
            loss_bad: 0.5,
        };
        let expected = 0.2 * 0.5 + 0.8 * 0.01;
        assert!((model.mean_loss() - expected).abs() < 1e-12);
        let mut g = GilbertState::new(model);
        let mut rng = Rng::new(11);
        let lost = (0..1_000_000).filter(|_| g.lose(&mut rng)).count() as f64 / 1e6;
        assert!(
            (lost - expected).abs() / expected < 0.03,
            "{lost} vs {expected}"
        );
    }
}
