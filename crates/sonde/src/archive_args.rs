//! `--archive[=PATH|URL]`: keep a test's result in the archive (SQLite by
//! default, in `$XDG_DATA_HOME/sonde/sonde.db`; a `postgres://` URL for a
//! central one). See docs/archive.md.

use crate::cli::Failure;
use anyhow::anyhow;
use clap::Args;
use sonde_archive::{Placement, Store};
use sonde_model::TestResult;

#[derive(Debug, Clone, Default, Args)]
pub struct ArchiveArgs {
    /// Keep the result in the archive: the default SQLite file
    /// ($XDG_DATA_HOME/sonde/sonde.db) or =PATH, or =postgres://… for a
    /// central one.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "", value_name = "PATH|URL")]
    pub archive: Option<String>,
}

impl ArchiveArgs {
    /// The archive asked for, resolved (`--archive` alone: the default file).
    pub fn location(&self) -> Option<String> {
        self.archive.as_deref().map(resolve)
    }
}

/// A location as given, or the default file for an empty one.
pub fn resolve(given: &str) -> String {
    if given.is_empty() {
        sonde_archive::default_path(false).display().to_string()
    } else {
        given.to_string()
    }
}

/// Keeps `result` in the archive at `location`. A result that cannot be
/// kept is a failure (exit 1) naming the archive; the result was printed.
pub fn keep(location: &str, result: &TestResult) -> Result<(), Failure> {
    Store::open(location)
        .and_then(|mut s| s.put_result(result, &Placement::default()))
        .map(drop)
        .map_err(|e| Failure::Run(anyhow!("result {} not kept: {e}", result.id)))
}
