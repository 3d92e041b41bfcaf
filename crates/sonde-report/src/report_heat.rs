//! A report's heat maps, in the layout the study needs (`sonde report
//! --heat-map LAYOUT`):
//!
//! - `hour-day` (the default): a group's results by hour of day (UTC) and
//!   day, 000 Figs 30, 41, 42, for batteries run over days;
//! - `hour-step`: every group of a test kind side by side, hour of day by
//!   group (a campaign's step), for a one-day battery, where hour × day
//!   would be a single column;
//! - `time-run`: a group's results each a column, the seconds within the
//!   test down, each cell an interval's figure: how a test behaves over
//!   its course, run after run.
//!
//! A cell is the mean of the values that fall in it; a cell no value
//! fell in is empty (drawn blank, `null` in JSON), never a zero. A map
//! with fewer than two rows or two columns to compare is left out.

use crate::heatmap::HeatMap;
use crate::report::{Figure, FigureBody};
use crate::report_group::{drawn, secs, slug, Group};
use std::collections::{BTreeMap, BTreeSet};

/// Which heat maps a report draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HeatLayout {
    #[default]
    HourDay,
    HourStep,
    TimeRun,
}

impl std::str::FromStr for HeatLayout {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "hour-day" => Ok(HeatLayout::HourDay),
            "hour-step" => Ok(HeatLayout::HourStep),
            "time-run" => Ok(HeatLayout::TimeRun),
            _ => Err(format!(
                "'{s}': a heat map is hour-day, hour-step or time-run"
            )),
        }
    }
}

/// The heat maps of `groups` in `layout`.
pub fn heat_maps(groups: &[Group], layout: HeatLayout) -> Vec<Figure> {
    match layout {
        HeatLayout::HourDay => groups.iter().filter_map(hour_day).collect(),
        HeatLayout::HourStep => hour_step(groups),
        HeatLayout::TimeRun => groups.iter().filter_map(time_run).collect(),
    }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// `cells` (keyed by row and column) as a grid of means, rows and columns
/// in the order given.
fn grid<R: Ord + Clone, C: Ord + Clone>(
    cells: &BTreeMap<(R, C), Vec<f64>>,
    rows: &[R],
    columns: &[C],
) -> Vec<Vec<Option<f64>>> {
    rows.iter()
        .map(|r| {
            columns
                .iter()
                .map(|c| cells.get(&(r.clone(), c.clone())).map(|v| mean(v)))
                .collect()
        })
        .collect()
}

fn hour(r: &sonde_model::TestResult) -> i64 {
    (secs(r) as i64).rem_euclid(86_400) / 3600
}

/// A group by hour of day and day, if its results cover two hours.
fn hour_day(g: &Group) -> Option<Figure> {
    let d = drawn(g.results.first()?);
    let mut cells: BTreeMap<(i64, i64), Vec<f64>> = BTreeMap::new();
    for r in &g.results {
        let Some(v) = g.figures(r).and_then(|f| d.value(f)) else {
            continue;
        };
        let day = (secs(r) as i64).div_euclid(86_400);
        cells.entry((hour(r), day)).or_default().push(v);
    }
    let hours: BTreeSet<i64> = cells.keys().map(|k| k.0).collect();
    if hours.len() < 2 {
        return None;
    }
    let days: Vec<i64> = cells
        .keys()
        .map(|k| k.1)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let day_name = |day: i64| {
        jiff::Timestamp::from_second(day * 86_400)
            .map(|t| t.strftime("%m-%d").to_string())
            .unwrap_or_else(|_| day.to_string())
    };
    let all_hours: Vec<i64> = (0..24).collect();
    Some(Figure {
        id: format!("heat-{}", slug(&g.name)),
        caption: format!("{}: {} by hour of day (UTC) and day", g.name, d.label),
        body: FigureBody::HeatMap(HeatMap {
            title: g.name.clone(),
            x_label: "day".into(),
            y_label: "hour of day (UTC)".into(),
            x_names: days.iter().map(|d| day_name(*d)).collect(),
            y_names: all_hours.iter().map(|h| format!("{h:02}")).collect(),
            cells: grid(&cells, &all_hours, &days),
            scale_label: format!("{} ({})", d.label, d.unit),
        }),
    })
}

/// Every group of a test kind side by side: hour of day by group.
fn hour_step(groups: &[Group]) -> Vec<Figure> {
    let mut by_test: BTreeMap<&str, Vec<&Group>> = BTreeMap::new();
    for g in groups {
        if let Some(first) = g.results.first() {
            by_test.entry(first.spec.kind().name()).or_default().push(g);
        }
    }
    by_test
        .into_iter()
        .filter_map(|(test, gs)| {
            let d = drawn(gs[0].results.first()?);
            let mut cells: BTreeMap<(i64, usize), Vec<f64>> = BTreeMap::new();
            for (k, g) in gs.iter().enumerate() {
                for r in &g.results {
                    if let Some(v) = g.figures(r).and_then(|f| d.value(f)) {
                        cells.entry((hour(r), k)).or_default().push(v);
                    }
                }
            }
            let hours: Vec<i64> = cells
                .keys()
                .map(|k| k.0)
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            if hours.len() < 2 && gs.len() < 2 {
                return None;
            }
            let columns: Vec<usize> = (0..gs.len()).collect();
            Some(Figure {
                id: format!("heat-{test}-by-step"),
                caption: format!("{test}: {} by hour of day (UTC) and group", d.label),
                body: FigureBody::HeatMap(HeatMap {
                    title: format!("{test} by hour and group"),
                    x_label: "group".into(),
                    y_label: "hour of day (UTC)".into(),
                    x_names: gs.iter().map(|g| g.name.clone()).collect(),
                    y_names: hours.iter().map(|h| format!("{h:02}")).collect(),
                    cells: grid(&cells, &hours, &columns),
                    scale_label: format!("{} ({})", d.label, d.unit),
                }),
            })
        })
        .collect()
}

/// A group's results each a column (by start, UTC), its intervals down:
/// each cell the interval's figure in the group's direction.
fn time_run(g: &Group) -> Option<Figure> {
    let first = g.results.first()?;
    let d = drawn(first);
    let direction = g.direction;
    let mut cells: BTreeMap<(i64, usize), Vec<f64>> = BTreeMap::new();
    let mut runs: Vec<&sonde_model::TestResult> = g.results.iter().collect();
    runs.sort_by(|a, b| secs(a).total_cmp(&secs(b)));
    for (k, r) in runs.iter().enumerate() {
        for i in &r.intervals {
            // The figure of this group's direction (or the only one).
            let f = i
                .sums
                .iter()
                .find(|s| match direction {
                    Some(want) => crate::report_group::direction_word(s.direction) == want,
                    None => i.sums.len() == 1,
                })
                .or(i.round_trip.as_ref());
            if let Some(v) = f.and_then(|f| d.value(f)) {
                cells
                    .entry((i.end_s.round() as i64, k))
                    .or_default()
                    .push(v);
            }
        }
    }
    let seconds: Vec<i64> = cells
        .keys()
        .map(|k| k.0)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if seconds.len() < 2 || runs.len() < 2 {
        return None;
    }
    let columns: Vec<usize> = (0..runs.len()).collect();
    Some(Figure {
        id: format!("heat-runs-{}", slug(&g.name)),
        caption: format!("{}: {} by second of the test and run", g.name, d.label),
        body: FigureBody::HeatMap(HeatMap {
            title: g.name.clone(),
            x_label: "run (start, UTC)".into(),
            y_label: "second of the test".into(),
            x_names: crate::chart::utc_names(&runs.iter().map(|r| secs(r)).collect::<Vec<_>>()),
            y_names: seconds.iter().map(|s| s.to_string()).collect(),
            cells: grid(&cells, &seconds, &columns),
            scale_label: format!("{} ({})", d.label, d.unit),
        }),
    })
}
