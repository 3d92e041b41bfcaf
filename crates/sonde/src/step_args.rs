// Used by the method commands as they land (ndr, sweep, repeat).
#![allow(dead_code)]
//! Flags that say how each step of a test or method runs: repeated
//! (`--repeat N`, or `--until-stddev 0.5% --min-runs 30 --max-runs 200`,
//! seed 001's rule) and over which families (`--families 6,4`). Flattened
//! into tcp, udp, ping and the methods; they only spell a [`StepPlan`].

use clap::Args;
use sonde_model::method::{Metric, RepeatRule, StepPlan};
use sonde_model::IpFamily;

#[derive(Debug, Args, Clone, Default)]
pub struct StepArgs {
    /// Run each test (or method step) N times and report mean, standard
    /// deviation and 95 % confidence interval.
    #[arg(long, value_name = "N", conflicts_with = "until_stddev")]
    pub repeat: Option<u32>,
    /// Repeat until the standard deviation of the metric is at most this
    /// share of its mean (e.g. 0.5%).
    #[arg(long, value_name = "PCT", value_parser = percent)]
    pub until_stddev: Option<f64>,
    /// With --until-stddev: at least this many runs.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 30,
        requires = "until_stddev"
    )]
    pub min_runs: u32,
    /// With --until-stddev: at most this many runs.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 200,
        requires = "until_stddev"
    )]
    pub max_runs: u32,
    /// The figure --until-stddev watches and the statistics lead with
    /// (default: throughput_bps for tcp/udp, rtt_p50_ms for ping).
    #[arg(long, value_name = "NAME")]
    pub metric: Option<Metric>,
    /// Run every step over these families in turn, alternating run by
    /// run, and report IPv6/IPv4 ratios: 6,4 (or 4,6, 6, 4).
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = family)]
    pub families: Vec<IpFamily>,
}

impl StepArgs {
    /// The plan these flags spell.
    pub fn plan(&self) -> StepPlan {
        let repeat = match (self.repeat, self.until_stddev) {
            (_, Some(pct)) => RepeatRule::UntilStable {
                stddev_pct: pct,
                min_runs: self.min_runs,
                max_runs: self.max_runs,
            },
            (Some(n), None) if n > 1 => RepeatRule::Times { runs: n },
            _ => RepeatRule::Once,
        };
        StepPlan {
            repeat,
            metric: self.metric,
            families: self.families.clone(),
        }
    }

    /// Whether these flags ask for more than one plain run.
    pub fn is_method(&self) -> bool {
        self.plan() != StepPlan::default()
    }
}

/// `0.5%`, `0.5 %` or `0.5` (percent).
pub fn percent(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .trim_end_matches('%')
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a percentage (e.g. 0.5%)"))?;
    if !(v.is_finite() && (0.0..=100.0).contains(&v)) {
        return Err(format!("'{s}': a percentage is 0 to 100"));
    }
    Ok(v)
}

/// `6` or `4` (also `ipv6`, `v6`, …).
pub fn family(s: &str) -> Result<IpFamily, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "6" | "v6" | "ipv6" => Ok(IpFamily::V6),
        "4" | "v4" | "ipv4" => Ok(IpFamily::V4),
        _ => Err(format!("'{s}' is not an address family: use 6 or 4")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_and_families_parse() {
        assert_eq!(percent("0.5%"), Ok(0.5));
        assert_eq!(percent("2"), Ok(2.0));
        assert!(percent("-1%").is_err());
        assert!(percent("x").unwrap_err().contains("'x'"));
        assert_eq!(family("6"), Ok(IpFamily::V6));
        assert!(family("5").unwrap_err().contains("6 or 4"));
    }
}
