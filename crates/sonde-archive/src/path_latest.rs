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
use sonde_model::TestResult;

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
    pub throughput_bps: Option<f64>,
    pub loss_pct: Option<f64>,
    pub jitter_ms: Option<f64>,
    pub rtt_p50_ms: Option<f64>,
}

impl PathLatest {
    /// The paths `r` measured, a row per direction of its figures (a
    /// bidirectional test is its forward and its reverse path, never
    /// their sum), each with its figures.
    pub fn of(r: &TestResult) -> Vec<PathLatest> {
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
                throughput_bps: f.throughput_bps.map(|v| v as f64),
                loss_pct: f.loss_pct,
                jitter_ms: f.jitter_ms,
                rtt_p50_ms: f.rtt_ms.as_ref().map(|r| r.p50),
            })
            .collect()
    }
}

const COLUMNS: &str = "test, source, target, direction, family, dscp, result_id, start_ns, \
    throughput_bps, loss_pct, jitter_ms, rtt_p50_ms";

/// Keeps each direction of `r` as its path's latest unless the path has a
/// newer one.
pub(crate) fn upsert(tx: &mut dyn Sql, r: &TestResult) -> Result<(), ArchiveError> {
    for p in PathLatest::of(r) {
        tx.execute(
            &format!(
                "INSERT INTO path_latest ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, \
                 $9, $10, $11, $12) ON CONFLICT (test, source, target, direction, family, dscp) \
                 DO UPDATE SET result_id = excluded.result_id, start_ns = excluded.start_ns, \
                 throughput_bps = excluded.throughput_bps, loss_pct = excluded.loss_pct, \
                 jitter_ms = excluded.jitter_ms, rtt_p50_ms = excluded.rtt_p50_ms \
                 WHERE excluded.start_ns >= path_latest.start_ns"
            ),
            &[
                Value::Text(Some(p.test)),
                Value::Text(Some(p.source)),
                Value::Text(Some(p.target)),
                Value::Text(Some(p.direction)),
                Value::Text(Some(p.family)),
                Value::Int(Some(i64::from(p.dscp))),
                Value::Text(Some(p.result_id)),
                Value::Int(Some(p.start_ns)),
                Value::Real(p.throughput_bps),
                Value::Real(p.loss_pct),
                Value::Real(p.jitter_ms),
                Value::Real(p.rtt_p50_ms),
            ],
        )?;
    }
    Ok(())
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
        throughput_bps: r.get(8)?.real(),
        loss_pct: r.get(9)?.real(),
        jitter_ms: r.get(10)?.real(),
        rtt_p50_ms: r.get(11)?.real(),
    })
}

/// Results whose documents fill `path_latest` when an archive made before
/// it is opened: the newest this many (what `/metrics` looked through).
const BACKFILL: i64 = 5_000;

impl Store {
    /// The `limit` paths measured most recently, newest first, each with
    /// its latest figures.
    pub fn path_latest(&mut self, limit: i64) -> Result<Vec<PathLatest>, ArchiveError> {
        let rows = self.backend.sql().rows(
            &format!(
                "SELECT {COLUMNS} FROM path_latest ORDER BY start_ns DESC, test, source, \
                 target, direction, family, dscp LIMIT $1"
            ),
            &[Value::Int(Some(limit))],
        )?;
        Ok(rows.iter().filter_map(|r| read(r)).collect())
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
        self.backend.transaction(&mut |tx| {
            for r in &results {
                upsert(tx, r)?;
            }
            Ok(())
        })
    }
}
