//! The emulator's randomness: a small fast generator and the jitter
//! distributions drawn from it.

use serde::{Deserialize, Serialize};

/// splitmix64: fast, and successive draws are independent enough for
/// per-frame decisions and Box-Muller pairs.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed | 1)
    }
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.unit() < p
    }
    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let (u1, u2) = (self.unit(), self.unit());
        (-2.0 * (1.0 - u1).ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

/// The shape of the jitter around the delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JitterDist {
    /// Uniform in ± jitter.
    #[default]
    Uniform,
    /// Normal with standard deviation jitter.
    Normal,
    /// Standard deviation jitter, three quarters of its variance from a
    /// normal and one quarter from a centred Pareto of shape 3: mostly
    /// normal, with a long tail of late frames (netem's idea of
    /// "paretonormal", sonde's own construction).
    ParetoNormal,
}

/// Pareto of shape 3 and scale 1: mean 3/2, variance 3/4.
const PARETO_SHAPE: f64 = 3.0;
const PARETO_MEAN: f64 = 1.5;
const PARETO_VAR: f64 = 0.75;

/// One jitter offset in ns, of size `jitter_ns` (half-width or σ).
pub fn jitter_ns(dist: JitterDist, jitter_ns: f64, rng: &mut Rng) -> f64 {
    if jitter_ns <= 0.0 {
        return 0.0;
    }
    match dist {
        JitterDist::Uniform => (rng.unit() * 2.0 - 1.0) * jitter_ns,
        JitterDist::Normal => rng.normal() * jitter_ns,
        JitterDist::ParetoNormal => {
            let pareto = (1.0 - rng.unit()).powf(-1.0 / PARETO_SHAPE);
            let centred = (pareto - PARETO_MEAN) / PARETO_VAR.sqrt();
            (0.75f64.sqrt() * rng.normal() + 0.5 * centred) * jitter_ns
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(dist: JitterDist) -> Vec<f64> {
        let mut rng = Rng::new(42);
        (0..400_000)
            .map(|_| jitter_ns(dist, 2e6, &mut rng) / 1e6)
            .collect()
    }

    fn mean_var(s: &[f64]) -> (f64, f64) {
        let n = s.len() as f64;
        let mean = s.iter().sum::<f64>() / n;
        (mean, s.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n)
    }

    #[test]
    fn uniform_jitter_stays_within_its_width() {
        let s = samples(JitterDist::Uniform);
        assert!(s.iter().all(|v| v.abs() <= 2.0));
        let (mean, var) = mean_var(&s);
        assert!(mean.abs() < 0.02, "{mean}");
        assert!(
            (var - 4.0 / 3.0).abs() < 0.02,
            "variance of U(-2, 2) is 4/3: {var}"
        );
    }

    #[test]
    fn normal_jitter_has_its_standard_deviation() {
        let (mean, var) = mean_var(&samples(JitterDist::Normal));
        assert!(mean.abs() < 0.02, "{mean}");
        assert!((var.sqrt() - 2.0).abs() < 0.03, "σ {}", var.sqrt());
    }

    #[test]
    fn pareto_normal_is_centred_with_a_long_late_tail() {
        let mut s = samples(JitterDist::ParetoNormal);
        let (mean, var) = mean_var(&s);
        assert!(mean.abs() < 0.03, "{mean}");
        // The Pareto part has no fourth moment, so the sample variance
        // converges slowly: 5 % here.
        assert!((var.sqrt() - 2.0).abs() < 0.1, "σ {}", var.sqrt());
        s.sort_by(f64::total_cmp);
        let q = |p: f64| s[(p * s.len() as f64) as usize];
        // Skewed late: the median is early, the far tail is long on the
        // late side and short on the early one.
        assert!(q(0.5) < -0.05, "median {}", q(0.5));
        assert!(
            q(0.9999) > -q(0.0001) * 1.5,
            "{} vs {}",
            q(0.9999),
            q(0.0001)
        );
    }

    #[test]
    fn chances_happen_as_often_as_asked() {
        let mut rng = Rng::new(7);
        let hits = (0..1_000_000).filter(|_| rng.chance(0.01)).count();
        assert!((9_700..=10_300).contains(&hits), "{hits}");
        assert!(!(0..1000).any(|_| rng.chance(0.0)));
    }
}
