//! `sonde results prune`: retention by hand, what `sonde serve` does
//! every hour when `[archive] keep_months` is set (docs/archive.md,
//! "Results by month"): every month older than the last N is dropped
//! whole, with what refers to its results.

use crate::failure::Failure;
use anyhow::anyhow;
use clap::Args;
use sonde_archive::{Month, Store};
use std::io::Write;
use std::time::Instant;

#[derive(Debug, Args)]
pub struct PruneArgs {
    /// Keep this month and the N − 1 before it whole; drop every month
    /// older (at least 1).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1200))]
    pub keep_months: u32,
    /// One JSON document: the months dropped, the rows deleted beside
    /// them and the time it took.
    #[arg(short = 'J', long)]
    pub json: bool,
}

pub fn run(store: &mut Store, args: &PruneArgs) -> Result<(), Failure> {
    let keep_from = Month::now().plus(1 - args.keep_months as i32);
    let started = Instant::now();
    // Months a backlog left in the default partition are made first, so
    // that what is dropped is dropped whole.
    store
        .prepare_months()
        .and_then(|_| store.drop_months_before(keep_from))
        .map(|dropped| (dropped, started.elapsed()))
        .map_err(|e| Failure::Run(anyhow!(e)))
        .and_then(|(dropped, took)| {
            let mut out = std::io::stdout();
            if args.json {
                let doc = serde_json::json!({
                    "keep_from": keep_from.to_string(),
                    "months": dropped.months,
                    "rows": dropped.rows,
                    "seconds": took.as_secs_f64(),
                });
                writeln!(out, "{doc}")?;
            } else if dropped.months.is_empty() && dropped.rows == 0 {
                writeln!(out, "nothing before {keep_from} in {}", store.location())?;
            } else {
                writeln!(
                    out,
                    "dropped {} from {} ({} rows beside them) in {:.3} s; kept from {keep_from}",
                    if dropped.months.is_empty() {
                        "no whole month".to_string()
                    } else {
                        dropped.months.join(", ")
                    },
                    store.location(),
                    dropped.rows,
                    took.as_secs_f64()
                )?;
            }
            Ok(())
        })
}
