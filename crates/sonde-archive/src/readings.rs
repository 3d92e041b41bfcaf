//! The archive's readings (schema migration 7, docs/readings.md).
//!
//! - `reading_series`: each probe's metric, its unit (one unit per
//!   metric: a reading in another unit is refused), its first and last
//!   reading's time;
//! - `readings`: every raw reading, keyed by probe, metric and time, so a
//!   reading sent twice (a retry, a broker's redelivery) changes nothing:
//!   the first one kept stays;
//! - `readings_15min` and `readings_day`: the [`Summary`] of each
//!   15-minute bucket and each UTC day, recomputed for every bucket and
//!   day a write touches, in the write's transaction: a reading that
//!   arrives late corrects them at once.

use crate::sql::{Sql, Value};
use crate::{ArchiveError, Store};
use serde::Serialize;
use sonde_readings::aggregate::{bucket_start, day_start, series, Interval, Point};
use sonde_readings::{Reading, Sample, Summary, BUCKET_NS, DAY_NS};
use std::collections::{BTreeMap, BTreeSet};

/// What a write of readings did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum ReadingsWrite {
    /// Kept: `new` readings, and `duplicate` already kept (same probe,
    /// metric and time), which changed nothing.
    Kept { new: usize, duplicate: usize },
    /// Nothing kept: the reading at `index` has another unit than its
    /// metric's.
    UnitConflict { index: usize, message: String },
}

/// A probe's metric as the archive knows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReadingSeries {
    pub probe: String,
    pub metric: String,
    pub unit: String,
    pub first_ns: i64,
    pub last_ns: i64,
}

/// A probe's metric over a day, month or year: a point per bucket, day or
/// month.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadingsQuery {
    pub series: ReadingSeries,
    pub points: Vec<Point>,
}

/// Readings per multi-row insert: 6 parameters each, well under both
/// backends' limits.
const ROWS_PER_INSERT: usize = 400;

fn text(v: &str) -> Value {
    Value::Text(Some(v.to_string()))
}

fn int(v: i64) -> Value {
    Value::Int(Some(v))
}

const SUMMARY_COLUMNS: &str = "start_ns, count, mean, min, min_at_ns, max, max_at_ns, with_at_max";

fn summary_of(row: &[Value]) -> Option<Summary> {
    let int = |i: usize| row.get(i).and_then(Value::int);
    let real = |i: usize| row.get(i).and_then(Value::real);
    Some(Summary {
        start_ns: int(0)?,
        count: int(1)?,
        mean: real(2)?,
        min: real(3)?,
        min_at_ns: int(4)?,
        max: real(5)?,
        max_at_ns: int(6)?,
        with_at_max: real(7),
    })
}

fn put_summary(
    tx: &mut dyn Sql,
    table: &str,
    probe: &str,
    metric: &str,
    s: &Summary,
) -> Result<(), ArchiveError> {
    tx.execute(
        &format!(
            "INSERT INTO {table} (probe, metric, {SUMMARY_COLUMNS}) VALUES ($1, $2, $3, $4, $5, \
             $6, $7, $8, $9, $10) ON CONFLICT (probe, metric, start_ns) DO UPDATE SET \
             count = excluded.count, mean = excluded.mean, min = excluded.min, \
             min_at_ns = excluded.min_at_ns, max = excluded.max, max_at_ns = excluded.max_at_ns, \
             with_at_max = excluded.with_at_max"
        ),
        &[
            text(probe),
            text(metric),
            int(s.start_ns),
            int(s.count),
            Value::Real(Some(s.mean)),
            Value::Real(Some(s.min)),
            int(s.min_at_ns),
            Value::Real(Some(s.max)),
            int(s.max_at_ns),
            Value::Real(s.with_at_max),
        ],
    )?;
    Ok(())
}

/// The summaries of `table` for `probe`'s `metric` starting in
/// [`from_ns`, `to_ns`).
fn summaries(
    sql: &mut dyn Sql,
    table: &str,
    probe: &str,
    metric: &str,
    from_ns: i64,
    to_ns: i64,
) -> Result<Vec<Summary>, ArchiveError> {
    Ok(sql
        .rows(
            &format!(
                "SELECT {SUMMARY_COLUMNS} FROM {table} WHERE probe = $1 AND metric = $2 \
                 AND start_ns >= $3 AND start_ns < $4 ORDER BY start_ns"
            ),
            &[text(probe), text(metric), int(from_ns), int(to_ns)],
        )?
        .iter()
        .filter_map(|r| summary_of(r))
        .collect())
}

/// Recomputes the bucket starting at `start` from its raw readings.
fn recompute_bucket(
    tx: &mut dyn Sql,
    probe: &str,
    metric: &str,
    start: i64,
) -> Result<(), ArchiveError> {
    let samples: Vec<Sample> = tx
        .rows(
            "SELECT at_ns, value, with_value FROM readings WHERE probe = $1 AND metric = $2 \
             AND at_ns >= $3 AND at_ns < $4",
            &[
                text(probe),
                text(metric),
                int(start),
                int(start + BUCKET_NS),
            ],
        )?
        .iter()
        .filter_map(|r| {
            Some(Sample {
                at_ns: r.first()?.int()?,
                value: r.get(1)?.real()?,
                with: r.get(2).and_then(Value::real),
            })
        })
        .collect();
    if let Some(s) = Summary::of_samples(start, &samples) {
        put_summary(tx, "readings_15min", probe, metric, &s)?;
    }
    Ok(())
}

/// Recomputes the day starting at `start` from its buckets.
fn recompute_day(
    tx: &mut dyn Sql,
    probe: &str,
    metric: &str,
    start: i64,
) -> Result<(), ArchiveError> {
    let buckets = summaries(tx, "readings_15min", probe, metric, start, start + DAY_NS)?;
    if let Some(s) = Summary::combine(start, &buckets) {
        put_summary(tx, "readings_day", probe, metric, &s)?;
    }
    Ok(())
}

/// Writes `readings` in the transaction `tx` (see [`Store::put_readings`]).
fn put_in(
    tx: &mut dyn Sql,
    readings: &[Reading],
    received_ns: i64,
) -> Result<ReadingsWrite, ArchiveError> {
    // Each metric's unit, first and last time in this batch; a unit that
    // differs within the batch or from the archive's refuses the batch.
    let mut metrics: BTreeMap<(&str, &str), (&str, i64, i64)> = BTreeMap::new();
    for (index, r) in readings.iter().enumerate() {
        let e = metrics
            .entry((&r.probe, &r.metric))
            .or_insert((&r.unit, r.at_ns, r.at_ns));
        if e.0 != r.unit {
            return Ok(unit_conflict(index, r, e.0));
        }
        e.1 = e.1.min(r.at_ns);
        e.2 = e.2.max(r.at_ns);
    }
    for (&(probe, metric), &(unit, first, last)) in &metrics {
        // The series row is made if new and locked before its unit is
        // read: on PostgreSQL two writers of a new metric in two units
        // would otherwise both find no row, and the second's readings be
        // kept under the first's unit. (A no-op UPDATE takes the row's
        // lock in both backends; SQLite's write transactions already
        // exclude each other.)
        tx.execute(
            "INSERT INTO reading_series (probe, metric, unit, first_ns, last_ns) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (probe, metric) DO NOTHING",
            &[text(probe), text(metric), text(unit), int(first), int(last)],
        )?;
        tx.execute(
            "UPDATE reading_series SET unit = unit WHERE probe = $1 AND metric = $2",
            &[text(probe), text(metric)],
        )?;
        let known = tx.texts(
            "SELECT unit FROM reading_series WHERE probe = $1 AND metric = $2",
            &[text(probe), text(metric)],
        )?;
        if let Some(k) = known.first().filter(|k| k.as_str() != unit) {
            let index = readings
                .iter()
                .position(|r| r.probe == probe && r.metric == metric)
                .unwrap_or(0);
            return Ok(unit_conflict(index, &readings[index], k));
        }
    }
    // The series' row is written first, in a fixed order: on PostgreSQL
    // its row lock makes a concurrent write to the same metric wait until
    // this one commits, so each recomputation below sees every reading
    // committed before it (SQLite's write transactions already exclude
    // each other).
    for (&(probe, metric), &(unit, first, last)) in &metrics {
        tx.execute(
            "INSERT INTO reading_series (probe, metric, unit, first_ns, last_ns) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (probe, metric) DO UPDATE SET \
             first_ns = CASE WHEN excluded.first_ns < reading_series.first_ns \
             THEN excluded.first_ns ELSE reading_series.first_ns END, \
             last_ns = CASE WHEN excluded.last_ns > reading_series.last_ns \
             THEN excluded.last_ns ELSE reading_series.last_ns END",
            &[text(probe), text(metric), text(unit), int(first), int(last)],
        )?;
    }
    let mut new = 0usize;
    for chunk in readings.chunks(ROWS_PER_INSERT) {
        let mut sql = String::from(
            "INSERT INTO readings (probe, metric, at_ns, value, with_value, received_ns) VALUES ",
        );
        let mut params = Vec::with_capacity(chunk.len() * 6);
        for (i, r) in chunk.iter().enumerate() {
            let p = i * 6;
            if i > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&format!(
                "(${}, ${}, ${}, ${}, ${}, ${})",
                p + 1,
                p + 2,
                p + 3,
                p + 4,
                p + 5,
                p + 6
            ));
            params.extend([
                text(&r.probe),
                text(&r.metric),
                int(r.at_ns),
                Value::Real(Some(r.value)),
                Value::Real(r.with),
                int(received_ns),
            ]);
        }
        sql.push_str(" ON CONFLICT (probe, metric, at_ns) DO NOTHING");
        new += tx.execute(&sql, &params)? as usize;
    }
    if new > 0 {
        let buckets: BTreeSet<(&str, &str, i64)> = readings
            .iter()
            .map(|r| (r.probe.as_str(), r.metric.as_str(), bucket_start(r.at_ns)))
            .collect();
        for &(probe, metric, start) in &buckets {
            recompute_bucket(tx, probe, metric, start)?;
        }
        let days: BTreeSet<(&str, &str, i64)> = buckets
            .iter()
            .map(|&(p, m, b)| (p, m, day_start(b)))
            .collect();
        for (probe, metric, start) in days {
            recompute_day(tx, probe, metric, start)?;
        }
    }
    Ok(ReadingsWrite::Kept {
        new,
        duplicate: readings.len() - new,
    })
}

fn unit_conflict(index: usize, r: &Reading, unit: &str) -> ReadingsWrite {
    ReadingsWrite::UnitConflict {
        index,
        message: format!(
            "unit {:?}: {} of {} is in {unit:?}",
            r.unit, r.metric, r.probe
        ),
    }
}

impl Store {
    /// Keeps `readings` (received at `received_ns`) in one transaction,
    /// and recomputes the 15-minute and daily summaries they touch in it:
    /// all or nothing. A reading already kept (same probe, metric and
    /// time) changes nothing; a reading in another unit than its
    /// metric's refuses the whole write.
    pub fn put_readings(
        &mut self,
        readings: &[Reading],
        received_ns: i64,
    ) -> Result<ReadingsWrite, ArchiveError> {
        let mut out = ReadingsWrite::Kept {
            new: 0,
            duplicate: 0,
        };
        let done = self.backend.transaction(&mut |tx| {
            out = put_in(tx, readings, received_ns)?;
            match &out {
                // Rolled back: a series row made for another metric of
                // the batch before the conflict was found goes too.
                ReadingsWrite::UnitConflict { message, .. } => Err(ArchiveError::Database {
                    location: String::new(),
                    message: message.clone(),
                }),
                ReadingsWrite::Kept { .. } => Ok(()),
            }
        });
        match (done, &out) {
            (Err(_), ReadingsWrite::UnitConflict { .. }) | (Ok(()), _) => Ok(out),
            (Err(e), _) => Err(e),
        }
    }

    /// Every probe's metrics, by probe and metric.
    pub fn reading_series(&mut self) -> Result<Vec<ReadingSeries>, ArchiveError> {
        let rows = self.backend.sql().rows(
            "SELECT probe, metric, unit, first_ns, last_ns FROM reading_series \
             ORDER BY probe, metric",
            &[],
        )?;
        Ok(rows.iter().filter_map(|r| series_of(r)).collect())
    }

    /// `probe`'s `metric` over the `interval` around `date` (a day: its
    /// 96 buckets; a month: its days; a year: its months); `None` if the
    /// archive has no such metric. `periods` are the points' spans
    /// ([`Interval::periods`]).
    pub fn query_readings(
        &mut self,
        probe: &str,
        metric: &str,
        interval: Interval,
        periods: &[(i64, i64)],
    ) -> Result<Option<ReadingsQuery>, ArchiveError> {
        let rows = self.backend.sql().rows(
            "SELECT probe, metric, unit, first_ns, last_ns FROM reading_series \
             WHERE probe = $1 AND metric = $2",
            &[text(probe), text(metric)],
        )?;
        let Some(info) = rows.first().and_then(|r| series_of(r)) else {
            return Ok(None);
        };
        let (Some(from), Some(to)) = (periods.first().map(|p| p.0), periods.last().map(|p| p.1))
        else {
            return Ok(Some(ReadingsQuery {
                series: info,
                points: Vec::new(),
            }));
        };
        let table = match interval {
            Interval::Day => "readings_15min",
            Interval::Month | Interval::Year => "readings_day",
        };
        let parts = summaries(self.backend.sql(), table, probe, metric, from, to)?;
        Ok(Some(ReadingsQuery {
            series: info,
            points: series(periods, &parts),
        }))
    }

    /// `probe`'s `metric` as it was read in [`from_ns`, `to_ns`): (time,
    /// value), oldest first, at most `limit`.
    pub fn raw_readings(
        &mut self,
        probe: &str,
        metric: &str,
        from_ns: i64,
        to_ns: i64,
        limit: usize,
    ) -> Result<Vec<(i64, f64)>, ArchiveError> {
        let rows = self.backend.sql().rows(
            "SELECT at_ns, value FROM readings WHERE probe = $1 AND metric = $2 \
             AND at_ns >= $3 AND at_ns < $4 ORDER BY at_ns LIMIT $5",
            &[
                text(probe),
                text(metric),
                int(from_ns),
                int(to_ns),
                int(i64::try_from(limit).unwrap_or(i64::MAX)),
            ],
        )?;
        Ok(rows
            .iter()
            .filter_map(|r| Some((r.first()?.int()?, r.get(1)?.real()?)))
            .collect())
    }

    /// How many raw readings `probe`'s `metric` has in [`from_ns`,
    /// `to_ns`).
    pub fn count_readings(
        &mut self,
        probe: &str,
        metric: &str,
        from_ns: i64,
        to_ns: i64,
    ) -> Result<i64, ArchiveError> {
        Ok(self
            .backend
            .sql()
            .int(
                "SELECT COUNT(*) FROM readings WHERE probe = $1 AND metric = $2 \
                 AND at_ns >= $3 AND at_ns < $4",
                &[text(probe), text(metric), int(from_ns), int(to_ns)],
            )?
            .unwrap_or(0))
    }
}

fn series_of(r: &[Value]) -> Option<ReadingSeries> {
    Some(ReadingSeries {
        probe: r.first()?.text()?.to_string(),
        metric: r.get(1)?.text()?.to_string(),
        unit: r.get(2)?.text()?.to_string(),
        first_ns: r.get(3)?.int()?,
        last_ns: r.get(4)?.int()?,
    })
}
