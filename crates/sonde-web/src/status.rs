//! A path's status from its latest result and the configured thresholds
//! (`[http.thresholds]`): ok, warn, crit, or unknown when the latest
//! result is older than `stale` (an agent that stopped reporting is not
//! green). The worst metric decides, and `why` names it.

use crate::{Levels, Thresholds};
use serde::Serialize;
use sonde_archive::ResultRow;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "PathStatus")]
pub enum Status {
    Ok,
    Warn,
    Crit,
    Unknown,
}

/// How a value stands against its levels; `higher_is_worse` for loss,
/// RTT and jitter, not for throughput and PDR.
fn against(v: f64, l: &Levels, higher_is_worse: bool) -> Status {
    let (warn, crit) = if higher_is_worse {
        (v > l.warn, v > l.crit)
    } else {
        (v < l.warn, v < l.crit)
    };
    if crit {
        Status::Crit
    } else if warn {
        Status::Warn
    } else {
        Status::Ok
    }
}

/// The status of a path whose latest result is `row`, at `now_ns`.
pub fn of(row: &ResultRow, t: &Thresholds, now_ns: i64) -> (Status, String) {
    let age_ns = now_ns.saturating_sub(row.start_ns);
    if age_ns > t.stale.as_nanos().min(i64::MAX as u128) as i64 {
        return (
            Status::Unknown,
            format!(
                "no result for {} (stale after {})",
                humanize(age_ns),
                humanize(t.stale.as_nanos() as i64)
            ),
        );
    }
    let checks = [
        ("loss", "%", row.loss_pct, t.loss_pct, true),
        ("RTT", " ms", row.rtt_ms, t.rtt_ms, true),
        ("jitter", " ms", row.jitter_ms, t.jitter_ms, true),
        (
            "throughput",
            " bit/s",
            row.throughput_bps,
            t.throughput_bps,
            false,
        ),
        ("PDR", "%", row.pdr_pct, t.pdr_pct, false),
    ];
    let mut worst: Option<(Status, String)> = None;
    for (name, unit, value, levels, higher_is_worse) in checks {
        let (Some(v), Some(l)) = (value, levels) else {
            continue;
        };
        let s = against(v, &l, higher_is_worse);
        let limit = match s {
            Status::Crit => l.crit,
            _ => l.warn,
        };
        let side = if higher_is_worse { '>' } else { '<' };
        let why = match s {
            Status::Ok => format!("{name} {}{unit}", short(v)),
            _ => format!("{name} {}{unit} {side} {}{unit}", short(v), short(limit)),
        };
        if worst.as_ref().is_none_or(|(w, _)| s > *w) {
            worst = Some((s, why));
        }
    }
    // Fresh, and no threshold looks at what it measured: nothing is
    // known to be wrong.
    worst.unwrap_or((
        Status::Ok,
        "no threshold applies to what it measured".into(),
    ))
}

fn short(v: f64) -> String {
    if v.abs() >= 1e6 {
        format!("{:.3e}", v)
    } else {
        format!("{}", (v * 1000.0).round() / 1000.0)
    }
}

pub fn humanize(ns: i64) -> String {
    let s = ns / 1_000_000_000;
    match s {
        s if s >= 86_400 => format!("{}d", s / 86_400),
        s if s >= 3600 => format!("{}h", s / 3600),
        s if s >= 60 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn row(loss: Option<f64>, rtt: Option<f64>, start_ns: i64) -> ResultRow {
        ResultRow {
            id: "x".into(),
            test: "udp".into(),
            source: "a".into(),
            target: "b".into(),
            source_addr: None,
            target_addr: None,
            family: "v6".into(),
            direction: "forward".into(),
            campaign: None,
            step: None,
            from: None,
            to: None,
            start_ns,
            throughput_bps: None,
            loss_pct: loss,
            pdr_pct: None,
            jitter_ms: None,
            rtt_ms: rtt,
            agent: None,
            path_changed: None,
        }
    }

    #[test]
    fn the_worst_metric_decides_and_is_named() {
        let t = Thresholds::default();
        let now = 10_000_000_000_000;
        assert_eq!(of(&row(Some(0.0), Some(1.0), now), &t, now).0, Status::Ok);
        let (s, why) = of(&row(Some(0.5), Some(1.0), now), &t, now);
        assert_eq!(s, Status::Warn, "{why}");
        let (s, why) = of(&row(Some(0.5), Some(200.0), now), &t, now);
        assert_eq!(s, Status::Crit);
        assert!(why.starts_with("RTT 200 ms > 150 ms"), "{why}");
        let (s, why) = of(&row(None, None, now), &t, now);
        assert_eq!(s, Status::Ok, "{why}");
    }

    #[test]
    fn an_old_result_is_unknown_not_green() {
        let t = Thresholds {
            stale: Duration::from_secs(60),
            ..Thresholds::default()
        };
        let now = 10_000_000_000_000;
        let (s, why) = of(&row(Some(0.0), None, now - 61_000_000_000), &t, now);
        assert_eq!(s, Status::Unknown);
        assert!(why.contains("1m"), "{why}");
    }

    #[test]
    fn lower_is_worse_for_throughput() {
        let l = Levels {
            warn: 100.0,
            crit: 10.0,
        };
        assert_eq!(against(150.0, &l, false), Status::Ok);
        assert_eq!(against(50.0, &l, false), Status::Warn);
        assert_eq!(against(5.0, &l, false), Status::Crit);
    }
}
