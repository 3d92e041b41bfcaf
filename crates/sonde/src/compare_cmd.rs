//! `sonde compare A B`: two selections of the archive (campaigns, paths,
//! labels such as `ipsec` and `open`) compared metric by metric, per test
//! and direction and, with `--by`, per step, payload size, offered rate or
//! family (NDR rates per frame size included): both means, the difference
//! and the ratio, the 95 % confidence interval of the difference and
//! Welch's t-test; with `--correct-for STACK`, B's throughput as it would
//! be without that stack's tunnels (seed 000 Table 2's corrected column
//! (sTESTA corrected)).

use crate::archive_args::ArchiveArgs;
use crate::compare_groups::{
    groups, observations, of, wanted, By, Group, Obs, DIRECTIONS, METRICS, TESTS,
};
use crate::failure::Failure;
use anyhow::anyhow;
use clap::{Args, ValueEnum};
use sonde_archive::{ResultFilter, Store};
use sonde_methods::compare::{compare, Comparison};
use sonde_methods::overhead::{correction_factor, Stack};
use sonde_model::Metric;
use sonde_report::table::{Cell, Column, Table};
use std::io::Write;

#[derive(Debug, Args)]
pub struct CompareArgs {
    #[command(flatten)]
    pub archive: ArchiveArgs,
    /// Selection A: KEY=VALUE[,KEY=VALUE…] with keys campaign, test,
    /// target, family, direction, or any other key as a label
    /// (`path=open`).
    pub a: String,
    /// Selection B, as A; more selections (C, D, …) are each compared
    /// with A, a row per selection.
    #[arg(required = true, value_name = "B")]
    pub b: Vec<String>,
    /// Split the rows (and the chart) by these too, beside test and
    /// direction: step (a campaign's), payload, frame (NDR), rate
    /// (offered), family.
    /// Groups are paired by value: A's 1400-byte results with B's.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub by: Vec<By>,
    /// Only these metrics (throughput, loss, pdr, jitter, rtt, burst;
    /// default all).
    #[arg(long, value_delimiter = ',')]
    pub metric: Vec<String>,
    /// Add B's throughput corrected for this stack's tunnels, and its
    /// ratio to A (`sonde overhead` names the stacks).
    #[arg(long, value_name = "STACK")]
    pub correct_for: Option<String>,
    #[arg(long, value_enum, default_value = "text")]
    pub format: TableFormat,
    /// Also draw every selection on one chart over time (a series each,
    /// and each direction where there are several; a panel per test and
    /// metric) to FILE: SVG, or PNG when FILE ends in .png.
    #[arg(long, value_name = "FILE")]
    pub chart: Option<std::path::PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TableFormat {
    Text,
    Md,
    Csv,
    Html,
    Json,
}

/// A selection written as `KEY=VALUE,…`.
pub fn selection(s: &str) -> Result<ResultFilter, String> {
    let mut f = ResultFilter {
        limit: i64::MAX,
        ..ResultFilter::default()
    };
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = part
            .split_once('=')
            .filter(|(k, v)| !k.is_empty() && !v.is_empty())
            .ok_or_else(|| format!("'{part}' in '{s}': write KEY=VALUE"))?;
        let v = v.to_string();
        match k {
            "campaign" => f.campaign = Some(v),
            "test" => f.test = Some(v),
            "target" => f.target = Some(v),
            "family" => f.family = Some(v),
            "direction" => f.direction = Some(v),
            label => {
                if f.label.is_some() {
                    return Err(format!("'{s}': one label per selection"));
                }
                f.label = Some((label.to_string(), v));
            }
        }
    }
    Ok(f)
}

/// Which of A's directions of `test` in `group` is compared with which of
/// B's: each with itself where both have it (a bidirectional test's
/// forward with the other's forward); a selection of one direction with
/// another of one direction whatever they are (A to B against B to A).
fn paired(a: &[Obs], b: &[Obs], test: &str, group: &Group) -> Vec<(&'static str, &'static str)> {
    let has = |obs: &[Obs]| -> Vec<&'static str> {
        DIRECTIONS
            .into_iter()
            .filter(|d| !of(obs, test, group, d).is_empty())
            .collect()
    };
    let (da, db) = (has(a), has(b));
    match (da.as_slice(), db.as_slice()) {
        ([x], [y]) => vec![(*x, *y)],
        _ => da
            .into_iter()
            .filter(|d| db.contains(d))
            .map(|d| (d, d))
            .collect(),
    }
}

/// One row of the comparison.
#[derive(Debug, serde::Serialize)]
pub struct Row {
    /// The selection compared with A (B, C, …).
    pub against: String,
    pub test: String,
    /// The values of the `--by` keys the row is of ("1400 B · IPv6").
    #[serde(skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// The figures' direction: `forward` and `reverse` (a bidirectional
    /// test gives a row each, never their sum), or `round_trip`.
    pub direction: String,
    pub metric: String,
    pub unit: String,
    #[serde(flatten)]
    pub comparison: Comparison,
    /// B's mean corrected for the stack, and its ratio to A's mean.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub corrected_b: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub corrected_ratio: Option<f64>,
}

/// The rows comparing `a` and `b` (observations), in the metrics' units:
/// one per test, group, direction and metric that both measured.
pub fn rows(
    a: &[Obs],
    (name, b): (&str, &[Obs]),
    metrics: &[String],
    stack: Option<&Stack>,
) -> Vec<Row> {
    let mut out = Vec::new();
    for test in TESTS {
        let gb = groups(b, test);
        for group in groups(a, test).into_iter().filter(|g| gb.contains(g)) {
            for (da, db) in paired(a, b, test, &group) {
                let (ra, rb) = (of(a, test, &group, da), of(b, test, &group, db));
                let (na, nb) = (direction_named(da, &ra), direction_named(db, &rb));
                let direction = if na == nb { na } else { format!("{na} / {nb}") };
                for m in METRICS.iter().copied().filter(|m| wanted(*m, metrics)) {
                    let info = m.info();
                    let values = |obs: &[&Obs]| -> Vec<f64> {
                        obs.iter().filter_map(|o| m.shown(&o.figures)).collect()
                    };
                    let Some(c) = compare(&values(&ra), &values(&rb)) else {
                        continue;
                    };
                    let corrected: Option<Vec<f64>> = match stack {
                        Some(stack) if m == Metric::ThroughputBps => Some(
                            rb.iter()
                                .filter_map(|o| {
                                    let v = m.shown(&o.figures)?;
                                    Some(v * correction_factor(stack, o.payload?))
                                })
                                .collect(),
                        ),
                        _ => None,
                    };
                    let corrected_b = corrected
                        .filter(|v| !v.is_empty())
                        .map(|v| v.iter().sum::<f64>() / v.len() as f64);
                    out.push(Row {
                        against: name.into(),
                        test: test.into(),
                        group: group.name(),
                        direction: direction.clone(),
                        metric: info.short.into(),
                        unit: info.unit.into(),
                        corrected_ratio: corrected_b
                            .filter(|_| c.a.mean != 0.0)
                            .map(|cb| cb / c.a.mean),
                        corrected_b,
                        comparison: c,
                    });
                }
            }
        }
    }
    out
}

/// A row's direction as stats and the report name it: by the campaign's
/// endpoints (`A to B`, `B to A (with A to B)`) when all its observations
/// ran between the same two, else `forward`, `reverse`, ….
fn direction_named(direction: &str, obs: &[&Obs]) -> String {
    let first = obs.first().map(|o| (&o.ends, o.both));
    let same = obs.iter().all(|o| Some((&o.ends, o.both)) == first);
    match first {
        Some((Some((from, to)), both)) if same => sonde_report::report_build::direction_label(
            direction,
            Some((from.as_str(), to.as_str())),
            both,
        ),
        _ => direction.to_string(),
    }
}

/// The comparison as a table.
pub fn table(a: &str, b: &[String], rows: &[Row], stack: Option<&str>) -> Table {
    let grouped = rows.iter().any(|r| !r.group.is_empty());
    let mut columns = vec![
        Column::new("B", ""),
        Column::new("test", ""),
        Column::new("group", ""),
        Column::new("direction", ""),
        Column::new("metric", ""),
        Column::new("n A", ""),
        Column::new("mean A", ""),
        Column::new("n B", ""),
        Column::new("mean B", ""),
        Column::new("B − A", ""),
        Column::new("B / A", ""),
        Column::new("95 % CI of B − A", ""),
        Column::new("p (Welch)", ""),
    ];
    if !grouped {
        columns.remove(2);
    }
    if stack.is_some() {
        columns.push(Column::new("B corrected", ""));
        columns.push(Column::new("corrected B / A", ""));
    }
    let table_rows = rows
        .iter()
        .map(|r| {
            let c = &r.comparison;
            let mut row = vec![
                Cell::text(&r.against),
                Cell::text(&r.test),
                Cell::text(&r.group),
                Cell::text(&r.direction),
                Cell::text(format!("{} ({})", r.metric, r.unit)),
                Cell::num(c.a.n as f64, 0),
                Cell::num(c.a.mean, 3),
                Cell::num(c.b.n as f64, 0),
                Cell::num(c.b.mean, 3),
                Cell::num(c.difference, 3),
                c.ratio.map_or(Cell::Empty, |v| Cell::num(v, 3)),
                c.ci95.map_or(Cell::Empty, |(lo, hi)| {
                    Cell::text(format!("{lo:.3} … {hi:.3}"))
                }),
                c.p.map_or(Cell::Empty, |p| {
                    Cell::text(format!(
                        "{}{}",
                        if p < 0.0001 {
                            "< 0.0001".to_string()
                        } else {
                            format!("{p:.4}")
                        },
                        if p < 0.05 { " *" } else { "" }
                    ))
                }),
            ];
            if !grouped {
                row.remove(2);
            }
            if stack.is_some() {
                row.push(r.corrected_b.map_or(Cell::Empty, |v| Cell::num(v, 3)));
                row.push(r.corrected_ratio.map_or(Cell::Empty, |v| Cell::num(v, 3)));
            }
            row
        })
        .collect();
    Table {
        title: format!("A: {a}  against  B: {}", b.join("  |  ")),
        columns,
        rows: table_rows,
        note: Some(format!(
            "* the means differ at the 5 % level (Welch's t-test, unequal variances).{}",
            stack.map_or(String::new(), |s| format!(
                " B corrected: B's goodput without the tunnels of {s}."
            ))
        )),
    }
}

fn select(store: &mut Store, s: &str, by: &[By]) -> Result<Vec<Obs>, Failure> {
    let filter = selection(s).map_err(|e| Failure::Usage(anyhow!(e)))?;
    let obs = observations(store, &filter, by).map_err(|e| Failure::Run(anyhow!(e)))?;
    if obs.is_empty() {
        return Err(Failure::Run(anyhow!(
            "no results in {} match '{s}'",
            store.location()
        )));
    }
    Ok(obs)
}

pub fn run(args: CompareArgs) -> Result<(), Failure> {
    for m in &args.metric {
        if !METRICS.iter().any(|d| d.info().short == m) {
            let shorts: Vec<&str> = METRICS.iter().map(|d| d.info().short).collect();
            return Err(Failure::Usage(anyhow!(
                "--metric {m}: use {}",
                shorts.join(", ")
            )));
        }
    }
    let stack: Option<Stack> = args
        .correct_for
        .as_deref()
        .map(str::parse)
        .transpose()
        .map_err(|e| Failure::Usage(anyhow!("--correct-for: {e}")))?;
    let mut store = crate::results_cmd::open(&args.archive)?;
    let a = select(&mut store, &args.a, &args.by)?;
    let mut all = Vec::new();
    let mut drawn = vec![(args.a.clone(), a.clone())];
    for name in &args.b {
        let b = select(&mut store, name, &args.by)?;
        drawn.push((name.clone(), b.clone()));
        let rows = rows(&a, (name, &b), &args.metric, stack.as_ref());
        if rows.is_empty() {
            return Err(Failure::Run(anyhow!(
                "'{}' and '{name}' have no metric measured by the same test (in the same group of --by)",
                args.a
            )));
        }
        all.extend(rows);
    }
    let rows = all;
    let t = table(&args.a, &args.b, &rows, args.correct_for.as_deref());
    let out = match args.format {
        TableFormat::Text => t.to_text(),
        TableFormat::Md => t.to_markdown(),
        TableFormat::Csv => t.to_csv(),
        TableFormat::Html => t.to_html(),
        TableFormat::Json => {
            serde_json::to_string_pretty(&serde_json::json!({
                "a": args.a, "b": args.b, "rows": rows,
            }))? + "\n"
        }
    };
    std::io::stdout().write_all(out.as_bytes())?;
    if let Some(path) = &args.chart {
        let chart = crate::compare_chart::overlay(&drawn, &args.metric, &args.by)
            .ok_or_else(|| Failure::Run(anyhow!("--chart {}: nothing to draw", path.display())))?;
        if let Some(file) = crate::method_output::ChartFile::create(Some(path))? {
            file.write(&chart)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selections_read_keys_and_one_label() {
        let f = selection("campaign=geant, test=tcp,path=open").unwrap();
        assert_eq!(f.campaign.as_deref(), Some("geant"));
        assert_eq!(f.test.as_deref(), Some("tcp"));
        assert_eq!(f.label, Some(("path".into(), "open".into())));
        assert!(selection("a=1,b=2").unwrap_err().contains("one label"));
        assert!(selection("geant").unwrap_err().contains("KEY=VALUE"));
    }
}
