//! The latest result of each path: what the portal's overview, its mesh
//! grid and `/metrics` show. Read from the indexed columns (no document
//! is parsed), newest first, and kept once per path: `result_latest`
//! names each path's latest result, kept as results are stored.

use crate::filter::ResultFilter;
use crate::row::{self, direction_of, family_name, Placement};
use crate::sql::{Sql, Value};
use crate::{ArchiveError, Store};
use sonde_model::method::family_used;
use sonde_model::{Metric, TestResult};
use std::collections::{HashMap, HashSet};

/// Between the parts of a path's key in `result_latest` (the ASCII unit
/// separator: no name, address or step holds it).
const KEY_SEPARATOR: &str = "\u{1f}";

/// A path's key from a result's stored row and labels, in SQL: what
/// [`ResultRow::path`] says, its parts joined by the separator `$1`.
fn key_sql() -> String {
    format!(
        "test || $1 || COALESCE({}, source, '') || $1 || COALESCE({}, target, '') || $1 || \
         COALESCE(family, '') || $1 || COALESCE(direction, '') || $1 || COALESCE({}, '')",
        label("from"),
        label("to"),
        label("step"),
    )
}

/// The key in `result_latest` of `r` placed at `at`: what [`key_sql`]
/// makes of its stored row and labels.
pub(crate) fn path_key(r: &TestResult, at: &Placement) -> String {
    let label = |k: &str| at.labels.get(k).cloned();
    let source = Some(r.env.client.hostname.clone()).filter(|s| !s.is_empty());
    [
        r.spec.kind().name().to_string(),
        label("from").or(source).unwrap_or_default(),
        label("to").unwrap_or_else(|| r.spec.host().to_string()),
        family_name(family_used(r)).unwrap_or_default().to_string(),
        direction_of(r).unwrap_or_default().to_string(),
        label("step").unwrap_or_default(),
    ]
    .join(KEY_SEPARATOR)
}

/// A path's latest result as `result_latest` keeps it: the path's key,
/// the result, its start, the labels the grid shows and the columns of
/// its `results` row the grid and the overview read.
pub(crate) struct Latest<'a> {
    pub key: String,
    pub id: &'a str,
    pub at: i64,
    /// The `from`, `to`, `step` and `agent` labels.
    pub labels: [Option<String>; 4],
    /// The result's [`KEPT_COLUMNS`], as its `results` row has them.
    pub columns: Vec<Value>,
}

/// The labels [`Latest`] keeps, in its order.
const KEPT_LABELS: [&str; 4] = ["from", "to", "step", "agent"];

// The columns of a result's `results` row that `result_latest` keeps a
// copy of (schema 19), by the same names: each path's latest is read
// from that table alone, no lookup of its result (10,000 agents' grid:
// 20,000 lookups of a row by its key were most of its time).
use crate::schema::LATEST_COLUMNS as KEPT_COLUMNS;

/// Where each of [`KEPT_COLUMNS`] is in [`row::result_row`].
const KEPT_AT: [usize; 12] = [2, 3, 4, 5, 9, 12, 13, 14, 15, 16, 18, 19];

impl<'a> Latest<'a> {
    /// `r`, placed at `at`, stored as `id`.
    pub(crate) fn of(r: &TestResult, placed: &Placement, id: &'a str) -> Self {
        let mut row = row::result_row(r, placed, String::new());
        Latest {
            key: path_key(r, placed),
            id,
            at: row::ns(&r.start),
            labels: KEPT_LABELS.map(|k| placed.labels.get(k).cloned()),
            columns: KEPT_AT
                .iter()
                .map(|&i| std::mem::replace(&mut row[i], Value::Bool(false)))
                .collect(),
        }
    }
}

/// Makes each of `paths` (results just stored with their labels, not
/// methods' trials) its path's latest unless the path has a newer one:
/// newest start first, and of two at once the smaller id, as the scan
/// orders.
pub(crate) fn keep<'a>(
    tx: &mut dyn Sql,
    paths: impl Iterator<Item = Latest<'a>>,
) -> Result<(), ArchiveError> {
    // One row per path in a statement (an upsert may not meet its own row
    // twice): the batch's own latest of each.
    let mut newest: HashMap<String, Latest<'a>> = HashMap::new();
    for p in paths {
        match newest.get(&p.key) {
            Some(had) if (had.at, std::cmp::Reverse(had.id)) >= (p.at, std::cmp::Reverse(p.id)) => {
            }
            _ => {
                newest.insert(p.key.clone(), p);
            }
        }
    }
    // Each path's own order: two batches at once meet their paths in
    // one order, never wait on each other crosswise.
    let mut newest: Vec<Latest<'a>> = newest.into_values().collect();
    newest.sort_by(|a, b| a.key.cmp(&b.key));
    let rows: Vec<Vec<Value>> = newest
        .into_iter()
        .map(|p| {
            let [from, to, step, agent] = p.labels;
            // The key's first part is the path's test.
            let test = p.key.split(KEY_SEPARATOR).next().map(str::to_string);
            let mut row = vec![
                Value::Text(test),
                Value::Text(Some(p.key)),
                Value::Text(Some(p.id.to_string())),
                Value::Int(Some(p.at)),
                Value::Text(from),
                Value::Text(to),
                Value::Text(step),
                Value::Text(agent),
            ];
            row.extend(p.columns);
            row
        })
        .collect();
    crate::row::put_rows(tx, upsert_rows, &rows)
}

/// The statement that keeps `rows` (path key, result id, start, labels,
/// [`KEPT_COLUMNS`]) each as its path's latest unless the path has a
/// newer one.
fn upsert_rows(rows: usize) -> String {
    let kept = KEPT_COLUMNS.join(", ");
    let set: Vec<String> = [
        "result_id",
        "test_name",
        "latest_ns",
        "from_name",
        "to_name",
        "step_name",
        "agent_name",
    ]
    .iter()
    .chain(KEPT_COLUMNS.iter())
    .map(|c| format!("{c} = excluded.{c}"))
    .collect();
    format!(
        "INSERT INTO result_latest (test_name, path_key, result_id, latest_ns, from_name, \
         to_name, step_name, agent_name, {kept}) VALUES {} ON CONFLICT (path_key) DO UPDATE SET \
         {} WHERE excluded.latest_ns > result_latest.latest_ns OR (excluded.latest_ns = \
         result_latest.latest_ns AND excluded.result_id < result_latest.result_id)",
        crate::row::value_rows(rows, 8 + KEPT_COLUMNS.len()),
        set.join(", ")
    )
}

/// `result_latest` read as `results` is: each path's latest result, its
/// columns by their names in `results` (its own copy of them), and the
/// labels it keeps. A row without the copy (every result has a target)
/// is left out, as the join with `results` left it out before 19: one
/// the migration found no result for, or one an older sonde still
/// running wrote after it; the path's next result writes it whole.
fn latest_as_results() -> String {
    format!(
        "(SELECT result_id AS id, test_name AS test, latest_ns AS start_ns, {}, \
         CAST(NULL AS TEXT) AS method_id, from_name, to_name, step_name, agent_name FROM \
         result_latest WHERE target IS NOT NULL) results",
        KEPT_COLUMNS.join(", ")
    )
}

/// One result's indexed columns, with the campaign endpoints it ran
/// between (the `from` and `to` labels a campaign step puts on it).
#[derive(Debug, Clone, PartialEq)]
pub struct ResultRow {
    pub id: String,
    pub test: String,
    /// The host that ran the test (its hostname).
    pub source: String,
    /// The host it measured toward, as written.
    pub target: String,
    /// The address the test was sent from, and the one it went to, where
    /// the result says (what identifies the path; the names above label
    /// it).
    pub source_addr: Option<String>,
    pub target_addr: Option<String>,
    pub family: String,
    /// `forward`, `reverse`, `bidir`, or empty for a ping.
    pub direction: String,
    pub campaign: Option<String>,
    /// The campaign step, and its endpoints' names.
    pub step: Option<String>,
    pub from: Option<String>,
    pub to: Option<String>,
    pub start_ns: i64,
    pub throughput_bps: Option<f64>,
    pub loss_pct: Option<f64>,
    pub pdr_pct: Option<f64>,
    pub jitter_ms: Option<f64>,
    pub rtt_ms: Option<f64>,
    /// The agent that sent it to this archive (a central agent's ingest
    /// labels each forwarded result with the token's agent).
    pub agent: Option<String>,
    /// A trace: 1 when it took another route than the trace before it
    /// on its path (`path_changes`), else 0; `None` for other tests.
    pub path_changed: Option<f64>,
}

impl ResultRow {
    /// Whether the result comes from its path's owner: kept here by this
    /// agent, or forwarded by the agent its `from` names when that is one
    /// of `agents` (a campaign's own endpoint names are not agents). Only
    /// such results raise or clear alerts.
    pub fn from_owner(&self, agents: &std::collections::BTreeSet<String>) -> bool {
        match (&self.agent, &self.from) {
            (Some(agent), Some(from)) => agent == from || !agents.contains(from),
            _ => true,
        }
    }

    /// The path's `from`: the campaign step's, else the source.
    pub fn from_name(&self) -> &str {
        self.from.as_deref().unwrap_or(&self.source)
    }

    /// The path's `to`: the campaign step's, else the target.
    pub fn to_name(&self) -> &str {
        self.to.as_deref().unwrap_or(&self.target)
    }

    pub fn path(&self) -> (String, String, String, String, String, String) {
        (
            self.test.clone(),
            self.from.clone().unwrap_or_else(|| self.source.clone()),
            self.to.clone().unwrap_or_else(|| self.target.clone()),
            self.family.clone(),
            self.direction.clone(),
            self.step.clone().unwrap_or_default(),
        )
    }
}

fn label(key: &str) -> String {
    format!(
        "(SELECT value FROM result_labels l WHERE l.result_id = results.id AND l.key = '{key}')"
    )
}

/// The indexed columns of results, and the campaign step and endpoints
/// from their labels.
fn select() -> String {
    format!("{} FROM results", select_columns(false, true))
}

/// [`select`] without its `FROM`: the labels from the columns
/// `result_latest` keeps them in when `from_latest` (it is read as
/// [`LATEST_AS_RESULTS`]), else from `result_labels`.
/// `traces`: whether the rows may be traces, whose route changes are
/// counted; a query of another test leaves that column out (NULL), as
/// the planner costs its subquery for every row whatever the test, and a
/// grid of 20,000 paths' estimate then passed PostgreSQL's threshold for
/// compiling the query (JIT): 280 ms where it runs in 55.
fn select_columns(from_latest: bool, traces: bool) -> String {
    let labels = if from_latest {
        KEPT_LABELS.map(|k| format!("results.{k}_name"))
    } else {
        KEPT_LABELS.map(label)
    };
    let [from, to, step, agent] = labels;
    let changes = if traces {
        "CASE WHEN test = 'trace' THEN (SELECT COUNT(*) FROM path_changes p WHERE \
         p.result_id = results.id) END"
    } else {
        "CAST(NULL AS BIGINT)"
    };
    format!(
        "SELECT id, test, COALESCE(source, ''), COALESCE(target, ''), COALESCE(family, ''), \
         COALESCE(direction, ''), campaign, {step}, {from}, {to}, start_ns, throughput_bps, \
         loss_pct, pdr_pct, jitter_ms, rtt_p50_ms, {agent}, source_addr, target_addr, {changes}"
    )
}

/// A row of [`select_columns`], its texts moved out of it (a grid reads
/// tens of thousands).
fn read_row(mut r: Vec<Value>) -> Option<ResultRow> {
    let mut text = |i: usize| match r.get_mut(i) {
        Some(Value::Text(t)) => t.take(),
        _ => None,
    };
    let id = text(0)?;
    let test = text(1)?;
    let source = text(2)?;
    let target = text(3)?;
    let family = text(4)?;
    let direction = text(5)?;
    let campaign = text(6);
    let step = text(7);
    let from = text(8);
    let to = text(9);
    let agent = text(16);
    let source_addr = text(17);
    let target_addr = text(18);
    Some(ResultRow {
        id,
        test,
        source,
        target,
        family,
        direction,
        campaign,
        step,
        from,
        to,
        agent,
        source_addr,
        target_addr,
        start_ns: r.get(10)?.int()?,
        throughput_bps: r.get(11)?.real(),
        loss_pct: r.get(12)?.real(),
        pdr_pct: r.get(13)?.real(),
        jitter_ms: r.get(14)?.real(),
        rtt_ms: r.get(15)?.real(),
        path_changed: r.get(19).and_then(Value::int).map(|n| n as f64),
    })
}

impl Store {
    /// The results `ids` that are a path's own (not a method's trials),
    /// oldest first.
    pub fn rows_by_ids(&mut self, ids: &[String]) -> Result<Vec<ResultRow>, ArchiveError> {
        let mut out = Vec::new();
        for chunk in ids.chunks(200) {
            let marks: Vec<String> = (1..=chunk.len()).map(|i| format!("${i}")).collect();
            let sql = format!(
                "{} WHERE method_id IS NULL AND id IN ({}) ORDER BY start_ns, id",
                select(),
                marks.join(", ")
            );
            let params: Vec<Value> = chunk.iter().map(|i| Value::Text(Some(i.clone()))).collect();
            let rows = self.backend.sql().rows(&sql, &params)?;
            out.extend(rows.into_iter().filter_map(read_row));
        }
        out.sort_by(|a, b| (a.start_ns, &a.id).cmp(&(b.start_ns, &b.id)));
        Ok(out)
    }

    /// Fills `result_latest` from every result kept (not methods' trials)
    /// when it is empty and they are not: an archive made before it, or
    /// one whose filling was cut short (it is all or nothing, in one
    /// transaction).
    pub(crate) fn backfill_result_latest(&mut self) -> Result<(), ArchiveError> {
        let sql = self.backend.sql();
        let have = sql.int(
            "SELECT COUNT(*) FROM (SELECT 1 FROM result_latest LIMIT 1) x",
            &[],
        )?;
        let results = sql.int(
            "SELECT COUNT(*) FROM (SELECT 1 FROM results WHERE method_id IS NULL LIMIT 1) x",
            &[],
        )?;
        if have.unwrap_or(0) > 0 || results.unwrap_or(0) == 0 {
            return Ok(());
        }
        let rows = sql.rows(
            &format!(
                "SELECT {}, id, start_ns, {}, {}, {}, {}, {} FROM results WHERE method_id IS NULL",
                key_sql(),
                label("from"),
                label("to"),
                label("step"),
                label("agent"),
                KEPT_COLUMNS.join(", "),
            ),
            &[Value::Text(Some(KEY_SEPARATOR.to_string()))],
        )?;
        let paths: Vec<Latest<'_>> = rows
            .iter()
            .filter_map(|r| {
                let text = |i: usize| r.get(i).and_then(Value::text).map(str::to_string);
                Some(Latest {
                    key: text(0)?,
                    id: r.get(1).and_then(Value::text)?,
                    at: r.get(2).and_then(Value::int)?,
                    labels: [text(3), text(4), text(5), text(6)],
                    columns: r.get(7..)?.to_vec(),
                })
            })
            .collect();
        self.backend.transaction(&mut |tx| {
            keep(
                tx,
                paths.iter().map(|p| Latest {
                    key: p.key.clone(),
                    id: p.id,
                    at: p.at,
                    labels: p.labels.clone(),
                    columns: p.columns.clone(),
                }),
            )
        })
    }

    /// The newest result of each path that `filter` selects, at most
    /// `scan` paths, newest first (methods' trials never count). A filter
    /// on what names a path (test, target, family, direction) reads each
    /// path's latest from `result_latest`, however old; one on anything
    /// else (a campaign, a time, a label) looks through the `scan` newest
    /// results it selects.
    pub fn latest_per_path(
        &mut self,
        filter: &ResultFilter,
        scan: i64,
    ) -> Result<Vec<ResultRow>, ArchiveError> {
        Ok(self
            .latest_rows(filter, scan, None)?
            .into_iter()
            .map(|(row, _)| row)
            .collect())
    }

    /// [`Store::latest_per_path`], each with its overall figure of
    /// `metric` where it has one (what the mesh grid's cells show), read
    /// in the same query.
    pub fn latest_per_path_of(
        &mut self,
        filter: &ResultFilter,
        scan: i64,
        metric: Metric,
    ) -> Result<Vec<(ResultRow, Option<f64>)>, ArchiveError> {
        self.latest_rows(filter, scan, Some(metric))
    }

    fn latest_rows(
        &mut self,
        filter: &ResultFilter,
        scan: i64,
        metric: Option<Metric>,
    ) -> Result<Vec<(ResultRow, Option<f64>)>, ArchiveError> {
        let filter = ResultFilter {
            trials: false,
            ..filter.clone()
        };
        let (clause, mut params) = filter.clause();
        let by_path = filter.campaign.is_none()
            && filter.since_ns.is_none()
            && filter.until_ns.is_none()
            && filter.label.is_none();
        // By path: each path's latest from `result_latest` alone, its
        // test's paths by its index, newest first; no result is looked up.
        let from = if by_path {
            latest_as_results()
        } else {
            "results".to_string()
        };
        let order = "start_ns DESC, id";
        // A metric the row has a column of is read from it (the same
        // overall figure); another from `result_figures`.
        let column = metric.and_then(row_value);
        let mut value = String::new();
        if let Some(m) = metric.filter(|_| column.is_none()) {
            params.push(Value::Text(Some(row::OVERALL.to_string())));
            params.push(Value::Text(Some(m.name().to_string())));
            value = format!(
                ", (SELECT value FROM result_figures f WHERE f.result_id = results.id AND \
                 f.start_ns = results.start_ns AND f.direction = ${} AND f.metric = ${})",
                params.len() - 1,
                params.len()
            );
        }
        params.push(Value::Int(Some(scan)));
        let sql = format!(
            "{}{value} FROM {from} WHERE {clause} ORDER BY {order} LIMIT ${}",
            select_columns(by_path, filter.test.as_deref().is_none_or(|t| t == "trace")),
            params.len()
        );
        let rows = self.backend.sql().rows(&sql, &params)?;
        let mut seen = HashSet::new();
        Ok(rows
            .into_iter()
            .filter_map(|r| {
                let figure = r.get(20).and_then(Value::real);
                let row = read_row(r)?;
                let value = match column {
                    Some(of) => of(&row).filter(|v| v.is_finite()),
                    None => figure,
                };
                Some((row, value))
            })
            // `result_latest` has a row per path (its key is the path):
            // only the newest results need their first of each path.
            .filter(|(row, _)| by_path || seen.insert(row.path()))
            .collect())
    }
}

/// How to read `metric` from a result's row, where the row has it: the
/// results table's columns are its overall figures, as
/// `result_figures`' `overall` rows are.
fn row_value(metric: Metric) -> Option<fn(&ResultRow) -> Option<f64>> {
    match metric {
        Metric::ThroughputBps => Some(|r| r.throughput_bps),
        Metric::LossPct => Some(|r| r.loss_pct),
        Metric::PdrPct => Some(|r| r.pdr_pct),
        Metric::JitterMs => Some(|r| r.jitter_ms),
        Metric::RttP50Ms => Some(|r| r.rtt_ms),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(agent: Option<&str>, from: Option<&str>) -> ResultRow {
        ResultRow {
            id: "x".into(),
            test: "ping".into(),
            source: "h".into(),
            target: "t".into(),
            source_addr: None,
            target_addr: None,
            family: "v6".into(),
            direction: String::new(),
            campaign: None,
            step: None,
            from: from.map(str::to_string),
            to: None,
            start_ns: 0,
            throughput_bps: None,
            loss_pct: None,
            pdr_pct: None,
            jitter_ms: None,
            rtt_ms: None,
            agent: agent.map(str::to_string),
            path_changed: None,
        }
    }

    #[test]
    fn only_a_paths_owner_speaks_for_it() {
        let agents: std::collections::BTreeSet<String> =
            ["a", "b"].iter().map(|s| s.to_string()).collect();
        assert!(row(Some("a"), Some("a")).from_owner(&agents));
        assert!(
            !row(Some("a"), Some("b")).from_owner(&agents),
            "a's result claiming b's path"
        );
        assert!(
            row(Some("a"), Some("A")).from_owner(&agents),
            "a campaign endpoint, no agent"
        );
        assert!(
            row(None, Some("b")).from_owner(&agents),
            "kept here, not forwarded"
        );
        assert!(row(Some("a"), None).from_owner(&agents));
    }
}
