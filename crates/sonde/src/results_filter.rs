//! Which results a `results`, `report` or `stats` command reads: one set
//! of filters on the command line, made into the archive's filter.

use crate::run_args::duration;
use clap::Args;
use sonde_archive::ResultFilter;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Which results: one set of filters for list, export and stats.
#[derive(Debug, Clone, Args)]
pub struct FilterArgs {
    /// Only this test: tcp, udp, ping, http or trace.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(sonde_model::TestKind::NAMES))]
    pub test: Option<String>,
    /// Only results toward this host (as the test named it).
    #[arg(long)]
    pub target: Option<String>,
    /// Only results of this campaign.
    #[arg(long)]
    pub campaign: Option<String>,
    /// Only results that started within this long before now (24h, 7d).
    #[arg(long, value_parser = duration, value_name = "AGO")]
    pub since: Option<Duration>,
    /// Only results that started more than this long before now.
    #[arg(long, value_parser = duration, value_name = "AGO")]
    pub until: Option<Duration>,
    /// Only this family: v6 or v4.
    #[arg(long, value_parser = ["v6", "v4"])]
    pub family: Option<String>,
    /// Only this direction: forward, reverse or bidir.
    #[arg(long, value_parser = ["forward", "reverse", "bidir"])]
    pub direction: Option<String>,
    /// Only results kept with this label (a campaign's or a step's).
    #[arg(long, value_name = "KEY=VALUE", value_parser = label)]
    pub label: Option<(String, String)>,
}

fn label(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .filter(|(k, _)| !k.is_empty())
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .ok_or_else(|| format!("'{s}': write KEY=VALUE"))
}

impl FilterArgs {
    pub fn filter(&self, limit: i64) -> ResultFilter {
        ResultFilter {
            test: self.test.clone(),
            target: self.target.clone(),
            campaign: self.campaign.clone(),
            since_ns: self.since.map(ago_ns),
            until_ns: self.until.map(ago_ns),
            family: self.family.clone(),
            direction: self.direction.clone(),
            label: self.label.clone(),
            trials: true,
            limit,
        }
    }
}

fn ago_ns(d: Duration) -> i64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    i64::try_from(now.saturating_sub(d.as_nanos())).unwrap_or(0)
}
