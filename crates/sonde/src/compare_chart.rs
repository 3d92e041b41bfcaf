//! `sonde compare … --chart FILE`: every selection on one chart, a series
//! each (and each direction or group where there are several): against
//! the payload size or offered rate when `--by` names one (001's open
//! system and cipher suites against packet size, 002's IPv4 against IPv6
//! per frame size and its rate ladders, a point per group's mean), over
//! time otherwise (004's background loads, a point per result).

use crate::compare_groups::{groups, of, wanted, By, Obs, DIRECTIONS, METRICS, TESTS};
use sonde_report::chart::{Chart, Panel, Series};

/// The selections (name, observations) drawn together: a panel per test
/// and metric any of them measured (of `metrics`, or all). `None` when
/// nothing was measured.
pub fn overlay(selections: &[(String, Vec<Obs>)], metrics: &[String], by: &[By]) -> Option<Chart> {
    let against = by.iter().copied().find(|b| b.numeric());
    let mut panels = Vec::new();
    for test in TESTS {
        // Directions and groups any selection measured: named in the
        // series only when there are several.
        let directions: Vec<&str> = DIRECTIONS
            .into_iter()
            .filter(|d| {
                selections
                    .iter()
                    .any(|(_, obs)| obs.iter().any(|o| o.test == test && o.direction == *d))
            })
            .collect();
        let mut lines = Vec::new();
        for (_, obs) in selections {
            for g in groups(obs, test) {
                let g = if against.is_some() { g.without_x() } else { g };
                if !lines.contains(&g) {
                    lines.push(g);
                }
            }
        }
        for m in METRICS.iter().copied().filter(|m| wanted(*m, metrics)) {
            let info = m.info();
            let mut series = Vec::new();
            for (name, obs) in selections {
                for d in &directions {
                    for line in &lines {
                        let points = points(obs, test, d, line, against, |o| m.shown(&o.figures));
                        if points.is_empty() {
                            continue;
                        }
                        let mut label = name.clone();
                        if directions.len() > 1 {
                            label += &format!(" {d}");
                        }
                        if lines.len() > 1 {
                            label += &format!(" {}", line.name());
                        }
                        series.push(Series {
                            name: label,
                            points,
                        });
                    }
                }
            }
            if !series.is_empty() {
                panels.push(Panel {
                    title: format!("{test}: {}", info.short),
                    x_label: against.map_or("time (UTC)", By::axis).into(),
                    y_label: format!("{} ({})", info.label, info.unit),
                    y_range: (info.unit == "%").then_some((0.0, 100.0)),
                    x_time: against.is_none(),
                    series,
                });
            }
        }
    }
    (!panels.is_empty()).then(|| Chart::grid(panels))
}

/// The points of one series: each observation at its time, or each
/// group's mean at its payload or rate (rates in Mbit/s).
fn points(
    obs: &[Obs],
    test: &str,
    direction: &str,
    line: &crate::compare_groups::Group,
    against: Option<By>,
    value: impl Fn(&Obs) -> Option<f64>,
) -> Vec<(f64, f64)> {
    let mut points: Vec<(f64, f64)> = match against {
        None => of(obs, test, line, direction)
            .into_iter()
            .filter_map(|o| Some((o.at, value(o)?)))
            .collect(),
        Some(_) => groups(obs, test)
            .into_iter()
            .filter(|g| &g.without_x() == line)
            .filter_map(|g| {
                let (by, x) = g.x()?;
                let v: Vec<f64> = of(obs, test, &g, direction)
                    .into_iter()
                    .filter_map(&value)
                    .collect();
                let x = if by == By::Rate { x / 1e6 } else { x };
                (!v.is_empty()).then(|| (x, v.iter().sum::<f64>() / v.len() as f64))
            })
            .collect(),
    };
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    points
}
