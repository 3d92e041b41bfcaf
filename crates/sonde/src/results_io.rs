//! `sonde results export` and `sonde results import`: the archive's
//! results out as CSV, JSON or NDJSON; result files in (sonde's JSON of
//! any version, method results, iperf3's `-J`), each kept once by id.

use crate::failure::Failure;
use crate::results_filter::FilterArgs;
use anyhow::anyhow;
use clap::{Args, ValueEnum};
use sonde_archive::{ExportRows, Placement, Store};
use sonde_model::MethodResult;
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    Csv,
    Json,
    Ndjson,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Per {
    Result,
    Interval,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub filter: FilterArgs,
    #[arg(long, value_enum, default_value = "csv")]
    pub format: ExportFormat,
    /// CSV rows: one per result, or one per interval and direction.
    #[arg(long, value_enum, default_value = "result")]
    pub per: Per,
    /// Write to FILE instead of standard output.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Result files: sonde JSON (a document, an array, or one per line),
    /// or iperf3 -J output.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// A label to keep every imported result with, KEY=VALUE
    /// (repeatable), as tests take it: "open" and "ipsec 3des" runs told
    /// apart once imported.
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = crate::archive_args::label)]
    pub labels: Vec<(String, String)>,
}

fn run_err(e: impl std::fmt::Display) -> Failure {
    Failure::Run(anyhow!("{e}"))
}

pub fn export(store: &mut Store, a: &ExportArgs) -> Result<(), Failure> {
    let mut out: Box<dyn Write> = match &a.output {
        Some(p) => Box::new(std::io::BufWriter::new(std::fs::File::create(p).map_err(
            |e| Failure::Usage(anyhow!("cannot write {}: {e}", p.display())),
        )?)),
        None => Box::new(std::io::BufWriter::new(std::io::stdout())),
    };
    let filter = a.filter.filter(i64::MAX);
    match a.format {
        ExportFormat::Csv => {
            let what = match a.per {
                Per::Result => ExportRows::Results,
                Per::Interval => ExportRows::Intervals,
            };
            let (columns, rows) = store.export_rows(&filter, what).map_err(run_err)?;
            sonde_archive::write_csv(&columns, &rows, &mut out, sonde_campaign::rfc3339)
                .map_err(run_err)?;
        }
        ExportFormat::Json | ExportFormat::Ndjson => {
            let mut results = store.list_results(&filter).map_err(run_err)?;
            results.reverse();
            if a.format == ExportFormat::Json {
                serde_json::to_writer_pretty(&mut out, &results)?;
                writeln!(out)?;
            } else {
                for r in &results {
                    serde_json::to_writer(&mut out, r)?;
                    writeln!(out)?;
                }
            }
        }
    }
    out.flush()?;
    Ok(())
}

/// The documents in a file's text: one JSON value, an array of them, or
/// one per line (NDJSON).
fn documents(text: &str) -> Result<Vec<serde_json::Value>, String> {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Array(items)) => Ok(items),
        Ok(v) => Ok(vec![v]),
        Err(whole) => text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(n, l)| {
                serde_json::from_str(l).map_err(|e| {
                    if n == 0 {
                        format!("not JSON: {whole}")
                    } else {
                        format!("line {}: not JSON: {e}", n + 1)
                    }
                })
            })
            .collect(),
    }
}

/// Keeps one document; whether it was new.
fn import_one(store: &mut Store, doc: serde_json::Value, at: &Placement) -> Result<bool, String> {
    let kept = |e: sonde_archive::ArchiveError| e.to_string();
    if sonde_model::is_iperf3(&doc) {
        let r = sonde_model::from_iperf3(&doc).map_err(|e| e.to_string())?;
        return store.put_result(&r, at).map_err(kept);
    }
    if doc.get("method").is_some() && doc.get("trials").is_some() {
        let m: MethodResult =
            serde_json::from_value(doc).map_err(|e| format!("a method result: {e}"))?;
        return store.put_method(&m, at).map_err(kept);
    }
    let r = sonde_model::load_value(doc).map_err(|e| e.to_string())?;
    store.put_result(&r, at).map_err(kept)
}

pub fn import(store: &mut Store, a: &ImportArgs) -> Result<(), Failure> {
    let at = Placement {
        labels: a.labels.iter().cloned().collect(),
        ..Placement::default()
    };
    let mut failed = 0;
    for path in &a.files {
        let name = path.display();
        let docs = match std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|t| documents(&t))
        {
            Ok(d) => d,
            Err(e) => {
                eprintln!("sonde: {name}: {e}");
                failed += 1;
                continue;
            }
        };
        let (mut new, mut old) = (0, 0);
        for (i, doc) in docs.into_iter().enumerate() {
            match import_one(store, doc, &at) {
                Ok(true) => new += 1,
                Ok(false) => old += 1,
                Err(e) => {
                    eprintln!("sonde: {name}: document {}: {e}", i + 1);
                    failed += 1;
                }
            }
        }
        println!("{name}: {new} imported, {old} already kept");
    }
    if failed > 0 {
        return Err(Failure::Run(anyhow!(
            "{failed} document(s) not imported (the others were)"
        )));
    }
    Ok(())
}
