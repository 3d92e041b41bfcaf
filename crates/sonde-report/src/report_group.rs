//! What a report is made of: groups of results that belong together (a
//! campaign's step; a test's direction), how their directions are named,
//! and the metric each test is drawn by. Every part of a report (its
//! tables, charts, heat maps, HTTP and path sections) reads these.

use sonde_model::{Figures, Metric, TestResult};
use std::time::UNIX_EPOCH;

/// Results that belong together (a campaign's step; a test's direction),
/// and the direction of their figures it shows.
#[derive(Debug, Clone)]
pub struct Group {
    pub name: String,
    pub results: Vec<TestResult>,
    /// `forward`, `reverse`…: the figures of this direction; `None`: each
    /// result's only one.
    pub direction: Option<&'static str>,
}

impl Group {
    /// The group `name` of `results`, or one per direction (`name ·
    /// forward`, `name · reverse`, or with the endpoints' names `name · A
    /// to B (with B to A)`) when they measured more than one: a
    /// bidirectional test's directions are never added up or pooled.
    /// `ends`: the campaign endpoints the group's results ran between
    /// (their `from` and `to` labels), which name the directions.
    pub fn per_direction(
        name: &str,
        results: Vec<TestResult>,
        ends: Option<(&str, &str)>,
    ) -> Vec<Group> {
        let mut directions: Vec<&'static str> = Vec::new();
        for r in &results {
            for (d, _) in r.summary.by_direction() {
                if !directions.contains(&d) {
                    directions.push(d);
                }
            }
        }
        if directions.len() < 2 {
            return vec![Group {
                name: name.to_string(),
                results,
                direction: None,
            }];
        }
        directions.sort_by_key(|d| {
            ["forward", "reverse", "round_trip", "total"]
                .iter()
                .position(|x| x == d)
        });
        let both = results
            .iter()
            .any(|r| r.summary.forward.is_some() && r.summary.reverse.is_some());
        directions
            .into_iter()
            .map(|d| Group {
                name: format!("{name} · {}", direction_label(d, ends, both)),
                results: results
                    .iter()
                    .filter(|r| r.summary.by_direction().iter().any(|(x, _)| *x == d))
                    .cloned()
                    .collect(),
                direction: Some(d),
            })
            .collect()
    }

    /// `r`'s figures as this group shows them.
    pub(crate) fn figures<'a>(&self, r: &'a TestResult) -> Option<&'a Figures> {
        let mut all = r.summary.by_direction().into_iter();
        match self.direction {
            Some(d) => all.find(|(x, _)| *x == d).map(|(_, f)| f),
            None => {
                let first = all.next()?;
                // Two directions in a group of none: not a figure.
                all.next().is_none().then_some(first.1)
            }
        }
    }
}

/// A figure's direction as tables and legends name it: `forward` and
/// `reverse`, or, where the result ran between a campaign's endpoints
/// (`ends`: its `from` and `to` labels), `A to B` and `B to A`, with `(with
/// B to A)` when both ran at once (`both`: a bidirectional test; 000 Table
/// 2's "A to B (and B to A)"). Other directions are named as they are.
pub fn direction_label(direction: &str, ends: Option<(&str, &str)>, both: bool) -> String {
    let Some((from, to)) = ends else {
        return direction.to_string();
    };
    let (there, back) = (format!("{from} to {to}"), format!("{to} to {from}"));
    match (direction, both) {
        ("forward", false) => there,
        ("reverse", false) => back,
        ("forward", true) => format!("{there} (with {back})"),
        ("reverse", true) => format!("{back} (with {there})"),
        (d, _) => d.to_string(),
    }
}

/// A figure's direction as the groups name it.
pub(crate) fn direction_word(d: Option<sonde_model::Direction>) -> &'static str {
    match d {
        Some(sonde_model::Direction::Forward) => "forward",
        Some(sonde_model::Direction::Reverse) => "reverse",
        Some(sonde_model::Direction::Bidir) => "total",
        None => "round_trip",
    }
}

/// Seconds since the epoch of a result's start.
pub(crate) fn secs(r: &TestResult) -> f64 {
    r.start
        .0
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The metric a group is drawn by: TCP's goodput, UDP's PDR, ping's RTT
/// (its unit, scale and value from the metric registry), and what the
/// report calls it.
pub(crate) struct Drawn {
    pub(crate) label: &'static str,
    pub(crate) unit: &'static str,
    pub(crate) metric: Metric,
}

impl Drawn {
    /// Its value in `f`, in its unit.
    pub(crate) fn value(&self, f: &Figures) -> Option<f64> {
        self.metric.shown(f)
    }
}

pub(crate) fn drawn(r: &TestResult) -> Drawn {
    let (label, metric) = match r.spec.kind().name() {
        "tcp" => ("goodput", Metric::ThroughputBps),
        "udp" => ("PDR", Metric::PdrPct),
        _ => ("RTT", Metric::RttP50Ms),
    };
    Drawn {
        label,
        unit: metric.unit(),
        metric,
    }
}

/// A file-safe id from a name.
pub fn slug(s: &str) -> String {
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
