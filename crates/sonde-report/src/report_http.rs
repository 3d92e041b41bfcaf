//! `sonde http` results in a report: a table of each result's phases
//! (ab's connect, processing, waiting and total, the median of each) and,
//! for a ramp, its knee chart with each phase against load (000 Figs
//! 47–50).

use crate::http_chart::PHASES;
use crate::report::{Figure, FigureBody};
use crate::report_group::Group;
use crate::table::{Cell, Column, Table};
use sonde_model::TestResult;

fn http_results(groups: &[Group]) -> Vec<(&str, &TestResult)> {
    groups
        .iter()
        .flat_map(|g| g.results.iter().map(move |r| (g.name.as_str(), r)))
        .filter(|(_, r)| r.http.is_some())
        .collect()
}

/// The phases table and each ramp's chart of the HTTP results among
/// `groups`; nothing when there are none.
pub fn http_parts(groups: &[Group]) -> (Option<Table>, Vec<Figure>) {
    let results = http_results(groups);
    if results.is_empty() {
        return (None, Vec::new());
    }
    let mut columns = vec![
        Column::new("group", ""),
        Column::new("result", ""),
        Column::new("requests", ""),
        Column::new("answered", "req/s"),
    ];
    columns.extend(
        PHASES
            .iter()
            .map(|(name, _)| Column::new(&format!("{name} median"), "ms")),
    );
    let rows =
        results
            .iter()
            .filter_map(|(group, r)| {
                let h = r.http.as_ref()?;
                let mut row = vec![
                    Cell::text(*group),
                    Cell::text(r.id.to_string().get(..8).unwrap_or("")),
                    Cell::num(h.requests as f64, 0),
                    Cell::num(h.requests_per_s, 1),
                ];
                row.extend(PHASES.iter().map(|(_, of)| {
                    of(&h.phases_ms).map_or(Cell::Empty, |p| Cell::num(p.median, 3))
                }));
                Some(row)
            })
            .collect();
    let table = Table {
        title: "HTTP: each phase of the requests (median)".into(),
        columns,
        rows,
        note: Some(
            "Phases as ab names them (docs/http.md): connect, TLS, processing (connection \
             ready to the last byte), waiting (to the first byte), transfer (first byte to \
             last), total."
                .into(),
        ),
    };
    let figures = results
        .iter()
        .filter_map(|(group, r)| {
            let chart = crate::http_chart::http_ramp_chart(r)?;
            let id = r.id.to_string();
            Some(Figure {
                id: format!("http-{}", id.get(..8).unwrap_or("")),
                caption: format!(
                    "{group}: throughput, latency and each phase against load, the knee marked"
                ),
                body: FigureBody::Chart(chart),
            })
        })
        .collect();
    (Some(table), figures)
}
