//! `sonde results stats`: a metric's mean, standard deviation, 95 %
//! confidence interval and percentiles over the results selected, grouped
//! by target, direction, hour of day (UTC), label, test, campaign or
//! family — the studies' tables of means (000 Table 2).

use crate::failure::Failure;
use crate::results_filter::FilterArgs;
use anyhow::anyhow;
use clap::Args;
use serde::Serialize;
use sonde_archive::{Grouping, Store};
use sonde_model::Metric;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

#[derive(Debug, Args)]
pub struct StatsArgs {
    #[command(flatten)]
    pub filter: FilterArgs,
    /// The metric, by its name or short name (docs/metrics.md):
    /// throughput, loss, pdr, jitter, rtt (the median RTT), burst (the
    /// longest loss burst), delay, offered, retransmits…
    #[arg(long, default_value = "throughput", value_parser = metric)]
    pub metric: Metric,
    /// Group by: target, direction, hour, label:KEY, test, campaign,
    /// family, or none.
    #[arg(long, default_value = "none", value_parser = grouping)]
    pub by: Grouping,
    /// One JSON document (values in the metric's base unit).
    #[arg(short = 'J', long)]
    pub json: bool,
}

fn metric(s: &str) -> Result<Metric, String> {
    Metric::named(s).ok_or_else(|| format!("'{s}' is not a metric: {}", Metric::names()))
}

fn grouping(s: &str) -> Result<Grouping, String> {
    Ok(match s {
        "none" => Grouping::None,
        "target" => Grouping::Target,
        "direction" => Grouping::Direction,
        "hour" => Grouping::Hour,
        "test" => Grouping::Test,
        "campaign" => Grouping::Campaign,
        "family" => Grouping::Family,
        _ => match s.strip_prefix("label:") {
            Some(k) if !k.is_empty() => Grouping::Label(k.to_string()),
            _ => {
                return Err(format!(
                    "'{s}': group by target, direction, hour, label:KEY, test, campaign, \
                     family or none"
                ))
            }
        },
    })
}

/// One group's statistics, in the metric's base unit. The standard
/// deviation of a single value is undefined: `null`, printed `-`.
#[derive(Debug, Serialize)]
pub struct GroupStats {
    pub group: String,
    pub n: u32,
    pub mean: f64,
    pub stddev: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ci95: Option<f64>,
    pub min: f64,
    pub p5: f64,
    pub p50: f64,
    pub p95: f64,
    pub max: f64,
}

/// The statistics of `values`, or `None` when there are none.
pub fn group_stats(group: &str, values: &[f64]) -> Option<GroupStats> {
    let s = sonde_methods::step::stats(values)?;
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    sorted.sort_by(f64::total_cmp);
    let p = |q| sonde_model::nearest_rank(&sorted, q);
    Some(GroupStats {
        group: group.to_string(),
        n: s.n,
        mean: s.mean,
        stddev: (s.n > 1).then_some(s.stddev),
        ci95: s.ci95,
        min: s.min,
        p5: p(5.0),
        p50: p(50.0),
        p95: p(95.0),
        max: s.max,
    })
}

/// The values of each group, a group that holds more than one test kind
/// or direction split into one per kind and direction (`10 · udp
/// forward`): a mean never pools TCP with UDP, or one direction with the
/// other.
fn unpooled(points: Vec<sonde_archive::MetricPoint>) -> BTreeMap<String, Vec<f64>> {
    let mut kinds: BTreeMap<&str, (BTreeSet<&str>, BTreeSet<&str>)> = BTreeMap::new();
    for p in &points {
        let (tests, directions) = kinds.entry(&p.group).or_default();
        tests.insert(&p.test);
        directions.insert(&p.direction);
    }
    let mut groups: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for p in &points {
        let (tests, directions) = &kinds[p.group.as_str()];
        let mut parts: Vec<String> = Vec::new();
        if tests.len() > 1 {
            parts.push(p.test.clone());
        }
        if directions.len() > 1 {
            let ends = p.ends.as_ref().map(|(a, b)| (a.as_str(), b.as_str()));
            parts.push(sonde_report::report_build::direction_label(
                &p.direction,
                ends,
                p.both,
            ));
        }
        let name = match (p.group.is_empty(), parts.is_empty()) {
            (_, true) => p.group.clone(),
            (true, false) => parts.join(" "),
            (false, false) => format!("{} · {}", p.group, parts.join(" ")),
        };
        groups.entry(name).or_default().push(p.value);
    }
    groups
}

/// How a value prints: as the metric registry shows it (throughput in
/// Mbit/s, the rest as kept).
fn shown(metric: Metric) -> (f64, &'static str) {
    let info = metric.info();
    (info.scale, info.unit)
}

pub fn stats(store: &mut Store, a: &StatsArgs) -> Result<(), Failure> {
    let points = store
        .metric_points(&a.filter.filter(i64::MAX), a.metric, &a.by)
        .map_err(|e| Failure::Run(anyhow!(e)))?;
    let groups = unpooled(points);
    let all: Vec<GroupStats> = groups
        .iter()
        .filter_map(|(g, v)| group_stats(g, v))
        .collect();
    let mut out = std::io::stdout();
    if a.json {
        let doc = serde_json::json!({
            "metric": a.metric.name(),
            "groups": all,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
        return Ok(());
    }
    if all.is_empty() {
        eprintln!(
            "sonde: no results in {} measured {}",
            store.location(),
            a.metric.name()
        );
        return Ok(());
    }
    let (k, unit) = shown(a.metric);
    let width = all
        .iter()
        .map(|g| g.group.chars().count())
        .max()
        .unwrap_or(0)
        .max(5);
    writeln!(
        out,
        "{:<width$} {:>5} {:>10} {:>9} {:>9} {:>10} {:>10} {:>10} {:>10} {:>10}   ({unit})",
        "group", "n", "mean", "sd", "±95%", "min", "p5", "p50", "p95", "max"
    )?;
    for g in &all {
        let ci = g.ci95.map_or("-".to_string(), |c| format!("{:.3}", c * k));
        let sd = g
            .stddev
            .map_or("-".to_string(), |s| format!("{:.3}", s * k));
        writeln!(
            out,
            "{:<width$} {:>5} {:>10.3} {:>9} {:>9} {:>10.3} {:>10.3} {:>10.3} {:>10.3} {:>10.3}",
            if g.group.is_empty() {
                "(all)"
            } else {
                &g.group
            },
            g.n,
            g.mean * k,
            sd,
            ci,
            g.min * k,
            g.p5 * k,
            g.p50 * k,
            g.p95 * k,
            g.max * k,
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_of_a_known_series() {
        let g = group_stats("x", &[7.0, 8.0, 9.0, 8.0]).unwrap();
        assert_eq!(g.n, 4);
        assert!((g.mean - 8.0).abs() < 1e-12);
        assert!((g.stddev.unwrap() - (2.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!(group_stats("x", &[7.0]).unwrap().stddev, None, "n = 1");
        assert_eq!((g.min, g.p50, g.max), (7.0, 8.0, 9.0));
        assert!(group_stats("x", &[]).is_none());
        assert!(matches!(grouping("label:path"), Ok(Grouping::Label(k)) if k == "path"));
        assert!(grouping("label:").is_err());
        assert_eq!(metric("pdr").unwrap(), Metric::PdrPct);
        assert!(metric("speed").unwrap_err().contains("throughput_bps, "));
    }

    fn point(group: &str, test: &str, direction: &str, value: f64) -> sonde_archive::MetricPoint {
        sonde_archive::MetricPoint {
            group: group.into(),
            test: test.into(),
            direction: direction.into(),
            start_ns: 0,
            value,
            ends: None,
            both: false,
        }
    }

    #[test]
    fn a_group_never_pools_test_kinds_or_directions() {
        let groups = unpooled(vec![
            point("10", "udp", "forward", 10.0),
            point("10", "udp", "reverse", 5.0),
            point("10", "tcp", "forward", 8.0),
            point("11", "tcp", "forward", 7.0),
            point("", "udp", "forward", 1.0),
            point("", "udp", "reverse", 2.0),
        ]);
        let names: Vec<(&str, &[f64])> = groups
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_slice()))
            .collect();
        assert_eq!(
            names,
            [
                ("10 · tcp forward", &[8.0][..]),
                ("10 · udp forward", &[10.0][..]),
                ("10 · udp reverse", &[5.0][..]),
                ("11", &[7.0][..]),
                ("forward", &[1.0][..]),
                ("reverse", &[2.0][..]),
            ]
        );
    }

    #[test]
    fn a_campaigns_directions_are_named_by_its_endpoints() {
        let ends = |p: sonde_archive::MetricPoint, both: bool| sonde_archive::MetricPoint {
            ends: Some(("A".into(), "B".into())),
            both,
            ..p
        };
        let groups = unpooled(vec![
            ends(point("both", "tcp", "forward", 8.0), true),
            ends(point("both", "tcp", "reverse", 7.0), true),
            ends(point("one", "udp", "forward", 1.0), false),
            ends(point("one", "udp", "reverse", 2.0), false),
        ]);
        let names: Vec<&str> = groups.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "both · A to B (with B to A)",
                "both · B to A (with A to B)",
                "one · A to B",
                "one · B to A",
            ]
        );
    }
}
