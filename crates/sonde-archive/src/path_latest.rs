//! Each path's latest figures, kept as results are stored: what
//! `/metrics` serves without reading a result back. A path is what a
//! Prometheus series is labelled by (test, source, target, direction,
//! family, DSCP); its row is replaced by a newer result's in the same
//! transaction that keeps the result, and never by an older one (a
//! backlog forwarded late).

use crate::row::{family_name, ns};
use crate::sql::{Sql, Value};
use crate::{ArchiveError, Store};
use sonde_model::method::family_used;
use sonde_model::{Metric, TestResult};
use std::collections::{BTreeMap, HashMap};

/// One path's labels and its latest result's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct PathLatest {
    pub test: String,
    /// The host that ran the test (its hostname; empty if unknown).
    pub source: String,
    /// The host it measured toward, as written.
    pub target: String,
    /// The figures' direction: `forward` or `reverse` (a bidirectional
    /// test is both), `round_trip` (a ping, HTTP), or `total`.
    pub direction: String,
    /// `v6`, `v4`, or empty when neither is known.
    pub family: String,
    /// The DSCP the test marked its packets with (0 when none).
    pub dscp: u8,
    pub result_id: String,
    pub start_ns: i64,
    /// Its figures in this direction, by the metric registry, in the
    /// units they are kept in (from `result_figures`).
    pub figures: BTreeMap<Metric, f64>,
}

impl PathLatest {
    /// The paths `r` measured, a row per direction of its figures (a
    /// bidirectional test is its forward and its reverse path, never
    /// their sum), each with its figures.
    pub fn of(r: &TestResult) -> Vec<PathLatest> {
        let figures = |f: &sonde_model::Figures| {
            Metric::ALL
                .into_iter()
                .filter_map(|m| Some((m, m.of(f).filter(|v| v.is_finite())?)))
                .collect()
        };
        let dscp = r.spec.dscp();
        r.summary
            .by_direction()
            .into_iter()
            .map(|(direction, f)| PathLatest {
                test: r.spec.kind().name().to_string(),
                source: r.env.client.hostname.clone(),
                target: r.spec.host().to_string(),
                direction: direction.to_string(),
                family: family_name(family_used(r)).unwrap_or("").to_string(),
                dscp: dscp.map_or(0, |d| d.value()),
                result_id: r.id.to_string(),
                start_ns: ns(&r.start),
                figures: figures(f),
            })
            .collect()
    }
}

const COLUMNS: &str = "test, source, target, direction, family, dscp, result_id, start_ns";

/// Keeps each of `paths` as its path's latest unless the path has a
/// newer one; of one path twice in `paths`, the later start (and of two
/// at once the later in `paths`), as one by one would.
pub(crate) fn keep(
    tx: &mut dyn Sql,
    paths: impl Iterator<Item = PathLatest>,
) -> Result<(), ArchiveError> {
    let mut newest: HashMap<(String, String, String, String, String, u8), PathLatest> =
        HashMap::new();
    for p in paths {
        let key = (
            p.test.clone(),
            p.source.clone(),
            p.target.clone(),
            p.direction.clone(),
            p.family.clone(),
            p.dscp,
        );
        match newest.get(&key) {
            Some(had) if had.start_ns > p.start_ns => {}
            _ => {
                newest.insert(key, p);
            }
        }
    }
    // In the paths' order, as `result_latest`: two batches at once never
    // wait on each other crosswise.
    let mut newest: Vec<_> = newest.into_iter().collect();
    newest.sort_by(|a, b| a.0.cmp(&b.0));
    let rows: Vec<[Value; 8]> = newest.into_iter().map(|(_, p)| row(p)).collect();
    crate::row::put_rows(tx, upsert_rows, &rows)
}

/// The statement that keeps `rows` rows of [`row`] each as its path's
/// latest unless the path has a newer one (no path twice among them).
fn upsert_rows(rows: usize) -> String {
    format!(
        "INSERT INTO path_latest ({COLUMNS}) VALUES {} ON CONFLICT (test, source, target, \
         direction, family, dscp) DO UPDATE SET result_id = excluded.result_id, start_ns = \
         excluded.start_ns WHERE excluded.start_ns >= path_latest.start_ns",
        crate::row::value_rows(rows, 8)
    )
}

/// The `path_latest` row of `p`, in the order of [`COLUMNS`].
fn row(p: PathLatest) -> [Value; 8] {
    [
        Value::Text(Some(p.test)),
        Value::Text(Some(p.source)),
        Value::Text(Some(p.target)),
        Value::Text(Some(p.direction)),
        Value::Text(Some(p.family)),
        Value::Int(Some(i64::from(p.dscp))),
        Value::Text(Some(p.result_id)),
        Value::Int(Some(p.start_ns)),
    ]
}

fn read(r: &[Value]) -> Option<PathLatest> {
    let text = |i: usize| r.get(i).and_then(Value::text).map(str::to_string);
    Some(PathLatest {
        test: text(0)?,
        source: text(1)?,
        target: text(2)?,
        direction: text(3)?,
        family: text(4)?,
        dscp: u8::try_from(r.get(5)?.int()?).ok()?,
        result_id: text(6)?,
        start_ns: r.get(7)?.int()?,
        figures: BTreeMap::new(),
    })
}

/// Results whose documents fill `path_latest` when an archive made before
/// it is opened: the newest this many (what `/metrics` looked through).
const BACKFILL: i64 = 5_000;

impl Store {
    /// The `limit` paths measured most recently, newest first, each with
    /// its latest figures (the latest result's rows of `result_figures`
    /// in the path's direction; no document is read).
    pub fn path_latest(&mut self, limit: i64) -> Result<Vec<PathLatest>, ArchiveError> {
        let rows = self.backend.sql().rows(
            &format!(
                "SELECT {COLUMNS} FROM path_latest ORDER BY start_ns DESC, test, source, \
                 target, direction, family, dscp LIMIT $1"
            ),
            &[Value::Int(Some(limit))],
        )?;
        let mut paths: Vec<PathLatest> = rows.iter().filter_map(|r| read(r)).collect();
        let ids: Vec<String> = paths.iter().map(|p| p.result_id.clone()).collect();
        let mut figures: BTreeMap<(String, String), BTreeMap<Metric, f64>> = BTreeMap::new();
        for chunk in ids.chunks(200) {
            let marks: Vec<String> = (1..=chunk.len()).map(|i| format!("${i}")).collect();
            let sql = format!(
                "SELECT result_id, direction, metric, value FROM result_figures WHERE result_id \
                 IN ({})",
                marks.join(", ")
            );
            let params: Vec<Value> = chunk.iter().map(|i| Value::Text(Some(i.clone()))).collect();
            for r in self.backend.sql().rows(&sql, &params)? {
                let text = |i: usize| r.get(i).and_then(Value::text);
                let (Some(id), Some(dir), Some(m), Some(v)) = (
                    text(0),
                    text(1),
                    text(2).and_then(Metric::named),
                    r.get(3).and_then(Value::real),
                ) else {
                    continue;
                };
                figures
                    .entry((id.to_string(), dir.to_string()))
                    .or_default()
                    .insert(m, v);
            }
        }
        for p in &mut paths {
            if let Some(f) = figures.remove(&(p.result_id.clone(), p.direction.clone())) {
                p.figures = f;
            }
        }
        Ok(paths)
    }

    /// Fills `path_latest` from the newest results kept before it existed
    /// (once, as the archive is migrated to it). A document that no longer
    /// reads is passed over: it is still in the archive, and the path's
    /// next result fills its row.
    pub(crate) fn backfill_path_latest(&mut self) -> Result<(), ArchiveError> {
        let docs = self.backend.sql().texts(
            "SELECT doc FROM results WHERE method_id IS NULL ORDER BY start_ns DESC LIMIT $1",
            &[Value::Int(Some(BACKFILL))],
        )?;
        let results: Vec<TestResult> = docs
            .iter()
            .filter_map(|d| sonde_model::load_result(d).ok())
            .collect();
        self.backend
            .transaction(&mut |tx| keep(tx, results.iter().flat_map(PathLatest::of)))
    }
}
