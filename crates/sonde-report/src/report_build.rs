//! A report's tables and figures from results, grouped as the caller
//! says (a campaign's steps, or test and direction): the means table, each
//! group's figure over time, its day heat map (hour of day × day, UTC),
//! and SmokePing's smoke for pings. No I/O: the caller reads the archive.

use crate::chart::{Chart, Panel, Series};
use crate::heatmap::HeatMap;
use crate::report::{Figure, FigureBody, Provenance, Report};
use crate::smoke::{Smoke, SmokePoint};
use crate::table::{Cell, Column, Table};
use sonde_model::{Figures, TestResult};
use std::collections::BTreeMap;
use std::time::UNIX_EPOCH;

/// Results that belong together (a campaign's step; a test's direction).
#[derive(Debug, Clone)]
pub struct Group {
    pub name: String,
    pub results: Vec<TestResult>,
}

/// Seconds since the epoch of a result's start.
fn secs(r: &TestResult) -> f64 {
    r.start
        .0
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The metric a group is drawn by: TCP's goodput, UDP's PDR, ping's RTT.
struct Drawn {
    label: &'static str,
    unit: &'static str,
    value: fn(&Figures) -> Option<f64>,
}

fn drawn(r: &TestResult) -> Drawn {
    match r.spec.kind().name() {
        "tcp" => Drawn {
            label: "goodput",
            unit: "Mbit/s",
            value: |f| f.throughput_bps.map(|v| v as f64 / 1e6),
        },
        "udp" => Drawn {
            label: "PDR",
            unit: "%",
            value: |f| f.pdr_pct,
        },
        _ => Drawn {
            label: "RTT",
            unit: "ms",
            value: |f| f.rtt_ms.as_ref().map(|r| r.p50),
        },
    }
}

fn mean_sd(v: &[f64]) -> Option<(f64, f64)> {
    let s = sonde_model::method::Stats::of(v)?;
    Some((s.mean, s.stddev))
}

/// The means table: one row per group.
pub fn means_table(groups: &[Group]) -> Table {
    type Get = fn(&Figures) -> Option<f64>;
    let metrics: [(&str, &str, Get); 5] = [
        ("goodput", "Mbit/s", |f| {
            f.throughput_bps.map(|v| v as f64 / 1e6)
        }),
        ("loss", "%", |f| f.loss_pct),
        ("PDR", "%", |f| f.pdr_pct),
        ("jitter", "ms", |f| f.jitter_ms),
        ("RTT", "ms", |f| f.rtt_ms.as_ref().map(|r| r.p50)),
    ];
    let mut columns = vec![
        Column::new("group", ""),
        Column::new("test", ""),
        Column::new("n", ""),
    ];
    for (name, unit, _) in &metrics {
        columns.push(Column::new(&format!("{name} mean"), unit));
        columns.push(Column::new(&format!("{name} sd"), unit));
    }
    let rows = groups
        .iter()
        .map(|g| {
            let mut row = vec![
                Cell::text(&g.name),
                Cell::text(g.results.first().map_or("", |r| r.spec.kind().name())),
                Cell::num(g.results.len() as f64, 0),
            ];
            for (_, _, get) in &metrics {
                let v: Vec<f64> = g
                    .results
                    .iter()
                    .filter_map(|r| r.summary.overall().as_ref().and_then(get))
                    .collect();
                match mean_sd(&v) {
                    Some((m, sd)) => {
                        row.push(Cell::num(m, 3));
                        row.push(Cell::num(sd, 3));
                    }
                    None => {
                        row.push(Cell::Empty);
                        row.push(Cell::Empty);
                    }
                }
            }
            row
        })
        .collect();
    Table {
        title: "Means per group".into(),
        columns,
        rows,
        note: Some(
            "goodput: the receiver's; RTT: each result's median; sd: sample standard deviation \
             over the results."
                .into(),
        ),
    }
}

/// A file-safe id from a name.
fn slug(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    while out.contains("--") {
        out = out.replace("--", "-");
    }
    out.trim_matches('-').to_string()
}

/// Each group over time: one panel per group, hours since `t0`.
fn over_time(groups: &[Group], t0: f64) -> Vec<Figure> {
    let mut by_test: BTreeMap<&str, Vec<Panel>> = BTreeMap::new();
    for g in groups {
        let Some(first) = g.results.first() else {
            continue;
        };
        let d = drawn(first);
        let mut points: Vec<(f64, f64)> = g
            .results
            .iter()
            .filter_map(|r| {
                let v = r.summary.overall().as_ref().and_then(d.value)?;
                Some(((secs(r) - t0) / 3600.0, v))
            })
            .collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        if points.is_empty() {
            continue;
        }
        by_test
            .entry(first.spec.kind().name())
            .or_default()
            .push(Panel {
                title: g.name.clone(),
                x_label: "hours from the first result".into(),
                y_label: format!("{} ({})", d.label, d.unit),
                y_range: (d.unit == "%").then_some((0.0, 105.0)),
                series: vec![Series {
                    name: d.label.into(),
                    points,
                }],
            });
    }
    by_test
        .into_iter()
        .map(|(test, panels)| Figure {
            id: format!("{test}-over-time"),
            caption: format!("{test}: each group over time"),
            body: FigureBody::Chart(Chart::grid(panels)),
        })
        .collect()
}

/// A group's day heat map, if its results cover two hours or more.
fn heat_map(g: &Group) -> Option<Figure> {
    let first = g.results.first()?;
    let d = drawn(first);
    let mut cells: BTreeMap<(i64, i64), Vec<f64>> = BTreeMap::new();
    for r in &g.results {
        let Some(v) = r.summary.overall().as_ref().and_then(d.value) else {
            continue;
        };
        let s = secs(r) as i64;
        cells
            .entry((s.div_euclid(86_400), s.rem_euclid(86_400) / 3600))
            .or_default()
            .push(v);
    }
    let hours: std::collections::BTreeSet<i64> = cells.keys().map(|k| k.1).collect();
    if hours.len() < 2 {
        return None;
    }
    let days: Vec<i64> = cells
        .keys()
        .map(|k| k.0)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let day_name = |day: i64| {
        jiff::Timestamp::from_second(day * 86_400)
            .map(|t| t.strftime("%m-%d").to_string())
            .unwrap_or_else(|_| day.to_string())
    };
    Some(Figure {
        id: format!("heat-{}", slug(&g.name)),
        caption: format!("{}: {} by hour of day (UTC) and day", g.name, d.label),
        body: FigureBody::HeatMap(HeatMap {
            title: g.name.clone(),
            x_label: "day".into(),
            y_label: "hour of day (UTC)".into(),
            x_names: days.iter().map(|d| day_name(*d)).collect(),
            y_names: (0..24).map(|h| format!("{h:02}")).collect(),
            cells: (0..24)
                .map(|h| {
                    days.iter()
                        .map(|day| {
                            cells
                                .get(&(*day, h))
                                .map(|v| v.iter().sum::<f64>() / v.len() as f64)
                        })
                        .collect()
                })
                .collect(),
            scale_label: format!("{} ({})", d.label, d.unit),
        }),
    })
}

/// A ping group's smoke: one point per result, its spread from its
/// intervals' round trips.
fn smoke(g: &Group, t0: f64) -> Option<Figure> {
    let points: Vec<SmokePoint> = g
        .results
        .iter()
        .filter(|r| r.spec.kind().name() == "ping")
        .filter_map(|r| {
            let rtts: Vec<f64> = r
                .intervals
                .iter()
                .filter_map(|i| i.round_trip.as_ref()?.rtt_ms.as_ref().map(|x| x.p50))
                .collect();
            let loss = r.summary.overall().and_then(|f| f.loss_pct).unwrap_or(0.0);
            SmokePoint::of((secs(r) - t0) / 3600.0, &rtts, loss)
        })
        .collect();
    if points.is_empty() {
        return None;
    }
    Some(Figure {
        id: format!("smoke-{}", slug(&g.name)),
        caption: format!(
            "{}: RTT smoke — the median coloured by loss, the middle 50 % and 80 % of round \
             trips shaded",
            g.name
        ),
        body: FigureBody::Smoke(Smoke {
            title: g.name.clone(),
            x_label: "hours from the first result".into(),
            points,
        }),
    })
}

/// The report of `groups`.
pub fn build_report(title: &str, groups: &[Group], provenance: Provenance) -> Report {
    let t0 = groups
        .iter()
        .flat_map(|g| g.results.iter().map(secs))
        .fold(f64::INFINITY, f64::min);
    let t0 = if t0.is_finite() { t0 } else { 0.0 };
    let mut figures = over_time(groups, t0);
    figures.extend(groups.iter().filter_map(heat_map));
    figures.extend(groups.iter().filter_map(|g| smoke(g, t0)));
    Report {
        title: title.into(),
        provenance,
        tables: vec![means_table(groups)],
        figures,
    }
}
