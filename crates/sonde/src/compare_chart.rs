//! `sonde compare … --chart FILE`: every selection on one chart, a
//! series each (and each direction where there are several), over time:
//! 001's open system against its cipher suites, 002's IPv4 against IPv6,
//! 004's background loads, as overlays with a legend rather than a
//! figure each.

use crate::compare_cmd::{of, DIRECTIONS, METRICS};
use sonde_model::TestResult;
use sonde_report::chart::{Chart, Panel, Series};
use std::time::UNIX_EPOCH;

fn secs(r: &TestResult) -> f64 {
    r.start
        .0
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The selections (name, results) drawn together: a panel per test and
/// metric that any of them measured (of `metrics`, or all), a series per
/// selection and direction. `None` when nothing was measured.
pub fn overlay(selections: &[(String, Vec<TestResult>)], metrics: &[String]) -> Option<Chart> {
    let mut panels = Vec::new();
    for test in ["tcp", "udp", "ping", "http"] {
        // Directions any selection measured: named in the series only
        // when there are several.
        let directions: Vec<&str> = DIRECTIONS
            .into_iter()
            .filter(|d| selections.iter().any(|(_, rs)| !of(rs, test, d).is_empty()))
            .collect();
        for m in METRICS
            .iter()
            .filter(|m| metrics.is_empty() || metrics.iter().any(|x| x == m.name))
        {
            let mut series = Vec::new();
            for (name, rs) in selections {
                for d in &directions {
                    let mut points: Vec<(f64, f64)> = of(rs, test, d)
                        .iter()
                        .filter_map(|(r, f)| Some((secs(r), (m.value)(f)? * m.scale)))
                        .collect();
                    if points.is_empty() {
                        continue;
                    }
                    points.sort_by(|a, b| a.0.total_cmp(&b.0));
                    let name = if directions.len() > 1 {
                        format!("{name} {d}")
                    } else {
                        name.clone()
                    };
                    series.push(Series { name, points });
                }
            }
            if !series.is_empty() {
                panels.push(Panel {
                    title: format!("{test}: {}", m.name),
                    x_label: "time (UTC)".into(),
                    y_label: format!("{} ({})", m.name, m.unit),
                    y_range: (m.unit == "%").then_some((0.0, 100.0)),
                    x_time: true,
                    series,
                });
            }
        }
    }
    (!panels.is_empty()).then(|| Chart::grid(panels))
}
