//! Comparing two sets of measurements of one metric: both means, the
//! difference and the ratio, the 95 % confidence interval of the
//! difference, and Welch's t-test (unequal variances), so that "IPsec
//! costs 50 %" comes with its error bar (seed 000 Table 3, seed 001).
//!
//! The t distribution comes from `statrs`; the statistics here are the
//! textbook ones: the Welch–Satterthwaite degrees of freedom, a two-sided
//! p-value.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// One side's sample, summarised.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Side {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n − 1).
    pub stddev: f64,
}

impl Side {
    /// The summary of `values` (finite ones); `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Side> {
        let s = sonde_model::method::Stats::of(values)?;
        Some(Side {
            n: s.n as usize,
            mean: s.mean,
            stddev: s.stddev,
        })
    }

    fn var_of_mean(&self) -> f64 {
        self.stddev.powi(2) / self.n as f64
    }
}

/// A and B compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub a: Side,
    pub b: Side,
    /// mean(B) − mean(A).
    pub difference: f64,
    /// mean(B) / mean(A); absent when A's mean is 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
    /// The 95 % confidence interval of the difference (Welch); absent
    /// when either side has fewer than two values.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci95: Option<(f64, f64)>,
    /// Welch's t and its degrees of freedom.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub t: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub df: Option<f64>,
    /// The two-sided p-value of "the means are equal".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p: Option<f64>,
}

impl Comparison {
    /// Whether the difference is significant at 5 %.
    pub fn significant(&self) -> Option<bool> {
        self.p.map(|p| p < 0.05)
    }
}

/// Compares the samples `a` and `b`; `None` when either is empty.
pub fn compare(a: &[f64], b: &[f64]) -> Option<Comparison> {
    let (sa, sb) = (Side::of(a)?, Side::of(b)?);
    let difference = sb.mean - sa.mean;
    let ratio = (sa.mean != 0.0).then(|| sb.mean / sa.mean);
    let mut c = Comparison {
        a: sa,
        b: sb,
        difference,
        ratio,
        ci95: None,
        t: None,
        df: None,
        p: None,
    };
    if sa.n < 2 || sb.n < 2 {
        return Some(c);
    }
    let (va, vb) = (sa.var_of_mean(), sb.var_of_mean());
    let se = (va + vb).sqrt();
    if se == 0.0 {
        // No spread on either side: the difference is exact.
        c.ci95 = Some((difference, difference));
        c.p = Some(if difference == 0.0 { 1.0 } else { 0.0 });
        return Some(c);
    }
    let df = (va + vb).powi(2) / (va.powi(2) / (sa.n - 1) as f64 + vb.powi(2) / (sb.n - 1) as f64);
    let t = difference / se;
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    let q = dist.inverse_cdf(0.975);
    c.ci95 = Some((difference - q * se, difference + q * se));
    c.t = Some(t);
    c.df = Some(df);
    c.p = Some((2.0 * (1.0 - dist.cdf(t.abs()))).clamp(0.0, 1.0));
    Some(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn welchs_test_on_a_worked_example() {
        // A: mean 20, sd √10 (n 5); B: mean 25, sd √2.5 (n 5).
        let a = [16.0, 18.0, 20.0, 22.0, 24.0];
        let b = [23.0, 24.0, 25.0, 26.0, 27.0];
        let c = compare(&a, &b).unwrap();
        assert_eq!(c.difference, 5.0);
        assert_eq!(c.ratio, Some(1.25));
        // se = √(10/5 + 2.5/5) = √2.5; t = 5/√2.5 = 3.1623.
        assert!((c.t.unwrap() - 3.162_277_7).abs() < 1e-6);
        // df = 2.5² / (2²/4 + 0.5²/4) = 6.25 / 1.0625 = 5.882.
        assert!((c.df.unwrap() - 5.882_352_9).abs() < 1e-6);
        // p two-sided for t 3.162 at 5.88 df: about 0.0202.
        let p = c.p.unwrap();
        assert!((0.019..0.022).contains(&p), "{p}");
        assert_eq!(c.significant(), Some(true));
        // t(0.975, 5.88) ≈ 2.45: the interval is 5 ± 3.87.
        let (lo, hi) = c.ci95.unwrap();
        assert!(
            (lo - 1.13).abs() < 0.02 && (hi - 8.87).abs() < 0.02,
            "{lo} {hi}"
        );
    }

    #[test]
    fn the_same_samples_differ_by_nothing_and_one_value_has_no_test() {
        let a = [1.0, 2.0, 3.0];
        let c = compare(&a, &a).unwrap();
        assert_eq!(c.difference, 0.0);
        assert!((c.p.unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(c.significant(), Some(false));
        let one = compare(&[5.0], &a).unwrap();
        assert_eq!((one.t, one.p, one.ci95), (None, None, None));
        assert!(compare(&[], &a).is_none());
    }
}
