//! The archive's readings (schema migration 7, docs/readings.md).
//!
//! - `reading_series`: each probe's metric, its unit (one unit per
//!   metric: a reading in another unit is refused), its first and last
//!   reading's time;
//! - `readings`: every raw reading, keyed by probe, metric and time, so a
//!   reading sent twice (a retry, a broker's redelivery) changes nothing:
//!   the first one kept stays;
//! - `readings_15min` and `readings_day`: the [`Summary`] of each
//!   15-minute bucket and each UTC day, kept in the write's transaction:
//!   the summary of a write's new readings is added to each bucket and
//!   day they fall in, so a reading that arrives late corrects them at
//!   once, and a write reads nothing back.

use crate::sql::{Sql, Value};
use crate::{ArchiveError, Store};
use serde::Serialize;
use sonde_readings::aggregate::{bucket_start, day_start, series, Interval, Point};
use sonde_readings::{Reading, Sample, Summary};
use std::collections::BTreeMap;

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

/// A summary to add to its bucket's (or day's) row: the probe's metric,
/// the summary of the new readings in it and their sum.
struct SummaryAdd<'r> {
    probe: &'r str,
    metric: &'r str,
    summary: Summary,
    total: f64,
}

/// Adds each of `adds`, the summary of a write's new readings in one
/// bucket or day and their sum, to `table`'s summary of that span, as
/// [`Summary::combine`] of the two would: counts and sums added, the mean
/// their quotient, the lower low and the higher high (the earlier of two
/// equal), with the high's `with`. Many spans to a statement (a batch a
/// few hours long touches a few dozen buckets), nothing read back. A
/// reading is added once, when it is new to the archive, so a summary is
/// what recomputing it from its readings would give (the sum in another
/// order); a reading that arrives late corrects it at once.
///
/// The sum is trusted only while `total_count`, the count it is the sum
/// of, is the row's count: a summary written before schema 20, or since
/// by an older sonde still running (which recomputes count and mean from
/// the readings and leaves the sum as it was), takes mean × count.
///
/// Each span is once in `adds` (a statement may not update a row twice),
/// in the key's order, so two writers lock the rows they share in the
/// same order.
fn add_to_summaries(
    tx: &mut dyn Sql,
    table: &str,
    adds: &[SummaryAdd<'_>],
) -> Result<(), ArchiveError> {
    let lower = format!(
        "excluded.min < {table}.min OR (excluded.min = {table}.min \
         AND excluded.min_at_ns < {table}.min_at_ns)"
    );
    let higher = format!(
        "excluded.max > {table}.max OR (excluded.max = {table}.max \
         AND excluded.max_at_ns < {table}.max_at_ns)"
    );
    let sum = format!(
        "CASE WHEN {table}.total_count = {table}.count THEN {table}.total \
         ELSE {table}.mean * {table}.count END + excluded.total"
    );
    let rows: Vec<[Value; 12]> = adds
        .iter()
        .map(|a| {
            let s = &a.summary;
            [
                text(a.probe),
                text(a.metric),
                int(s.start_ns),
                int(s.count),
                Value::Real(Some(a.total / s.count as f64)),
                Value::Real(Some(s.min)),
                int(s.min_at_ns),
                Value::Real(Some(s.max)),
                int(s.max_at_ns),
                Value::Real(s.with_at_max),
                Value::Real(Some(a.total)),
                int(s.count),
            ]
        })
        .collect();
    let upsert = |n: usize| {
        format!(
            "INSERT INTO {table} (probe, metric, {SUMMARY_COLUMNS}, total, total_count) \
             VALUES {} \
             ON CONFLICT (probe, metric, start_ns) DO UPDATE \
             SET count = {table}.count + excluded.count, total = {sum}, \
             total_count = {table}.count + excluded.count, \
             mean = ({sum}) / ({table}.count + excluded.count), \
             min = CASE WHEN {lower} THEN excluded.min ELSE {table}.min END, \
             min_at_ns = CASE WHEN {lower} THEN excluded.min_at_ns ELSE {table}.min_at_ns END, \
             max = CASE WHEN {higher} THEN excluded.max ELSE {table}.max END, \
             max_at_ns = CASE WHEN {higher} THEN excluded.max_at_ns ELSE {table}.max_at_ns END, \
             with_at_max = CASE WHEN {higher} THEN excluded.with_at_max \
             ELSE {table}.with_at_max END",
            crate::row::value_rows(n, 12)
        )
    };
    crate::row::put_rows(tx, upsert, &rows)
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

/// A reading the write kept that was not kept before, as the insert
/// returned it (its names borrowed from the returned row).
struct NewReading<'r> {
    probe: &'r str,
    metric: &'r str,
    sample: Sample,
}

const RETURNED: &str = "RETURNING probe, metric, at_ns, value, with_value";

fn new_reading(r: &[Value]) -> Option<NewReading<'_>> {
    Some(NewReading {
        probe: r.first()?.text()?,
        metric: r.get(1)?.text()?,
        sample: Sample {
            at_ns: r.get(2)?.int()?,
            value: r.get(3)?.real()?,
            with: r.get(4).and_then(Value::real),
        },
    })
}

/// Inserts `readings`; the rows of those that were not kept before (the
/// first of a probe's metric's time twice in the batch), as
/// [`new_reading`] reads them.
fn insert_readings(
    tx: &mut dyn Sql,
    readings: &[Reading],
    received_ns: i64,
) -> Result<Vec<Vec<Value>>, ArchiveError> {
    let mut rows = Vec::new();
    if tx.postgres() {
        // One statement of fixed text for any batch: each column an
        // array, one parameter (prepared once per connection; a
        // multi-row VALUES is a statement of its own per row count,
        // parsed and planned with thousands of parameters).
        rows = tx.rows(
            &format!(
                "INSERT INTO readings (probe, metric, at_ns, value, with_value, received_ns) \
                 SELECT probe, metric, at_ns, value, with_value, $6 \
                 FROM UNNEST($1::text[], $2::text[], $3::int8[], $4::float8[], $5::float8[]) \
                 AS r (probe, metric, at_ns, value, with_value) \
                 ON CONFLICT (probe, metric, at_ns) DO NOTHING {RETURNED}"
            ),
            &[
                Value::Texts(readings.iter().map(|r| r.probe.clone()).collect()),
                Value::Texts(readings.iter().map(|r| r.metric.clone()).collect()),
                Value::Ints(readings.iter().map(|r| r.at_ns).collect()),
                Value::Reals(readings.iter().map(|r| Some(r.value)).collect()),
                Value::Reals(readings.iter().map(|r| r.with).collect()),
                int(received_ns),
            ],
        )?;
    } else {
        for chunk in readings.chunks(ROWS_PER_INSERT) {
            let mut sql = String::from(
                "INSERT INTO readings (probe, metric, at_ns, value, with_value, received_ns) \
                 VALUES ",
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
            sql.push_str(" ON CONFLICT (probe, metric, at_ns) DO NOTHING ");
            sql.push_str(RETURNED);
            rows.extend(tx.rows(&sql, &params)?);
        }
    }
    Ok(rows)
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
    // Each series' row is made or widened, in a fixed order, and its unit
    // read back in the same statement: the row is locked until this
    // write ends, so two writers of a new metric in two units cannot both
    // find none (the second waits, then reads the first's unit), and the
    // writes of one metric's readings take turns. A unit other than the
    // archive's refuses the write, and its rollback takes back what this
    // statement changed.
    for (&(probe, metric), &(unit, first, last)) in &metrics {
        let known = tx.texts(
            "INSERT INTO reading_series (probe, metric, unit, first_ns, last_ns) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (probe, metric) DO UPDATE SET \
             first_ns = CASE WHEN excluded.first_ns < reading_series.first_ns \
             THEN excluded.first_ns ELSE reading_series.first_ns END, \
             last_ns = CASE WHEN excluded.last_ns > reading_series.last_ns \
             THEN excluded.last_ns ELSE reading_series.last_ns END \
             RETURNING unit",
            &[text(probe), text(metric), text(unit), int(first), int(last)],
        )?;
        if let Some(k) = known.first().filter(|k| k.as_str() != unit) {
            let index = readings
                .iter()
                .position(|r| r.probe == probe && r.metric == metric)
                .unwrap_or(0);
            return Ok(unit_conflict(index, &readings[index], k));
        }
    }
    let rows = insert_readings(tx, readings, received_ns)?;
    let new: Vec<NewReading<'_>> = rows.iter().filter_map(|r| new_reading(r)).collect();
    // The new readings' summaries, by bucket, added to the buckets'; the
    // buckets' (of new readings only), by day, added to the days'.
    let mut buckets: BTreeMap<(&str, &str, i64), Vec<Sample>> = BTreeMap::new();
    for n in &new {
        let start = bucket_start(n.sample.at_ns);
        buckets
            .entry((n.probe, n.metric, start))
            .or_default()
            .push(n.sample);
    }
    let mut days: BTreeMap<(&str, &str, i64), (Vec<Summary>, f64)> = BTreeMap::new();
    let mut quarters = Vec::with_capacity(buckets.len());
    for (&(probe, metric, start), samples) in &buckets {
        if let Some(summary) = Summary::of_samples(start, samples) {
            let total = samples.iter().map(|x| x.value).sum::<f64>();
            let day = days.entry((probe, metric, day_start(start))).or_default();
            day.0.push(summary);
            day.1 += total;
            quarters.push(SummaryAdd {
                probe,
                metric,
                summary,
                total,
            });
        }
    }
    add_to_summaries(tx, "readings_15min", &quarters)?;
    let whole_days: Vec<SummaryAdd<'_>> = days
        .iter()
        .filter_map(|(&(probe, metric, start), (parts, total))| {
            Some(SummaryAdd {
                probe,
                metric,
                summary: Summary::combine(start, parts)?,
                total: *total,
            })
        })
        .collect();
    add_to_summaries(tx, "readings_day", &whole_days)?;
    // Counted by the rows the insert returned, as kept.
    Ok(ReadingsWrite::Kept {
        new: rows.len(),
        duplicate: readings.len().saturating_sub(rows.len()),
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
    /// and adds the new ones to the 15-minute and daily summaries they
    /// fall in, in it: all or nothing. A reading already kept (same
    /// probe, metric and time) changes nothing; a reading in another unit than its
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
