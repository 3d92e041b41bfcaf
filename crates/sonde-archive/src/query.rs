//! Reading metrics back: one metric's values with what to group them by
//! (for `sonde results stats`), and the hour-of-day × day grid of a
//! metric (the studies' day heat maps). Grouping by hour and day is
//! integer arithmetic on `start_ns`, so both backends do it alike (UTC).

use crate::filter::ResultFilter;
use crate::sql::Value;
use crate::{ArchiveError, Store};
use sonde_model::Metric;

/// What `stats` groups values by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grouping {
    None,
    Test,
    Target,
    Direction,
    Family,
    Campaign,
    /// Hour of the day the result started, UTC (0–23).
    Hour,
    /// The value of a label.
    Label(String),
}

/// One result's value of a metric in one direction, with its group.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricPoint {
    pub group: String,
    /// The result's test kind (`tcp`, `udp`, `ping`, `http`).
    pub test: String,
    /// The figure's direction: `forward`, `reverse`, `round_trip` or
    /// `total`.
    pub direction: String,
    pub start_ns: i64,
    pub value: f64,
    /// The campaign endpoints the result ran between (its `from` and `to`
    /// labels), which name its directions.
    pub ends: Option<(String, String)>,
    /// Whether both directions ran at once (a bidirectional test).
    pub both: bool,
}

/// One cell of a day heat map: the mean of a metric over the results that
/// started in `hour` (UTC) of `day` (days since the Unix epoch).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeatCell {
    pub day: i64,
    pub hour: i64,
    pub mean: f64,
    pub count: i64,
}

const HOUR_NS: i64 = 3_600_000_000_000;
const DAY_NS: i64 = 24 * HOUR_NS;

impl Store {
    /// The values of `metric` in the results `filter` selects (those that
    /// measured it), oldest first, each with its group: one per direction
    /// a result measured (a bidirectional test gives its forward and its
    /// reverse value, never their sum; `direction` in `filter` is the
    /// figure's own, as `figures.rs` reads it).
    pub fn metric_points(
        &mut self,
        filter: &ResultFilter,
        metric: Metric,
        by: &Grouping,
    ) -> Result<Vec<MetricPoint>, ArchiveError> {
        let (from, mut params) = crate::figures::figures_from(filter, metric);
        let group = match by {
            Grouping::None => "''".to_string(),
            Grouping::Test => "results.test".into(),
            Grouping::Target => "COALESCE(results.target, '')".into(),
            Grouping::Direction => "f.direction".into(),
            Grouping::Family => "COALESCE(results.family, '')".into(),
            Grouping::Campaign => "COALESCE(results.campaign, '')".into(),
            Grouping::Hour => "''".into(),
            Grouping::Label(key) => {
                params.push(Value::Text(Some(key.clone())));
                format!(
                    "COALESCE((SELECT value FROM result_labels l WHERE l.result_id = results.id \
                     AND l.key = ${}), '')",
                    params.len()
                )
            }
        };
        let label = |key: &str| {
            format!(
                "(SELECT value FROM result_labels l WHERE l.result_id = results.id AND l.key = \
                 '{key}')"
            )
        };
        let sql = format!(
            "SELECT {group}, results.start_ns, f.value, results.test, f.direction, {}, {}, \
             results.direction {from} ORDER BY results.start_ns, results.id, f.direction",
            label("from"),
            label("to")
        );
        let rows = self.backend.sql().rows(&sql, &params)?;
        Ok(rows
            .iter()
            .filter_map(|r| {
                let start_ns = r.get(1)?.int()?;
                let value = r.get(2)?.real()?;
                let group = match by {
                    Grouping::Hour => format!("{:02}h", start_ns.rem_euclid(DAY_NS) / HOUR_NS),
                    _ => r.first()?.text().unwrap_or("").to_string(),
                };
                let text = |i: usize| r.get(i).and_then(Value::text).map(str::to_string);
                Some(MetricPoint {
                    group,
                    test: r.get(3)?.text()?.to_string(),
                    direction: r.get(4)?.text()?.to_string(),
                    start_ns,
                    value,
                    ends: text(5).zip(text(6)),
                    both: text(7).as_deref() == Some("bidir"),
                })
            })
            .collect())
    }

    /// The mean of `metric` per hour of day and day, over what `filter`
    /// selects (each direction's figure a value of its own), computed by
    /// the database.
    pub fn day_heat_map(
        &mut self,
        filter: &ResultFilter,
        metric: Metric,
    ) -> Result<Vec<HeatCell>, ArchiveError> {
        let (from, params) = crate::figures::figures_from(filter, metric);
        let sql = format!(
            "SELECT results.start_ns / {DAY_NS} AS day, (results.start_ns / {HOUR_NS}) % 24 AS \
             hour, AVG(f.value), COUNT(f.value) {from} GROUP BY day, hour ORDER BY day, hour"
        );
        let rows = self.backend.sql().rows(&sql, &params)?;
        Ok(rows
            .iter()
            .filter_map(|r| {
                Some(HeatCell {
                    day: r.first()?.int()?,
                    hour: r.get(1)?.int()?,
                    mean: r.get(2)?.real()?,
                    count: r.get(3)?.int()?,
                })
            })
            .collect())
    }

    /// The interval series of `metric` of one result and direction
    /// (`round_trip` for a ping), as (seconds from its start, value):
    /// empty for a metric the intervals do not keep.
    pub fn interval_series(
        &mut self,
        id: sonde_model::ResultId,
        direction: &str,
        metric: Metric,
    ) -> Result<Vec<(f64, f64)>, ArchiveError> {
        let Some(column) = crate::row::interval_column(metric) else {
            return Ok(Vec::new());
        };
        let sql = format!(
            "SELECT start_s, {column} FROM intervals WHERE result_id = $1 AND direction = $2 AND \
             {column} IS NOT NULL ORDER BY size_bytes, start_s"
        );
        let rows = self.backend.sql().rows(
            &sql,
            &[
                Value::Text(Some(id.to_string())),
                Value::Text(Some(direction.to_string())),
            ],
        )?;
        Ok(rows
            .iter()
            .filter_map(|r| Some((r.first()?.real()?, r.get(1)?.real()?)))
            .collect())
    }
}

/// What one exported row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportRows {
    /// One row per result: its indexed columns.
    Results,
    /// One row per interval and direction of every result selected.
    Intervals,
}

pub(crate) const RESULT_COLUMNS: [&str; 16] = [
    "id",
    "test",
    "source",
    "target",
    "family",
    "direction",
    "campaign",
    "run_id",
    "start_ns",
    "duration_s",
    "interrupted",
    "throughput_bps",
    "loss_pct",
    "pdr_pct",
    "jitter_ms",
    "rtt_p50_ms",
];

pub(crate) const INTERVAL_COLUMNS: [&str; 13] = [
    "result_id",
    "test",
    "target",
    "direction",
    "size_bytes",
    "start_s",
    "end_s",
    "at_ns",
    "omitted",
    "throughput_bps",
    "loss_pct",
    "jitter_ms",
    "rtt_ms",
];

/// The interval columns as a join of `intervals i` and `results r`
/// selects them.
pub(crate) fn interval_select() -> Vec<String> {
    INTERVAL_COLUMNS
        .iter()
        .map(|c| match *c {
            "test" | "target" => format!("r.{c}"),
            c => format!("i.{c}"),
        })
        .collect()
}

impl Store {
    /// The columns (named with their units) and rows of `what`, for the
    /// results `filter` selects, oldest first.
    pub fn export_rows(
        &mut self,
        filter: &ResultFilter,
        what: ExportRows,
    ) -> Result<(Vec<&'static str>, Vec<Vec<Value>>), ArchiveError> {
        let (clause, params) = filter.clause();
        let (columns, sql) = match what {
            ExportRows::Results => (
                RESULT_COLUMNS.to_vec(),
                format!(
                    "SELECT {} FROM results WHERE {clause} ORDER BY start_ns, id",
                    RESULT_COLUMNS.join(", ")
                ),
            ),
            ExportRows::Intervals => {
                let cols = interval_select();
                (
                    INTERVAL_COLUMNS.to_vec(),
                    format!(
                        "SELECT {} FROM intervals i JOIN results r ON r.id = i.result_id WHERE \
                         i.result_id IN (SELECT id FROM results WHERE {clause}) ORDER BY \
                         r.start_ns, r.id, i.direction, i.size_bytes, i.start_s",
                        cols.join(", ")
                    ),
                )
            }
        };
        let rows = self.backend.sql().rows(&sql, &params)?;
        Ok((columns, rows))
    }
}

impl Store {
    /// The value of label `key` of each result `filter` selects that has
    /// it: (result id, value).
    pub fn label_values(
        &mut self,
        filter: &ResultFilter,
        key: &str,
    ) -> Result<Vec<(String, String)>, ArchiveError> {
        let (clause, mut params) = filter.clause();
        params.push(Value::Text(Some(key.to_string())));
        let sql = format!(
            "SELECT result_id, value FROM result_labels WHERE key = ${} AND result_id IN (SELECT \
             id FROM results WHERE {clause})",
            params.len()
        );
        let rows = self.backend.sql().rows(&sql, &params)?;
        Ok(rows
            .iter()
            .filter_map(|r| {
                Some((
                    r.first()?.text()?.to_string(),
                    r.get(1)?.text()?.to_string(),
                ))
            })
            .collect())
    }
}
