//! `[archive]`: the archive's upkeep, in a thread of the daemon. At
//! start and every `upkeep_every` after: the next months' partitions are
//! made ahead on PostgreSQL (and months a backlog left in the default
//! partition), and, when `keep_months` is set, every month older than
//! the last `keep_months` is dropped whole (docs/archive.md, "Results by
//! month").

use serde::Deserialize;
use sonde_archive::{Month, Store};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `[archive]` of the serve file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ArchiveConfig {
    /// Months kept whole: this one and the `keep_months − 1` before it;
    /// older months are dropped. 0: every result is kept.
    pub keep_months: u32,
    /// How often the upkeep runs.
    #[serde(with = "sonde_model::serde_secs")]
    pub upkeep_every: Duration,
}

impl Default for ArchiveConfig {
    fn default() -> Self {
        Self {
            keep_months: 0,
            upkeep_every: Duration::from_secs(3600),
        }
    }
}

impl ArchiveConfig {
    /// Checks the section: `(key, reason)` of what is wrong.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if self.keep_months > 1200 {
            return Err((
                "archive.keep_months",
                format!(
                    "{} months is over a century: at most 1200",
                    self.keep_months
                ),
            ));
        }
        if self.upkeep_every < Duration::from_secs(1) {
            return Err(("archive.upkeep_every", "at least 1 s".into()));
        }
        Ok(())
    }
}

/// One round: months made, then retention if it is set.
fn upkeep(store: &mut Store, config: &ArchiveConfig) -> Result<(), sonde_archive::ArchiveError> {
    store.prepare_months()?;
    if config.keep_months > 0 {
        let keep_from = Month::now().plus(1 - config.keep_months as i32);
        let started = Instant::now();
        let dropped = store.drop_months_before(keep_from)?;
        if !dropped.months.is_empty() || dropped.rows > 0 {
            tracing::info!(name: "archive_retention", months = ?dropped.months, rows = dropped.rows,
                keep_from = %keep_from, ms = started.elapsed().as_millis() as u64,
                "archive retention dropped what is older than {keep_from}");
        }
    }
    Ok(())
}

/// Starts the upkeep of `archive`; it stops with `stop`.
pub fn spawn(
    archive: String,
    config: ArchiveConfig,
    stop: Arc<AtomicBool>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("sonde-archive-upkeep".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                // Opened each round: an hour apart, a connection is not
                // worth keeping.
                match Store::open(&archive) {
                    Ok(mut s) => {
                        if let Err(e) = upkeep(&mut s, &config) {
                            tracing::warn!("archive upkeep: {e}");
                        }
                    }
                    Err(e) => tracing::warn!("archive upkeep: {e}"),
                }
                sonde_model::clock::sleep_until_or(Instant::now() + config.upkeep_every, &stop);
            }
        })
}
