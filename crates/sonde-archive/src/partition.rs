//! Results by month on PostgreSQL: `results`, `intervals`,
//! `result_figures` and `result_labels` are partitioned by range of the
//! result's start (an interval's own time for `intervals`), one partition
//! a month (`results_p2026_12`, …) and a default one for what falls in no
//! month made yet (a clock years off). Retention drops whole months: a
//! `DROP TABLE` of each table's month, however many rows it holds,
//! instead of deleting them row by row.
//!
//! Months are made ahead (the last one, this one and the next [`AHEAD`]) by
//! migration 18 and by the daemon's upkeep (and `sonde results prune`), so that the default
//! partition stays empty. A month made while the default holds rows of
//! it takes them along. SQLite keeps each table whole; its retention
//! deletes the rows of the months it drops.

use crate::sql::{Sql, Value};
use crate::{ArchiveError, Store};
use jiff::civil::Date;
use jiff::tz::TimeZone;

/// The partitioned tables, each with the column it is partitioned by.
pub(crate) const TABLES: [(&str, &str); 4] = [
    ("results", "start_ns"),
    ("intervals", "at_ns"),
    ("result_figures", "start_ns"),
    ("result_labels", "start_ns"),
];

/// Months made ahead of the current one.
pub const AHEAD: i32 = 2;

/// Months before now that a migration makes partitions for, at most
/// (20 years); rows older than that go to the default partition.
const HISTORY: i32 = 240;

/// A calendar month (UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Month {
    pub year: i16,
    pub month: i8,
}

impl Month {
    /// The month `ns` (nanoseconds since the Unix epoch) falls in.
    pub fn of_ns(ns: i64) -> Self {
        let t =
            jiff::Timestamp::from_nanosecond(i128::from(ns)).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        let d = t.to_zoned(TimeZone::UTC).date();
        Self {
            year: d.year(),
            month: d.month(),
        }
    }

    /// The month now is in.
    pub fn now() -> Self {
        Self::of_ns(crate::row::ns(&sonde_model::Timestamp(
            std::time::SystemTime::now(),
        )))
    }

    /// `n` months later (earlier for a negative `n`).
    pub fn plus(self, n: i32) -> Self {
        let index = i32::from(self.year) * 12 + i32::from(self.month) - 1 + n;
        Self {
            year: index.div_euclid(12).clamp(1, 9998) as i16,
            month: (index.rem_euclid(12) + 1) as i8,
        }
    }

    /// Its first nanosecond.
    pub fn start_ns(self) -> i64 {
        Date::new(self.year, self.month, 1)
            .ok()
            .and_then(|d| d.to_zoned(TimeZone::UTC).ok())
            .map(|z| i64::try_from(z.timestamp().as_nanosecond()).unwrap_or(i64::MAX))
            .unwrap_or(0)
    }

    /// The partition of `table` for this month.
    fn table(self, table: &str) -> String {
        format!("{table}_p{:04}_{:02}", self.year, self.month)
    }

    /// Reads a partition's name back (`results_p2026_12`).
    fn of_table(table: &str, name: &str) -> Option<Self> {
        let rest = name.strip_prefix(table)?.strip_prefix("_p")?;
        let (y, m) = rest.split_once('_')?;
        let (year, month) = (y.parse().ok()?, m.parse().ok()?);
        (1..=12).contains(&month).then_some(Self { year, month })
    }
}

impl std::fmt::Display for Month {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:04}-{:02}", self.year, self.month)
    }
}

/// Migration 18 on PostgreSQL: the four tables moved into partitions,
/// in the migration's transaction. Each is renamed, made again
/// partitioned with the same columns (`result_figures` and
/// `result_labels` gain their result's start), given a partition for
/// each month its rows fall in (and the months ahead), filled, and the
/// old one dropped; keys and indexes are built last, over the filled
/// partitions. The foreign keys to `results` go: PostgreSQL cannot
/// reference a partitioned table by `id` alone (its key is `(id,
/// start_ns)`); the store writes a result and its rows in one
/// transaction, and retention drops the same months of each.
pub(crate) fn partition_pg(tx: &mut dyn Sql) -> Result<(), ArchiveError> {
    for (t, _) in TABLES {
        tx.batch(&format!("ALTER TABLE {t} RENAME TO {t}_unpartitioned"))?;
    }
    tx.batch(
        "CREATE TABLE results (LIKE results_unpartitioned INCLUDING DEFAULTS) \
             PARTITION BY RANGE (start_ns); \
         CREATE TABLE intervals (LIKE intervals_unpartitioned INCLUDING DEFAULTS) \
             PARTITION BY RANGE (at_ns); \
         CREATE TABLE result_figures (LIKE result_figures_unpartitioned INCLUDING DEFAULTS, \
             start_ns BIGINT NOT NULL) PARTITION BY RANGE (start_ns); \
         CREATE TABLE result_labels (LIKE result_labels_unpartitioned INCLUDING DEFAULTS, \
             start_ns BIGINT NOT NULL) PARTITION BY RANGE (start_ns);",
    )?;
    let months = months_wanted(tx, "unpartitioned")?;
    for (t, _) in TABLES {
        tx.batch(&format!(
            "CREATE TABLE {t}_default PARTITION OF {t} DEFAULT"
        ))?;
    }
    for m in &months {
        create_month(tx, *m)?;
    }
    tx.batch(
        "INSERT INTO results SELECT * FROM results_unpartitioned; \
         INSERT INTO intervals SELECT * FROM intervals_unpartitioned; \
         INSERT INTO result_figures (result_id, direction, metric, value, start_ns) \
             SELECT f.result_id, f.direction, f.metric, f.value, r.start_ns \
             FROM result_figures_unpartitioned f JOIN results_unpartitioned r ON r.id = f.result_id; \
         INSERT INTO result_labels (result_id, key, value, start_ns) \
             SELECT l.result_id, l.key, l.value, r.start_ns \
             FROM result_labels_unpartitioned l JOIN results_unpartitioned r ON r.id = l.result_id; \
         DROP TABLE results_unpartitioned, intervals_unpartitioned, \
             result_figures_unpartitioned, result_labels_unpartitioned CASCADE; \
         ALTER TABLE results ADD PRIMARY KEY (id, start_ns); \
         CREATE INDEX results_by_start ON results (start_ns); \
         CREATE INDEX results_by_target ON results (target, start_ns); \
         CREATE INDEX results_by_source ON results (source, start_ns); \
         CREATE INDEX results_by_campaign ON results (campaign, start_ns); \
         CREATE INDEX results_by_method ON results (method_id); \
         ALTER TABLE intervals ADD PRIMARY KEY (result_id, direction, size_bytes, start_s, at_ns); \
         CREATE INDEX intervals_by_time ON intervals (at_ns); \
         ALTER TABLE result_figures ADD PRIMARY KEY (result_id, direction, metric, start_ns); \
         ALTER TABLE result_labels ADD PRIMARY KEY (result_id, key, start_ns); \
         CREATE INDEX result_labels_by_key ON result_labels (key, value);",
    )
}

/// The months that should have partitions: the last one (a backlog
/// delivered after the month's turn), this one, the next [`AHEAD`], and
/// those of the last [`HISTORY`] that `results_{from}` or
/// `intervals_{from}` hold rows of (the tables before partitioning, or
/// the default partitions).
fn months_wanted(
    sql: &mut dyn Sql,
    from: &str,
) -> Result<std::collections::BTreeSet<Month>, ArchiveError> {
    let now = Month::now();
    let oldest = now.plus(-HISTORY);
    let mut months: std::collections::BTreeSet<Month> = (-1..=AHEAD).map(|n| now.plus(n)).collect();
    for (t, column) in [("results", "start_ns"), ("intervals", "at_ns")] {
        // One row per month with rows: its first row's time.
        let q = format!(
            "SELECT MIN({column}) FROM {t}_{from} GROUP BY \
             date_trunc('month', to_timestamp({column} / 1000000000) AT TIME ZONE 'UTC')"
        );
        for r in sql.rows(&q, &[])? {
            if let Some(ns) = r.first().and_then(Value::int) {
                let m = Month::of_ns(ns);
                if m >= oldest && m <= now.plus(AHEAD) {
                    months.insert(m);
                }
            }
        }
    }
    Ok(months)
}

/// Makes month `m`'s partition of each table, taking along the rows the
/// default partition holds of it (none, unless a result came before its
/// month was made). Each is made whole, then attached: PostgreSQL checks
/// the default partition holds no row of the new range. The default
/// partition is locked against writes first, so that no row of the
/// month can arrive between the move and the attach (an ingest waits
/// for the transaction; rows of other months are not held up).
fn create_month(tx: &mut dyn Sql, m: Month) -> Result<(), ArchiveError> {
    let (lo, hi) = (m.start_ns(), m.plus(1).start_ns());
    for (t, column) in TABLES {
        let part = m.table(t);
        tx.batch(&format!(
            "LOCK TABLE {t}_default IN SHARE ROW EXCLUSIVE MODE; \
             CREATE TABLE {part} (LIKE {t} INCLUDING DEFAULTS); \
             WITH moved AS (DELETE FROM {t}_default WHERE {column} >= {lo} AND {column} < {hi} \
                 RETURNING *) INSERT INTO {part} SELECT * FROM moved; \
             ALTER TABLE {t} ATTACH PARTITION {part} FOR VALUES FROM ({lo}) TO ({hi})"
        ))?;
    }
    Ok(())
}

/// The months that have partitions, oldest first (of `results`, whose
/// months every table shares).
fn months_made(sql: &mut dyn Sql) -> Result<Vec<Month>, ArchiveError> {
    let names = sql.texts(
        "SELECT c.relname::TEXT FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid \
         WHERE i.inhparent = 'results'::regclass",
        &[],
    )?;
    let mut months: Vec<Month> = names
        .iter()
        .filter_map(|n| Month::of_table("results", n))
        .collect();
    months.sort();
    Ok(months)
}

/// Whether `results` is partitioned here (PostgreSQL at schema 18 or
/// later).
fn partitioned(sql: &mut dyn Sql) -> Result<bool, ArchiveError> {
    Ok(sql.postgres()
        && sql
            .int(
                "SELECT COUNT(*) FROM pg_partitioned_table WHERE partrelid = 'results'::regclass",
                &[],
            )?
            .unwrap_or(0)
            > 0)
}

/// How long a month's making or dropping waits for a lock on PostgreSQL
/// (a long export holds one on the table it reads).
const LOCK_TIMEOUT: &str = "SET LOCAL lock_timeout = '5s'";

/// The results SQLite's retention deletes: those before `$1` that no
/// destination still waits for.
const SQLITE_DROPPED: &str = "SELECT id FROM results WHERE start_ns < $1 AND id NOT IN (SELECT \
                              item_id FROM outbox WHERE kind = 'result')";

/// What retention did: the months dropped, and the rows deleted beside
/// them (SQLite's rows, PostgreSQL's default partition and the tables
/// that are not partitioned).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Dropped {
    pub months: Vec<String>,
    pub rows: u64,
}

impl Store {
    /// Makes the last month's partitions, this month's and the next
    /// [`AHEAD`] months' where they are missing, and those of months the default partition holds
    /// rows of (a backlog from before the month was made), moving the
    /// rows into them (PostgreSQL; nothing on SQLite). Returns the months
    /// made.
    pub fn prepare_months(&mut self) -> Result<Vec<Month>, ArchiveError> {
        let sql = self.backend.sql();
        if !partitioned(sql)? {
            return Ok(Vec::new());
        }
        let wanted = months_wanted(sql, "default")?;
        let have = months_made(sql)?;
        if wanted.iter().all(|m| have.contains(m)) {
            return Ok(Vec::new());
        }
        let mut made = Vec::new();
        let mut detached = Vec::new();
        self.backend.transaction(&mut |tx| {
            made.clear();
            detached.clear();
            // Never a long wait behind a reader's lock (and every write
            // behind this one): the next upkeep tries again.
            tx.batch(LOCK_TIMEOUT)?;
            // Two agents on one archive: one makes the months, the
            // other then finds them.
            tx.lock_migrations()?;
            let have = months_made(tx)?;
            for m in &wanted {
                if have.contains(m) {
                    continue;
                }
                // A month detached by hand (to move it elsewhere) is
                // left as it is: its rows stay in the default partition.
                let name = Value::Text(Some(m.table("results")));
                if tx.int(
                    "SELECT COUNT(*) FROM pg_class WHERE oid = to_regclass($1::TEXT)",
                    &[name],
                )? != Some(0)
                {
                    detached.push(*m);
                    continue;
                }
                create_month(tx, *m)?;
                made.push(*m);
            }
            Ok(())
        })?;
        for m in &detached {
            tracing::warn!(archive = %self.location(), month = %m,
                "archive month {m} is not a partition of results (detached?): left as it is");
        }
        for m in &made {
            tracing::info!(archive = %self.location(), month = %m, "archive month made");
        }
        Ok(made)
    }

    /// Retention: drops every month before `keep_from` (results,
    /// intervals, figures and labels), and what refers to them (route
    /// changes, each path's latest result). On PostgreSQL each month's
    /// partitions are dropped whole, and the default partition's rows of
    /// those months deleted; on SQLite the rows are deleted.
    pub fn drop_months_before(&mut self, keep_from: Month) -> Result<Dropped, ArchiveError> {
        let cutoff = Value::Int(Some(keep_from.start_ns()));
        let mut out = Dropped::default();
        self.backend.transaction(&mut |tx| {
            out = Dropped::default();
            if partitioned(tx)? {
                tx.batch(LOCK_TIMEOUT)?;
                tx.lock_migrations()?;
                for m in months_made(tx)?.into_iter().filter(|m| *m < keep_from) {
                    let parts: Vec<String> = TABLES.iter().map(|(t, _)| m.table(t)).collect();
                    tx.batch(&format!("DROP TABLE IF EXISTS {}", parts.join(", ")))?;
                    out.months.push(m.to_string());
                }
                for (t, column) in TABLES {
                    out.rows += tx.execute(
                        &format!("DELETE FROM {t}_default WHERE {column} < $1"),
                        std::slice::from_ref(&cutoff),
                    )?;
                }
            } else {
                let months = tx.rows(
                    &format!(
                        "SELECT MIN(start_ns) FROM results WHERE id IN ({SQLITE_DROPPED}) GROUP \
                         BY start_ns / 86400000000000"
                    ),
                    std::slice::from_ref(&cutoff),
                )?;
                let mut seen: Vec<String> = months
                    .iter()
                    .filter_map(|r| r.first().and_then(Value::int))
                    .map(|ns| Month::of_ns(ns).to_string())
                    .collect();
                seen.sort();
                seen.dedup();
                out.months = seen;
                // An agent's results still queued for a destination
                // stay until they are delivered; route changes go
                // before their results (their foreign key).
                for t in [
                    "path_changes",
                    "intervals",
                    "result_figures",
                    "result_labels",
                ] {
                    out.rows += tx.execute(
                        &format!("DELETE FROM {t} WHERE result_id IN ({SQLITE_DROPPED})"),
                        std::slice::from_ref(&cutoff),
                    )?;
                }
                out.rows += tx.execute(
                    &format!("DELETE FROM results WHERE id IN ({SQLITE_DROPPED})"),
                    std::slice::from_ref(&cutoff),
                )?;
            }
            // What points at a result dropped: a route change, a path's
            // latest result.
            let gone: &[&str] = if tx.postgres() {
                &[
                    "DELETE FROM path_changes WHERE at_ns < $1",
                    "DELETE FROM result_latest WHERE latest_ns < $1",
                    "DELETE FROM path_latest WHERE start_ns < $1",
                ]
            } else {
                &[
                    "DELETE FROM result_latest WHERE latest_ns < $1 AND result_id NOT IN (SELECT \
                     id FROM results)",
                    "DELETE FROM path_latest WHERE start_ns < $1 AND result_id NOT IN (SELECT id \
                     FROM results)",
                ]
            };
            for sql in gone {
                out.rows += tx.execute(sql, std::slice::from_ref(&cutoff))?;
            }
            Ok(())
        })?;
        if !out.months.is_empty() {
            tracing::info!(archive = %self.location(), months = ?out.months, rows = out.rows,
                "archive months dropped");
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months_count_across_years_and_name_their_partitions() {
        let m = Month {
            year: 2026,
            month: 12,
        };
        assert_eq!(
            m.plus(1),
            Month {
                year: 2027,
                month: 1
            }
        );
        assert_eq!(
            m.plus(-12),
            Month {
                year: 2025,
                month: 12
            }
        );
        assert_eq!(
            m.plus(-11),
            Month {
                year: 2026,
                month: 1
            }
        );
        // 2026-12-01T00:00:00Z.
        assert_eq!(m.start_ns(), 1_796_083_200 * 1_000_000_000);
        assert_eq!(Month::of_ns(m.start_ns()), m);
        assert_eq!(Month::of_ns(m.start_ns() - 1), m.plus(-1));
        assert_eq!(m.table("results"), "results_p2026_12");
        assert_eq!(Month::of_table("results", "results_p2026_12"), Some(m));
        assert_eq!(Month::of_table("results", "results_default"), None);
        assert_eq!(Month::of_table("results", "result_figures_p2026_12"), None);
        assert_eq!(m.to_string(), "2026-12");
    }
}
