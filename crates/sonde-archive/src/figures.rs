//! Each direction's own figures (`result_figures`, one row per metric
//! of the registry): what stats, charts and heat maps read, so that a
//! bidirectional test is two rows, forward and reverse, and never their
//! sum; and the overall figures alerts and the mesh grid read.

use crate::filter::ResultFilter;
use crate::row;
use crate::sql::Value;
use crate::{ArchiveError, Store};
use sonde_model::Metric;
use std::collections::{BTreeMap, BTreeSet};

/// Results whose documents are read at a time while a metric new to the
/// archive is filled in.
const CHUNK: i64 = 500;

impl Store {
    /// Fills the rows of every registry metric the archive has not yet
    /// indexed (`indexed_metrics`) from the results' documents, then names
    /// them: once per metric and archive, the first time a build that
    /// knows the metric opens it. A document that no longer reads is
    /// passed over. Two processes doing it at once write the same rows
    /// (each insert keeps what is there).
    pub(crate) fn index_new_metrics(&mut self) -> Result<(), ArchiveError> {
        let known: BTreeSet<String> = self
            .backend
            .sql()
            .rows("SELECT metric FROM indexed_metrics", &[])?
            .iter()
            .filter_map(|r| Some(r.first()?.text()?.to_string()))
            .collect();
        let missing: Vec<Metric> = Metric::ALL
            .into_iter()
            .filter(|m| !known.contains(m.name()))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let mut after = String::new();
        loop {
            let rows = self.backend.sql().rows(
                "SELECT id, doc FROM results WHERE id > $1 ORDER BY id LIMIT $2",
                &[Value::Text(Some(after.clone())), Value::Int(Some(CHUNK))],
            )?;
            let Some(last) = rows.last().and_then(|r| r.first()?.text()) else {
                break;
            };
            after = last.to_string();
            let figures: Vec<_> = rows
                .iter()
                .filter_map(|r| sonde_model::load_result(r.get(1)?.text()?).ok())
                .flat_map(|r| row::figure_rows(&r, &missing))
                .collect();
            self.backend
                .transaction(&mut |tx| row::put_rows(tx, row::figure_insert_kept, &figures))?;
        }
        self.backend.transaction(&mut |tx| {
            for m in &missing {
                tx.execute(
                    "INSERT INTO indexed_metrics (metric) VALUES ($1) ON CONFLICT (metric) DO \
                     NOTHING",
                    &[Value::Text(Some(m.name().to_string()))],
                )?;
            }
            Ok(())
        })?;
        tracing::debug!(metrics = ?missing, "archive indexed new metrics");
        Ok(())
    }

    /// The overall value of `metric` (both directions together for a
    /// bidirectional test) of each of the results `ids` that has one.
    pub fn overall_values(
        &mut self,
        ids: &[String],
        metric: Metric,
    ) -> Result<BTreeMap<String, f64>, ArchiveError> {
        let mut out = BTreeMap::new();
        for chunk in ids.chunks(200) {
            let marks: Vec<String> = (3..chunk.len() + 3).map(|i| format!("${i}")).collect();
            let sql = format!(
                "SELECT result_id, value FROM result_figures WHERE direction = $1 AND metric = \
                 $2 AND result_id IN ({})",
                marks.join(", ")
            );
            let mut params = vec![
                Value::Text(Some(row::OVERALL.to_string())),
                Value::Text(Some(metric.name().to_string())),
            ];
            params.extend(chunk.iter().map(|i| Value::Text(Some(i.clone()))));
            for r in self.backend.sql().rows(&sql, &params)? {
                if let (Some(id), Some(v)) = (
                    r.first().and_then(Value::text),
                    r.get(1).and_then(Value::real),
                ) {
                    out.insert(id.to_string(), v);
                }
            }
        }
        Ok(out)
    }
}

/// The `FROM … WHERE …` of the figures of `metric` that `filter` selects,
/// with its parameters: `result_figures f` joined to `results`, the
/// directions' own rows (never the overall ones), the filter's
/// `direction` read as the figure's own (`forward` or `reverse`, of a
/// one-way or a bidirectional test alike) except `bidir`, which selects
/// both directions of the bidirectional tests.
pub(crate) fn figures_from(filter: &ResultFilter, metric: Metric) -> (String, Vec<Value>) {
    let direction = filter.direction.clone();
    let of_results = ResultFilter {
        direction: None,
        ..filter.clone()
    };
    let (clause, mut params) = of_results.clause();
    params.push(Value::Text(Some(metric.name().to_string())));
    let mut sql = format!(
        "FROM result_figures f JOIN results ON results.id = f.result_id AND results.start_ns = \
         f.start_ns WHERE results.id IN \
         (SELECT id FROM results WHERE {clause}) AND f.metric = ${} AND f.direction <> '{}'",
        params.len(),
        row::OVERALL
    );
    match direction.as_deref() {
        None => {}
        Some("bidir") => sql.push_str(" AND results.direction = 'bidir'"),
        Some(d) => {
            params.push(Value::Text(Some(d.to_string())));
            sql.push_str(&format!(" AND f.direction = ${}", params.len()));
        }
    }
    (sql, params)
}
