//! `sonde results changes`: the route changes the archive found, each a
//! trace that took another route than the trace before it on its path
//! (docs/trace.md, "Path changes").

use crate::failure::Failure;
use anyhow::anyhow;
use clap::Args;
use sonde_archive::{PathChangeRow, Store};
use std::io::Write;
use std::net::IpAddr;

#[derive(Debug, Args)]
pub struct ChangesArgs {
    /// Only changes of the path toward this address.
    #[arg(long, value_name = "ADDRESS")]
    pub target: Option<IpAddr>,
    /// At most this many, newest first.
    #[arg(long, default_value_t = 50)]
    pub limit: i64,
    /// One JSON document: an array of the changes.
    #[arg(short = 'J', long)]
    pub json: bool,
}

/// A route as a line: each hop's address, `*` where none answered.
fn route(hops: &[Option<IpAddr>]) -> String {
    hops.iter()
        .map(|h| h.map_or_else(|| "*".to_string(), |a| a.to_string()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A change in three lines: when, which path and hop, and both routes.
fn text(c: &PathChangeRow) -> String {
    let at = sonde_model::clock::rfc3339(c.at_ns);
    format!(
        "{at} {} -> {}: the route changed at hop {} (trace {}, before: {})\n  before: {}\n  after:  {}\n",
        c.source_addr.as_deref().unwrap_or("?"),
        c.target_addr,
        c.at_hop,
        c.result_id,
        c.previous_id,
        route(&c.before),
        route(&c.after)
    )
}

pub fn run(store: &mut Store, a: &ChangesArgs) -> Result<(), Failure> {
    let target = a.target.map(|t| t.to_string());
    let changes = store
        .path_changes(target.as_deref(), a.limit)
        .map_err(|e| Failure::Run(anyhow!(e)))?;
    let mut out = std::io::stdout();
    if a.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&changes)?)?;
        return Ok(());
    }
    for c in &changes {
        write!(out, "{}", text(c))?;
    }
    if changes.is_empty() {
        eprintln!("sonde: no route changes in {}", store.location());
    }
    Ok(())
}
