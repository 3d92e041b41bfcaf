//! `sonde results`: what the archive keeps: `list` (filtered, newest
//! first), `show ID` (the text a live run printed, or its JSON), `export`
//! and `import` (results_io.rs), `stats` (results_stats.rs), `prune`
//! (results_prune.rs).

use crate::archive_args::ArchiveArgs;
use crate::failure::Failure;
use crate::results_filter::FilterArgs;
use anyhow::anyhow;
use clap::{Args, Subcommand};
use sonde_archive::Store;
use sonde_model::{ResultId, TestResult};
use std::io::Write;

#[derive(Debug, Args)]
pub struct ResultsArgs {
    #[command(flatten)]
    pub archive: ArchiveArgs,
    #[command(subcommand)]
    pub command: ResultsCommand,
}

#[derive(Debug, Subcommand)]
pub enum ResultsCommand {
    /// Results kept, newest first.
    List(ListArgs),
    /// One result as a live run printed it (or `-J`: its document).
    Show {
        id: String,
        #[arg(short = 'J', long)]
        json: bool,
        /// Also draw it over time, second by second (a panel per figure,
        /// a line per direction and stream), to FILE: SVG, or PNG when
        /// FILE ends in .png.
        #[arg(long, value_name = "FILE")]
        chart: Option<std::path::PathBuf>,
    },
    /// Results as CSV (one row per result or per interval, columns named
    /// with their units), a JSON array or NDJSON.
    Export(crate::results_io::ExportArgs),
    /// Result files into the archive: sonde JSON of any version (one
    /// document, an array, or NDJSON), method results, iperf3 -J output.
    Import(crate::results_io::ImportArgs),
    /// Mean, standard deviation and percentiles of a metric, grouped.
    Stats(crate::results_stats::StatsArgs),
    /// Route changes: traces that took another route than the trace
    /// before them on their path, newest first.
    Changes(crate::results_changes::ChangesArgs),
    /// Retention: drops every month older than the last N, whole (a
    /// partition of each table on PostgreSQL).
    Prune(crate::results_prune::PruneArgs),
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub filter: FilterArgs,
    /// At most this many.
    #[arg(long, default_value_t = 50)]
    pub limit: i64,
    /// One JSON document: the results' documents, newest first.
    #[arg(short = 'J', long)]
    pub json: bool,
}

pub fn open(args: &ArchiveArgs) -> Result<Store, Failure> {
    args.open()
}

/// `r` over time into `path` (SVG, or PNG by its extension).
fn draw_over_time(r: &TestResult, path: &std::path::Path) -> Result<(), Failure> {
    let chart = sonde_report::result_chart::result_chart(r).ok_or_else(|| {
        Failure::Run(anyhow!(
            "--chart {}: result {} kept no intervals to draw over time",
            path.display(),
            r.id
        ))
    })?;
    match crate::method_output::ChartFile::create(Some(path))? {
        Some(file) => file.write(&chart),
        None => Ok(()),
    }
}

/// One line of `list`.
fn line(r: &TestResult) -> String {
    let start = serde_json::to_value(r.start)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let target = r.spec.host();
    format!(
        "{start:<27} {} {:<4} {:<24} {}{}",
        r.id,
        r.spec.kind().name(),
        target,
        r.brief(),
        if r.interrupted { " (interrupted)" } else { "" }
    )
}

pub fn run(args: ResultsArgs) -> Result<(), Failure> {
    let mut store = open(&args.archive)?;
    let mut out = std::io::stdout();
    match args.command {
        ResultsCommand::List(l) => {
            let filter = l.filter.filter(l.limit);
            let results = store
                .list_results(&filter)
                .map_err(|e| Failure::Run(anyhow!(e)))?;
            if l.json {
                writeln!(out, "{}", serde_json::to_string_pretty(&results)?)?;
            } else {
                for r in &results {
                    writeln!(out, "{}", line(r))?;
                }
                if results.is_empty() {
                    eprintln!("sonde: no results in {} match", store.location());
                }
            }
        }
        ResultsCommand::Show { id, json, chart } => {
            let rid: ResultId = id
                .parse()
                .map_err(|_| Failure::Usage(anyhow!("'{id}' is not a result id (a UUID)")))?;
            let r = store
                .get_result(rid)
                .map_err(|e| Failure::Run(anyhow!(e)))?
                .ok_or_else(|| Failure::Run(anyhow!("no result {id} in {}", store.location())))?;
            if json {
                writeln!(
                    out,
                    "{}",
                    sonde_report::result_json(&r, sonde_report::JsonLayout::Sonde)?
                )?;
            } else {
                // What the result is, then its summary as the test printed
                // it at its end (a ping's opens with a blank line there).
                let start = serde_json::to_value(r.start)?;
                writeln!(
                    out,
                    "{} {} to {}, started {}, {:.1} s{}",
                    r.spec.kind().name(),
                    r.id,
                    r.spec.host(),
                    start.as_str().unwrap_or(""),
                    r.duration_s,
                    if r.interrupted { ", interrupted" } else { "" }
                )?;
                // A trace's hops were its live lines: shown again here.
                let body = if r.trace.is_some() {
                    sonde_report::trace_text::trace_text(&r)
                } else {
                    sonde_report::summary(&r)
                };
                write!(out, "{}", body.trim_start_matches('\n'))?;
            }
            if let Some(path) = chart {
                draw_over_time(&r, &path)?;
            }
        }
        ResultsCommand::Export(a) => crate::results_io::export(&mut store, &a)?,
        ResultsCommand::Changes(a) => crate::results_changes::run(&mut store, &a)?,
        ResultsCommand::Import(a) => crate::results_io::import(&mut store, &a)?,
        ResultsCommand::Stats(a) => crate::results_stats::stats(&mut store, &a)?,
        ResultsCommand::Prune(a) => crate::results_prune::run(&mut store, &a)?,
    }
    Ok(())
}
