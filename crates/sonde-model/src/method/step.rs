//! How each step of a method (or a single test) is run: how often, over
//! which address families, and the statistics of its repeated runs.

pub use crate::metric::Metric;
use crate::spec::{bad, SpecError};
use crate::{IpFamily, ResultId};
use serde::{Deserialize, Serialize};

/// How many times a step runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(tag = "rule", rename_all = "snake_case", deny_unknown_fields)]
pub enum RepeatRule {
    /// Once (the default).
    #[default]
    Once,
    /// Exactly `runs` times (`--repeat N`).
    Times { runs: u32 },
    /// Until the standard deviation of the step's metric is at most
    /// `stddev_pct` of its mean, after at least `min_runs` and at most
    /// `max_runs` runs (`--until-stddev 0.5% --min-runs 30 --max-runs
    /// 200`, seed 001's rule).
    UntilStable {
        stddev_pct: f64,
        min_runs: u32,
        max_runs: u32,
    },
}

/// How every step of a method is run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct StepPlan {
    pub repeat: RepeatRule,
    /// The metric `until_stable` watches and the statistics lead with
    /// (default: the test's headline, goodput for tcp/udp, the RTT
    /// median for ping).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metric: Option<Metric>,
    /// Run each step over each of these families in turn, alternating
    /// run by run so that drift hits both alike (`--families 6,4`).
    /// Empty: the test's own family.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub families: Vec<IpFamily>,
}

impl StepPlan {
    /// The plan's own rules, checked once for every method: a count of
    /// at least 1; `until_stable` with a positive bound, at least 2 runs
    /// (a spread needs two) and `min_runs` ≤ `max_runs`; families 6 and
    /// 4, each once. The error names the field (`repeat.min_runs`, …).
    pub fn validate(&self) -> Result<(), SpecError> {
        match self.repeat {
            RepeatRule::Once => {}
            RepeatRule::Times { runs } => {
                if runs == 0 {
                    return Err(bad("repeat.runs", "must be at least 1"));
                }
            }
            RepeatRule::UntilStable {
                stddev_pct,
                min_runs,
                max_runs,
            } => {
                if !(stddev_pct.is_finite() && stddev_pct > 0.0 && stddev_pct <= 100.0) {
                    return Err(bad(
                        "repeat.stddev_pct",
                        format!(
                            "{stddev_pct} %: give a share of the mean above 0 and at most 100 %"
                        ),
                    ));
                }
                if min_runs < 2 {
                    return Err(bad(
                        "repeat.min_runs",
                        format!("{min_runs}: a standard deviation needs at least 2 runs"),
                    ));
                }
                if min_runs > max_runs {
                    return Err(bad(
                        "repeat.min_runs",
                        format!("at least {min_runs} runs is more than the most, {max_runs}"),
                    ));
                }
            }
        }
        for (i, f) in self.families.iter().enumerate() {
            if *f == IpFamily::Any {
                return Err(bad("families", "name each family: 6 or 4"));
            }
            if self.families[..i].contains(f) {
                return Err(bad("families", format!("{f:?} is given twice")));
            }
        }
        Ok(())
    }
}

impl StepPlan {
    /// [`StepPlan::validate`] for a method's `step` key: the error names
    /// the field from the spec's root (`step.repeat.min_runs`).
    pub fn validate_as_step(&self) -> Result<(), SpecError> {
        self.validate().map_err(|e| SpecError {
            field: match e.field {
                "repeat.runs" => "step.repeat.runs",
                "repeat.stddev_pct" => "step.repeat.stddev_pct",
                "repeat.min_runs" => "step.repeat.min_runs",
                "repeat.max_runs" => "step.repeat.max_runs",
                "families" => "step.families",
                "metric" => "step.metric",
                other => other,
            },
            reason: e.reason,
        })
    }
}

/// Mean, spread and the 95 % confidence interval of the mean of a
/// figure over repeated runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Stats {
    /// Runs that measured the figure.
    #[schemars(range(min = 1))]
    pub n: u32,
    pub mean: f64,
    /// Sample standard deviation (n − 1); 0 for one run.
    #[schemars(range(min = 0))]
    pub stddev: f64,
    /// Standard deviation as a percentage of the mean.
    #[schemars(range(min = 0))]
    pub stddev_pct: f64,
    /// Half-width of the 95 % confidence interval of the mean (Student's
    /// t with n − 1 degrees of freedom); absent for one run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub ci95: Option<f64>,
    pub min: f64,
    pub max: f64,
}

/// Two-sided 95 % quantile of Student's t with `df` degrees of freedom
/// (table to 30, then the normal limit approached as 1.96 + 2.4/df).
/// Written out, so the model needs no statistics crate; Welch's test,
/// whose degrees of freedom are fractional, uses statrs (sonde-methods).
pub fn t95(df: u32) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::NAN,
        1..=30 => T[df as usize - 1],
        _ => 1.96 + 2.4 / f64::from(df),
    }
}

impl Stats {
    /// Mean, sample standard deviation and 95 % confidence interval of
    /// `values`; `None` when empty.
    pub fn of(values: &[f64]) -> Option<Stats> {
        let values: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        let n = values.len();
        if n == 0 {
            return None;
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        let stddev = if n > 1 {
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        Some(Stats {
            n: n as u32,
            mean,
            stddev,
            stddev_pct: if mean == 0.0 {
                0.0
            } else {
                100.0 * stddev / mean.abs()
            },
            ci95: (n > 1).then(|| t95(n as u32 - 1) * stddev / (n as f64).sqrt()),
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        })
    }
}

/// A step's runs over one family, read together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StepStats {
    pub family: IpFamily,
    /// The direction the statistics are of (absent: the test's headline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<crate::Direction>,
    /// Each run's result id, in order (their documents are in `trials`).
    pub result_ids: Vec<ResultId>,
    /// Whether `until_stable` was met (absent for a fixed count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stable: Option<bool>,
    /// Statistics per metric measured, keyed by the metric's name.
    #[schemars(extend("propertyNames" = { "$ref": "#/$defs/Metric" }))]
    pub stats: std::collections::BTreeMap<String, Stats>,
}

/// IPv6's figure over IPv4's, of the same step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FamilyRatio {
    pub metric: Metric,
    /// What the ratio is of (a sweep step's value, an NDR size), when the
    /// method has more than one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    pub ipv6: f64,
    pub ipv4: f64,
    /// ipv6 / ipv4.
    pub ratio: f64,
}
