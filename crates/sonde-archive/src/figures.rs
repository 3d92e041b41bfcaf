//! Each direction's own figures (`result_figures`): what stats, charts
//! and heat maps read, so that a bidirectional test is two rows, forward
//! and reverse, and never their sum.

use crate::filter::ResultFilter;
use crate::row;
use crate::sql::Value;
use crate::{ArchiveError, Store};

/// Bidirectional results whose documents are read at a time while an
/// archive from before `result_figures` is filled.
const CHUNK: i64 = 500;

impl Store {
    /// Fills the rows of the bidirectional results kept before
    /// `result_figures` existed (once, as the archive is migrated to it;
    /// the migration copied every other result from its columns). A
    /// document that no longer reads is passed over.
    pub(crate) fn backfill_bidir_figures(&mut self) -> Result<(), ArchiveError> {
        let mut after = String::new();
        loop {
            let rows = self.backend.sql().rows(
                "SELECT id, doc FROM results WHERE direction = 'bidir' AND id > $1 ORDER BY id \
                 LIMIT $2",
                &[Value::Text(Some(after.clone())), Value::Int(Some(CHUNK))],
            )?;
            let Some(last) = rows.last().and_then(|r| r.first()?.text()) else {
                return Ok(());
            };
            after = last.to_string();
            let results: Vec<_> = rows
                .iter()
                .filter_map(|r| sonde_model::load_result(r.get(1)?.text()?).ok())
                .collect();
            self.backend.transaction(&mut |tx| {
                for r in &results {
                    for params in row::figure_rows(r) {
                        tx.execute(row::FIGURE_INSERT, &params)?;
                    }
                }
                Ok(())
            })?;
        }
    }
}

/// The `FROM … WHERE …` of the figures `filter` selects, with its
/// parameters: `result_figures f` joined to `results`, the filter's
/// `direction` read as the figure's own (`forward` or `reverse`, of a
/// one-way or a bidirectional test alike) except `bidir`, which selects
/// both directions of the bidirectional tests.
pub(crate) fn figures_from(filter: &ResultFilter) -> (String, Vec<Value>) {
    let direction = filter.direction.clone();
    let of_results = ResultFilter {
        direction: None,
        ..filter.clone()
    };
    let (clause, mut params) = of_results.clause();
    let mut sql = format!(
        "FROM result_figures f JOIN results ON results.id = f.result_id WHERE results.id IN \
         (SELECT id FROM results WHERE {clause})"
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
