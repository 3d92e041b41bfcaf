//! Store-and-forward (docs/mesh.md): what this archive has still to
//! deliver to each central archive it forwards to.
//!
//! A destination is registered in the archive itself
//! (`forward_destinations`), so every writer of the archive (campaigns,
//! the API, `--archive`) queues what it keeps for every destination in
//! the same transaction that keeps it: a result is never kept and not
//! queued, whatever process wrote it or when it was killed. A delivery
//! confirmed by the destination removes the items from the queue; one
//! that fails leaves them, with its error, for the next try. Delivery is
//! idempotent by id at the destination, so an item sent twice (a crash
//! between the destination's commit and ours) is still kept once.

use crate::sql::{Sql, Value};
use crate::{ArchiveError, Placement, Store};
use serde::{Deserialize, Serialize};
use sonde_model::clock::now_ns;
use sonde_model::{MethodResult, ResultId, TestResult};
use std::collections::BTreeMap;

/// What is forwarded: a result or a method's own document (its trials
/// travel as results of their own, placed in the method), each with
/// where it belongs.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Item {
    Result {
        #[schemars(with = "sonde_model::schema::ResultDocument")]
        result: TestResult,
        #[serde(default)]
        placement: Placement,
    },
    Method {
        #[schemars(with = "sonde_model::schema::MethodDocument")]
        method: MethodResult,
        #[serde(default)]
        placement: Placement,
    },
}

impl Item {
    pub fn id(&self) -> ResultId {
        match self {
            Item::Result { result, .. } => result.id,
            Item::Method { method, .. } => method.id,
        }
    }
}

/// The kind of a queued item, as the `outbox` table spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ItemKind {
    Result,
    Method,
}

impl ItemKind {
    fn name(self) -> &'static str {
        match self {
            ItemKind::Result => "result",
            ItemKind::Method => "method",
        }
    }
}

/// The next items for one destination, oldest first; and those whose
/// document no longer reads (by id, with why), which can never be
/// delivered.
#[derive(Debug, Default)]
pub struct Outbox {
    pub items: Vec<Item>,
    pub unreadable: Vec<(String, String)>,
}

/// One destination's state: its backlog, the oldest item in it, what was
/// delivered, and the last error.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ForwardStatus {
    pub destination: String,
    /// Items kept here and not yet confirmed by the destination.
    pub backlog: i64,
    /// When the oldest of them was queued (ns since the epoch).
    pub oldest_queued_ns: Option<i64>,
    /// Its id.
    pub oldest_id: Option<String>,
    /// Items delivered since the destination was added.
    pub delivered: i64,
    /// Failed tries since the last delivery.
    pub attempts: i64,
    pub last_ok_ns: Option<i64>,
    pub last_error: Option<String>,
    pub last_error_ns: Option<i64>,
}

fn text(v: &str) -> Value {
    Value::Text(Some(v.to_string()))
}

fn int(v: i64) -> Value {
    Value::Int(Some(v))
}

/// The names of queues a local consumer takes results from (the alerts'
/// is `local:alerts`); never a forwarding destination's name.
pub const LOCAL_PREFIX: &str = "local:";

/// Takes `ids` off `destination`'s queue within `tx`; how many were on
/// it.
pub(crate) fn dequeue(
    tx: &mut dyn Sql,
    destination: &str,
    ids: &[String],
) -> Result<u64, ArchiveError> {
    let mut gone = 0;
    for id in ids {
        gone += tx.execute(
            "DELETE FROM outbox WHERE destination = $1 AND item_id = $2",
            &[text(destination), text(id)],
        )?;
    }
    Ok(gone)
}

/// Queues the items `ids` for every destination, in the transaction
/// that keeps them.
pub(crate) fn enqueue(
    tx: &mut dyn Sql,
    ids: &[String],
    kind: ItemKind,
) -> Result<(), ArchiveError> {
    if ids.is_empty() {
        return Ok(());
    }
    let destinations = tx.texts("SELECT name FROM forward_destinations", &[])?;
    // A nanosecond apart, in the batch's order: the outbox is read in
    // the order items were kept.
    let now = now_ns();
    let rows: Vec<[Value; 4]> = destinations
        .iter()
        .flat_map(|d| {
            ids.iter()
                .zip(now..)
                .map(move |(id, at)| [text(d), text(id), text(kind.name()), int(at)])
        })
        .collect();
    crate::row::put_rows(tx, queue_rows, &rows)
}

/// The statement that queues `rows` (destination, item id, kind, when).
fn queue_rows(rows: usize) -> String {
    format!(
        "INSERT INTO outbox (destination, item_id, kind, queued_ns) VALUES {} ON CONFLICT DO \
         NOTHING",
        crate::row::value_rows(rows, 4)
    )
}

impl Store {
    /// Makes `name` a destination results are forwarded to. A new one is
    /// given everything the archive already keeps (oldest first), so
    /// that adding a central archive later loses nothing. Returns whether
    /// it was new.
    pub fn forward_to(&mut self, name: &str) -> Result<bool, ArchiveError> {
        let mut new = false;
        self.backend.transaction(&mut |tx| {
            let now = now_ns();
            new = tx.execute(
                "INSERT INTO forward_destinations (name, added_ns, delivered, attempts) \
                 VALUES ($1, $2, 0, 0) ON CONFLICT DO NOTHING",
                &[text(name), int(now)],
            )? > 0;
            if new {
                for (kind, table) in [("result", "results"), ("method", "methods")] {
                    tx.execute(
                        &format!(
                            "INSERT INTO outbox (destination, item_id, kind, queued_ns) \
                             SELECT $1, id, $2, start_ns FROM {table} WHERE true \
                             ON CONFLICT DO NOTHING"
                        ),
                        &[text(name), text(kind)],
                    )?;
                }
            }
            Ok(())
        })?;
        Ok(new)
    }

    /// Makes `name` a queue of what is kept from now on (nothing kept
    /// before): a local consumer such as the alerts ([`LOCAL_PREFIX`]).
    /// Returns whether it was new.
    pub fn queue_from_now(&mut self, name: &str) -> Result<bool, ArchiveError> {
        let mut new = false;
        self.backend.transaction(&mut |tx| {
            new = tx.execute(
                "INSERT INTO forward_destinations (name, added_ns, delivered, attempts) \
                 VALUES ($1, $2, 0, 0) ON CONFLICT DO NOTHING",
                &[text(name), int(now_ns())],
            )? > 0;
            Ok(())
        })?;
        Ok(new)
    }

    /// Stops forwarding to every destination not in `keep`, dropping
    /// what was queued for it (a destination taken out of the
    /// configuration must not grow a backlog forever). Local queues
    /// ([`LOCAL_PREFIX`]) are not destinations and stay.
    pub fn forward_only(&mut self, keep: &[&str]) -> Result<Vec<String>, ArchiveError> {
        let known = self
            .backend
            .sql()
            .texts("SELECT name FROM forward_destinations ORDER BY name", &[])?;
        let gone: Vec<String> = known
            .into_iter()
            .filter(|n| !keep.contains(&n.as_str()) && !n.starts_with(LOCAL_PREFIX))
            .collect();
        for name in &gone {
            self.drop_queue(name)?;
        }
        Ok(gone)
    }

    /// Drops the queue `name` and what is in it.
    pub fn drop_queue(&mut self, name: &str) -> Result<(), ArchiveError> {
        self.backend.transaction(&mut |tx| {
            tx.execute("DELETE FROM outbox WHERE destination = $1", &[text(name)])?;
            tx.execute(
                "DELETE FROM forward_destinations WHERE name = $1",
                &[text(name)],
            )?;
            Ok(())
        })
    }

    /// The ids of the next (at most `limit`) results queued for `name`,
    /// oldest first, and of the method documents (which a local consumer
    /// of results only takes off the queue).
    pub fn queued(
        &mut self,
        name: &str,
        limit: usize,
    ) -> Result<(Vec<String>, Vec<String>), ArchiveError> {
        let limit = int(i64::try_from(limit.max(1)).unwrap_or(i64::MAX));
        let rows = self.backend.sql().rows(
            "SELECT item_id, kind FROM outbox WHERE destination = $1 \
             ORDER BY queued_ns, item_id LIMIT $2",
            &[text(name), limit],
        )?;
        let (mut results, mut methods) = (Vec::new(), Vec::new());
        for r in rows {
            let (Some(id), kind) = (
                r.first().and_then(Value::text),
                r.get(1).and_then(Value::text),
            ) else {
                continue;
            };
            if kind == Some("method") {
                methods.push(id.to_string());
            } else {
                results.push(id.to_string());
            }
        }
        Ok((results, methods))
    }

    /// The next (at most `limit`) items queued for `destination`, oldest
    /// first.
    pub fn outbox(&mut self, destination: &str, limit: usize) -> Result<Outbox, ArchiveError> {
        let limit = int(i64::try_from(limit.max(1)).unwrap_or(i64::MAX));
        let rows = self.backend.sql().rows(
            "SELECT o.item_id, o.kind, COALESCE(r.doc, m.doc), COALESCE(r.campaign, m.campaign), \
             COALESCE(r.run_id, m.run_id), r.method_id FROM outbox o \
             LEFT JOIN results r ON o.kind = 'result' AND r.id = o.item_id \
             LEFT JOIN methods m ON o.kind = 'method' AND m.id = o.item_id \
             WHERE o.destination = $1 ORDER BY o.queued_ns, o.item_id LIMIT $2",
            &[text(destination), limit.clone()],
        )?;
        let label_rows = self.backend.sql().rows(
            "SELECT l.result_id, l.key, l.value FROM result_labels l WHERE l.result_id IN \
             (SELECT item_id FROM outbox WHERE destination = $1 AND kind = 'result' \
             ORDER BY queued_ns, item_id LIMIT $2)",
            &[text(destination), limit],
        )?;
        let mut labels: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for l in &label_rows {
            if let (Some(id), Some(k), Some(v)) = (
                l.first().and_then(Value::text),
                l.get(1).and_then(Value::text),
                l.get(2).and_then(Value::text),
            ) {
                labels
                    .entry(id.to_string())
                    .or_default()
                    .insert(k.to_string(), v.to_string());
            }
        }
        let mut out = Outbox::default();
        for row in rows {
            let col = |i: usize| row.get(i).and_then(Value::text).map(str::to_string);
            let id = col(0).unwrap_or_default();
            let Some(doc) = col(2) else {
                out.unreadable
                    .push((id, "no longer in the archive".to_string()));
                continue;
            };
            let mut placement = Placement {
                campaign: col(3),
                run_id: col(4),
                method_id: col(5),
                labels: BTreeMap::new(),
            };
            let item = if col(1).as_deref() == Some("method") {
                serde_json::from_str::<MethodResult>(&doc)
                    .map(|method| Item::Method { method, placement })
                    .map_err(|e| e.to_string())
            } else {
                placement.labels = labels.remove(&id).unwrap_or_default();
                sonde_model::load_result(&doc)
                    .map(|result| Item::Result { result, placement })
                    .map_err(|e| e.to_string())
            };
            match item {
                Ok(i) => out.items.push(i),
                Err(why) => out.unreadable.push((id, why)),
            }
        }
        Ok(out)
    }

    /// Records that `destination` has (or can never have, for unreadable
    /// items) the items `ids`: they leave its queue. Delivered items are
    /// counted; the failed tries are reset.
    pub fn forward_done(
        &mut self,
        destination: &str,
        ids: &[String],
        delivered: bool,
    ) -> Result<(), ArchiveError> {
        self.backend.transaction(&mut |tx| {
            let gone = dequeue(tx, destination, ids)?;
            if delivered {
                tx.execute(
                    "UPDATE forward_destinations SET delivered = delivered + $2, attempts = 0, \
                     last_ok_ns = $3 WHERE name = $1",
                    &[
                        text(destination),
                        int(i64::try_from(gone).unwrap_or(i64::MAX)),
                        int(now_ns()),
                    ],
                )?;
            }
            Ok(())
        })
    }

    /// Records a failed delivery to `destination` and why.
    pub fn forward_failed(&mut self, destination: &str, error: &str) -> Result<(), ArchiveError> {
        self.backend.transaction(&mut |tx| {
            tx.execute(
                "UPDATE forward_destinations SET attempts = attempts + 1, last_error = $2, \
                 last_error_ns = $3 WHERE name = $1",
                &[text(destination), text(error), int(now_ns())],
            )?;
            Ok(())
        })
    }

    /// Every destination's state, by name.
    pub fn forward_status(&mut self) -> Result<Vec<ForwardStatus>, ArchiveError> {
        Ok(self
            .queue_status()?
            .into_iter()
            .filter(|q| !q.destination.starts_with(LOCAL_PREFIX))
            .collect())
    }

    /// The local queue `name`'s state ([`LOCAL_PREFIX`]), if it exists.
    pub fn local_queue_status(
        &mut self,
        name: &str,
    ) -> Result<Option<ForwardStatus>, ArchiveError> {
        Ok(self
            .queue_status()?
            .into_iter()
            .find(|q| q.destination == name))
    }

    /// Every queue's state, destinations and local queues alike.
    fn queue_status(&mut self) -> Result<Vec<ForwardStatus>, ArchiveError> {
        let rows = self.backend.sql().rows(
            "SELECT d.name, d.delivered, d.attempts, d.last_ok_ns, d.last_error, \
             d.last_error_ns, (SELECT COUNT(*) FROM outbox o WHERE o.destination = d.name), \
             (SELECT MIN(o.queued_ns) FROM outbox o WHERE o.destination = d.name) \
             FROM forward_destinations d ORDER BY d.name",
            &[],
        )?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let text_at = |i: usize| row.get(i).and_then(Value::text).map(str::to_string);
            let int_at = |i: usize| row.get(i).and_then(Value::int);
            let destination = text_at(0).unwrap_or_default();
            let oldest_queued_ns = int_at(7);
            let oldest_id = match oldest_queued_ns {
                Some(at) => self
                    .backend
                    .sql()
                    .texts(
                        "SELECT item_id FROM outbox WHERE destination = $1 AND queued_ns = $2 \
                         ORDER BY item_id LIMIT 1",
                        &[text(&destination), int(at)],
                    )?
                    .into_iter()
                    .next(),
                None => None,
            };
            out.push(ForwardStatus {
                backlog: int_at(6).unwrap_or(0),
                oldest_queued_ns,
                oldest_id,
                delivered: int_at(1).unwrap_or(0),
                attempts: int_at(2).unwrap_or(0),
                last_ok_ns: int_at(3),
                last_error: text_at(4),
                last_error_ns: int_at(5),
                destination,
            });
        }
        Ok(out)
    }

    /// Keeps forwarded items (a central archive's side), in one
    /// transaction: all or none. An item already kept changes nothing.
    /// Returns how many were new.
    pub fn put_items(&mut self, items: &[Item]) -> Result<usize, ArchiveError> {
        let docs: Vec<String> = items
            .iter()
            .map(|i| match i {
                Item::Result { result, .. } => self.document(result.id, result),
                Item::Method { method, .. } => {
                    let mut bare = method.clone();
                    bare.trials.clear();
                    self.document(method.id, &bare)
                }
            })
            .collect::<Result<_, _>>()?;
        let mut new = 0;
        self.backend.transaction(&mut |tx| {
            new = 0;
            // Each run of results at once, in the batch's order.
            let mut results = Vec::new();
            for (item, doc) in items.iter().zip(&docs) {
                match item {
                    Item::Method { method, placement } => {
                        new += crate::put_batch::put_results_in(tx, &results)?.len();
                        results.clear();
                        let kept = crate::put_method_in(tx, method, placement, doc.clone())?;
                        new += usize::from(kept);
                    }
                    Item::Result { result, placement } => results.push(crate::Keep {
                        result,
                        at: placement,
                        doc: doc.clone(),
                    }),
                }
            }
            new += crate::put_batch::put_results_in(tx, &results)?.len();
            Ok(())
        })?;
        Ok(new)
    }
}
