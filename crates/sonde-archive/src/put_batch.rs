//! Results kept many at once: each table written with multi-row
//! statements for the whole batch (a forwarded backlog, an ingest, an
//! import), not a statement per row. The rows every index table needs
//! are derived once per result, and only for the results that were new.

use crate::path_latest::{self, PathLatest};
use crate::row::{self, Placement};
use crate::sql::{Sql, Value};
use crate::{latest, outbox, path_changes, ArchiveError};
use sonde_model::{Metric, TestResult, TestSpec};
use std::collections::HashSet;

/// One result to keep: where it is placed, and its document.
pub(crate) struct Keep<'a> {
    pub result: &'a TestResult,
    pub at: &'a Placement,
    pub doc: String,
}

/// Results rows written by one statement (20 parameters each).
const RESULTS_PER_STATEMENT: usize = 200;

/// Keeps `batch` in the transaction `tx`: every result not kept already
/// with its intervals, figures and labels, each path's latest, route
/// changes and the forwarding queue. An id kept before, or twice in the
/// batch, is written once. Returns the ids that were new, in the batch's
/// order.
pub(crate) fn put_results_in(
    tx: &mut dyn Sql,
    batch: &[Keep<'_>],
) -> Result<Vec<String>, ArchiveError> {
    let mut once = HashSet::new();
    let unique: Vec<&Keep<'_>> = batch.iter().filter(|k| once.insert(k.result.id)).collect();
    let mut inserted = HashSet::new();
    for chunk in unique.chunks(RESULTS_PER_STATEMENT) {
        let params: Vec<Value> = chunk
            .iter()
            .flat_map(|k| row::result_row(k.result, k.at, k.doc.clone()))
            .collect();
        inserted.extend(tx.texts(&row::result_insert(chunk.len()), &params)?);
    }
    let new: Vec<(&Keep<'_>, String)> = unique
        .into_iter()
        .map(|k| (k, k.result.id.to_string()))
        .filter(|(_, id)| inserted.contains(id))
        .collect();
    if new.is_empty() {
        return Ok(Vec::new());
    }

    let intervals: Vec<Vec<Value>> = new
        .iter()
        .flat_map(|(k, _)| row::interval_rows(k.result))
        .collect();
    row::put_rows(tx, row::interval_insert, &intervals)?;
    // The results are new: their figures and labels are written without
    // looking for them first, each key once.
    let figures: Vec<[Value; 5]> = new
        .iter()
        .flat_map(|(k, _)| {
            row::first_of_each(row::figure_rows(k.result, &Metric::ALL), row::FIGURE_KEY)
        })
        .collect();
    row::put_rows(tx, row::figure_insert, &figures)?;
    let labels: Vec<[Value; 4]> = new
        .iter()
        .flat_map(|(k, id)| {
            let start = row::ns(&k.result.start);
            k.at.labels.iter().map(move |(key, value)| {
                [
                    Value::Text(Some(id.clone())),
                    Value::Text(Some(key.clone())),
                    Value::Text(Some(value.clone())),
                    Value::Int(Some(start)),
                ]
            })
        })
        .collect();
    row::put_rows(tx, row::label_insert, &labels)?;

    // A method's trials are not their path's latest (as the overview),
    // nor its route's history.
    let own: Vec<&(&Keep<'_>, String)> = new
        .iter()
        .filter(|(k, _)| k.at.method_id.is_none())
        .collect();
    latest::keep(
        tx,
        own.iter()
            .map(|(k, id)| latest::Latest::of(k.result, k.at, id)),
    )?;
    path_latest::keep(tx, own.iter().flat_map(|(k, _)| PathLatest::of(k.result)))?;
    for (k, _) in &own {
        if matches!(k.result.spec, TestSpec::Trace(_)) {
            path_changes::record(tx, k.result)?;
        }
    }
    let ids: Vec<String> = new.into_iter().map(|(_, id)| id).collect();
    outbox::enqueue(tx, &ids, outbox::ItemKind::Result)?;
    Ok(ids)
}
