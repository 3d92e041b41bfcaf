//! A report's tables and figures from results, grouped as the caller
//! says (a campaign's steps, or test and direction): the means table, each
//! group's figure over time, its day heat map (hour of day × day, UTC),
//! and SmokePing's smoke for pings. No I/O: the caller reads the archive.

use crate::chart::{Chart, Panel, Series};
use crate::report::{Figure, FigureBody, Provenance, Report};
pub use crate::report_group::{direction_label, slug, Group};
use crate::report_group::{drawn, secs};
use crate::smoke::{Smoke, SmokePoint};
use crate::table::{Cell, Column, Table};
use sonde_model::{MethodResult, MethodSpec, Metric};
use std::collections::BTreeMap;

fn mean_sd(v: &[f64]) -> Option<(f64, f64)> {
    let s = sonde_model::method::Stats::of(v)?;
    Some((s.mean, s.stddev))
}

/// The means table: one row per group.
pub fn means_table(groups: &[Group]) -> Table {
    // RTT twice, said which: 000 Table 2 gives each ping's mean, sonde's
    // overview its median. Units and values from the metric registry.
    let metrics: [(&str, Metric); 6] = [
        ("goodput", Metric::ThroughputBps),
        ("loss", Metric::LossPct),
        ("PDR", Metric::PdrPct),
        ("jitter", Metric::JitterMs),
        ("RTT mean", Metric::RttAvgMs),
        ("RTT median", Metric::RttP50Ms),
    ];
    let mut columns = vec![
        Column::new("group", ""),
        Column::new("test", ""),
        Column::new("n", ""),
    ];
    for (name, metric) in &metrics {
        columns.push(Column::new(&format!("{name} mean"), metric.unit()));
        columns.push(Column::new(&format!("{name} sd"), metric.unit()));
    }
    let rows = groups
        .iter()
        .map(|g| {
            let mut row = vec![
                Cell::text(&g.name),
                Cell::text(g.results.first().map_or("", |r| r.spec.kind().name())),
                Cell::num(g.results.len() as f64, 0),
            ];
            for (_, metric) in &metrics {
                let v: Vec<f64> = g
                    .results
                    .iter()
                    .filter_map(|r| g.figures(r).and_then(|f| metric.shown(f)))
                    .collect();
                match mean_sd(&v) {
                    // The sd of one value is undefined: an empty cell.
                    Some((m, _)) if v.len() < 2 => {
                        row.push(Cell::num(m, 3));
                        row.push(Cell::Empty);
                    }
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

/// Each group over time: one panel per group, every panel on one time
/// axis (UTC), from the first result of any group to the last; and where
/// a test has several groups, all of them on one chart, a line each with
/// a legend (001's suites, 004's background loads: an overlay).
fn over_time(groups: &[Group]) -> Vec<Figure> {
    let mut by_test: BTreeMap<&str, Vec<Panel>> = BTreeMap::new();
    let mut overlays: BTreeMap<&str, Panel> = BTreeMap::new();
    for g in groups {
        let Some(first) = g.results.first() else {
            continue;
        };
        let d = drawn(first);
        let mut points: Vec<(f64, f64)> = g
            .results
            .iter()
            .filter_map(|r| {
                let v = g.figures(r).and_then(|f| d.value(f))?;
                Some((secs(r), v))
            })
            .collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        if points.is_empty() {
            continue;
        }
        let test = first.spec.kind().name();
        let panel = |title: String, name: &str, points: Vec<(f64, f64)>| Panel {
            title,
            x_label: "time (UTC)".into(),
            y_label: format!("{} ({})", d.label, d.unit),
            y_range: (d.unit == "%").then_some((0.0, 105.0)),
            x_time: true,
            series: vec![Series {
                name: name.into(),
                points,
            }],
        };
        overlays
            .entry(test)
            .and_modify(|o| {
                o.series.push(Series {
                    name: g.name.clone(),
                    points: points.clone(),
                })
            })
            .or_insert_with(|| panel(format!("{test}: every group"), &g.name, points.clone()));
        by_test
            .entry(test)
            .or_default()
            .push(panel(g.name.clone(), d.label, points));
    }
    let mut out = Vec::new();
    for (test, panels) in by_test {
        out.push(Figure {
            id: format!("{test}-over-time"),
            caption: format!("{test}: each group over time"),
            body: FigureBody::Chart(Chart::grid(panels)),
        });
        if let Some(o) = overlays.remove(test).filter(|o| o.series.len() > 1) {
            out.push(Figure {
                id: format!("{test}-groups-together"),
                caption: format!("{test}: every group on one chart over time, a line each"),
                body: FigureBody::Chart(Chart {
                    panels: vec![o],
                    columns: 1,
                    panel_width: 900,
                    panel_height: 380,
                }),
            });
        }
    }
    out
}

/// A ping group's smoke: one point per result, its spread from its
/// intervals' round trips.
fn smoke(g: &Group) -> Option<Figure> {
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
            let loss = g.figures(r).and_then(|f| f.loss_pct).unwrap_or(0.0);
            SmokePoint::of(secs(r), &rtts, loss)
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
            x_label: "time (UTC)".into(),
            x_time: true,
            points,
        }),
    })
}

/// RTT against packet size (seed 002 Fig 10) for a ping group whose
/// results sent several sizes: each size's median RTT, averaged over the
/// group's results.
fn rtt_by_size(g: &Group) -> Option<Figure> {
    let mut by_size: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    for r in &g.results {
        for s in &r.series {
            if let Some(rtt) = &s.figures.rtt_ms {
                by_size.entry(s.size_bytes).or_default().push(rtt.p50);
            }
        }
    }
    if by_size.len() < 2 {
        return None;
    }
    let points: Vec<(f64, f64)> = by_size
        .iter()
        .map(|(size, v)| (f64::from(*size), v.iter().sum::<f64>() / v.len() as f64))
        .collect();
    // Around the data: the rise with size is what the figure shows.
    let lo = points.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let hi = points.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
    let pad = ((hi - lo) * 0.25).max(0.1);
    Some(Figure {
        id: format!("rtt-size-{}", slug(&g.name)),
        caption: format!("{}: median RTT against packet size", g.name),
        body: FigureBody::Chart(Chart::grid(vec![Panel {
            title: g.name.clone(),
            x_label: "packet size (bytes)".into(),
            y_label: "RTT (ms)".into(),
            y_range: Some(((lo - pad).max(0.0), hi + pad)),
            x_time: false,
            series: vec![Series {
                name: "median RTT".into(),
                points,
            }],
        }])),
    })
}

/// An NDR search's table (seed 002 Table 1: the no-drop rate per frame
/// size and its share of the line) and its figure: the no-drop payload
/// rate against frame size per family (001 Figs 2–6, 002 Figs 7–9).
fn ndr_parts(m: &MethodResult) -> (Table, Figure) {
    let name = m
        .title
        .clone()
        .unwrap_or_else(|| format!("NDR {}", short(m)));
    let rows = m
        .results
        .iter()
        .map(|s| {
            vec![
                Cell::text(crate::repeat_text::family_name(s.family)),
                Cell::num(f64::from(s.frame_bytes), 0),
                Cell::num(f64::from(s.payload_bytes), 0),
                Cell::num(s.rate_bps as f64 / 1e6, 3),
                Cell::num(s.payload_rate_bps as f64 / 1e6, 3),
                Cell::num(s.rate_pps, 0),
                Cell::num(s.efficiency_pct, 1),
                Cell::num(s.loss_pct, 4),
                Cell::num(f64::from(s.trials), 0),
            ]
        })
        .collect();
    let table = Table {
        title: format!("{name}: no-drop rate per frame size (RFC 2544 §26.1)"),
        columns: vec![
            Column::new("family", ""),
            Column::new("frame", "B"),
            Column::new("payload", "B"),
            Column::new("rate", "Mbit/s"),
            Column::new("payload rate", "Mbit/s"),
            Column::new("frames", "1/s"),
            Column::new("efficiency", "%"),
            Column::new("loss", "%"),
            Column::new("trials", ""),
        ],
        rows,
        note: Some("efficiency: the payload's share of each frame on the wire.".into()),
    };
    let mut per_family: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for s in &m.results {
        per_family
            .entry(crate::repeat_text::family_name(s.family).to_string())
            .or_default()
            .push((f64::from(s.frame_bytes), s.payload_rate_bps as f64 / 1e6));
    }
    let figure = Figure {
        id: format!("ndr-{}", short(m)),
        caption: format!("{name}: no-drop payload rate against frame size, per family"),
        body: FigureBody::Chart(Chart::grid(vec![Panel {
            title: name,
            x_label: "frame size (bytes)".into(),
            y_label: "no-drop payload rate (Mbit/s)".into(),
            y_range: None,
            x_time: false,
            series: per_family
                .into_iter()
                .map(|(name, points)| Series { name, points })
                .collect(),
        }])),
    };
    (table, figure)
}

/// The first 8 characters of a method's id, for file names.
fn short(m: &MethodResult) -> String {
    m.id.to_string().chars().take(8).collect()
}

/// What a chart's x axis is, as its first panel labels it ("offered
/// (Mbit/s)", "payload (bytes)"), for a caption.
fn x_axis(chart: &Chart) -> String {
    chart
        .panels
        .first()
        .map_or_else(|| "its steps".to_string(), |p| p.x_label.clone())
}

/// The tables and figures of the methods kept: NDR searches, sweeps
/// (PDR and goodput against offered rate, the limiter named: 000 Figs
/// 25, 26, 43, 44), QoS scenarios (foreground loss and jitter against
/// rate: 004 Figs 4–8) and the TCP tuning matrix (bandwidth against RTT
/// per buffer size: 003 Fig 5).
pub fn method_parts(methods: &[MethodResult]) -> (Vec<Table>, Vec<Figure>) {
    let (mut tables, mut figures) = (Vec::new(), Vec::new());
    for m in methods {
        let title = m.title.clone();
        let chart = |id: &str, caption: &str, chart: Chart| Figure {
            id: format!("{id}-{}", short(m)),
            caption: title
                .clone()
                .map_or(caption.to_string(), |t| format!("{t}: {caption}")),
            body: FigureBody::Chart(chart),
        };
        match &m.spec {
            MethodSpec::Ndr(_) if !m.results.is_empty() => {
                let (t, f) = ndr_parts(m);
                tables.push(t);
                figures.push(f);
            }
            MethodSpec::Sweep(_) if !m.steps.is_empty() => {
                let limiters: Vec<String> = m
                    .limiters
                    .iter()
                    .map(|l| format!("{:?}: {:?}", l.direction, l.class).to_lowercase())
                    .collect();
                let drawn = crate::sweep_chart(m);
                // The caption names the x axis the sweep varied (offered
                // rate, payload size, …), as its panels do.
                let caption = format!(
                    "goodput and PDR against {}; limiter {}",
                    x_axis(&drawn),
                    if limiters.is_empty() {
                        "none found".to_string()
                    } else {
                        limiters.join(", ")
                    }
                );
                figures.push(chart("sweep", &caption, drawn));
            }
            MethodSpec::QosScenario(_) if !m.qos_steps.is_empty() => {
                let drawn = crate::qos_chart(m);
                let caption = format!(
                    "foreground and background {} against {}",
                    drawn
                        .panels
                        .iter()
                        .map(|p| p.y_label.split(" (").next().unwrap_or(""))
                        .collect::<Vec<_>>()
                        .join(" and "),
                    x_axis(&drawn)
                );
                figures.push(chart("qos", &caption, drawn));
            }
            MethodSpec::TuneLab(_) => figures.push(chart(
                "tune",
                "bandwidth against RTT per buffer size",
                crate::tune_chart(m),
            )),
            _ => {}
        }
    }
    if let Some(drawn) = crate::qos_text::video_chart(methods) {
        figures.push(Figure {
            id: "video".into(),
            caption: "video foreground: decodable frames and packets lost per frame type \
                      against the load offered, per receiver"
                .into(),
            body: FigureBody::Chart(drawn),
        });
    }
    (tables, figures)
}

/// The report of `groups` and `methods`.
pub fn build_report(
    title: &str,
    groups: &[Group],
    methods: &[MethodResult],
    heat: crate::report_heat::HeatLayout,
    provenance: Provenance,
) -> Report {
    let mut figures = over_time(groups);
    figures.extend(crate::report_heat::heat_maps(groups, heat));
    figures.extend(groups.iter().filter_map(smoke));
    figures.extend(groups.iter().filter_map(rtt_by_size));
    let mut tables = Vec::new();
    if !groups.is_empty() {
        tables.push(means_table(groups));
    }
    let (http_table, http_figures) = crate::report_http::http_parts(groups);
    tables.extend(http_table);
    figures.extend(http_figures);
    tables.extend(crate::report_path::path_tables(groups));
    let (method_tables, method_figures) = method_parts(methods);
    tables.extend(method_tables);
    figures.extend(method_figures);
    Report {
        title: title.into(),
        provenance,
        tables,
        figures,
    }
}
