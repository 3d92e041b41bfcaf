//! Alerts as the archive keeps them (schema migration 8): each rule's
//! state on each path (up or not, the run of samples toward a change,
//! the latest samples a pattern looks at), and every notice an alert gave
//! when it was raised or cleared. The evaluation itself is sonde-alerts';
//! the archive only keeps what it needs to go on after a restart.
//!
//! The alerts take results from the archive's local queue
//! `local:alerts` (filled in the transaction that keeps a result, as a
//! forwarding destination's is); a batch's new states, its notices and
//! the results it took off the queue are written in one transaction, so
//! a result is counted once even if the process is killed mid-batch.

use crate::outbox::dequeue;
use crate::sql::Value;
use crate::{ArchiveError, Store};
use serde::Serialize;

/// One rule's state on one path.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[schemars(rename = "AlertState")]
pub struct AlertStateRow {
    pub rule: String,
    /// The path's key (its fields joined by `|`).
    pub path: String,
    /// The path in words.
    pub label: String,
    pub up: bool,
    /// Samples in a row toward a change.
    pub run: i64,
    /// The latest samples, oldest first (`None`: unknown).
    pub history: Vec<Option<f64>>,
    /// When it was last raised, while it is up.
    pub since_ns: Option<i64>,
    pub last_value: Option<f64>,
    pub last_result: Option<String>,
    pub updated_ns: i64,
    /// The incident it opened, if it did.
    pub incident_id: Option<i64>,
}

/// A notice: an alert raised or cleared by a result.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct AlertEvent {
    pub rule: String,
    pub path: String,
    pub label: String,
    /// `raised` or `cleared`.
    #[schemars(extend("enum" = ["raised", "cleared"]))]
    pub edge: String,
    pub at_ns: i64,
    pub value: Option<f64>,
    pub result_id: String,
    /// The rule's condition in words.
    pub detail: String,
}

fn text(v: &str) -> Value {
    Value::Text(Some(v.to_string()))
}

const STATE_COLUMNS: &str = "rule, path, label, up, run, history, since_ns, last_value, \
                             last_result, updated_ns, incident_id";

fn read_state(r: &[Value]) -> Option<AlertStateRow> {
    let t = |i: usize| r.get(i).and_then(Value::text).map(str::to_string);
    Some(AlertStateRow {
        rule: t(0)?,
        path: t(1)?,
        label: t(2)?,
        up: r.get(3)?.int()? != 0,
        run: r.get(4)?.int()?,
        history: serde_json::from_str(&t(5)?).unwrap_or_default(),
        since_ns: r.get(6).and_then(Value::int),
        last_value: r.get(7).and_then(Value::real),
        last_result: t(8),
        updated_ns: r.get(9)?.int()?,
        incident_id: r.get(10).and_then(Value::int),
    })
}

fn read_event(r: &[Value]) -> Option<AlertEvent> {
    let t = |i: usize| r.get(i).and_then(Value::text).map(str::to_string);
    Some(AlertEvent {
        rule: t(0)?,
        path: t(1)?,
        label: t(2)?,
        edge: t(3)?,
        at_ns: r.get(4)?.int()?,
        value: r.get(5).and_then(Value::real),
        result_id: t(6)?,
        detail: t(7)?,
    })
}

impl Store {
    /// Every alert state, raised ones first, then by rule and path.
    pub fn alert_states(&mut self) -> Result<Vec<AlertStateRow>, ArchiveError> {
        let rows = self.backend.sql().rows(
            &format!("SELECT {STATE_COLUMNS} FROM alert_states ORDER BY up DESC, rule, path"),
            &[],
        )?;
        Ok(rows.iter().filter_map(|r| read_state(r)).collect())
    }

    /// The notices since `since_ns`, newest first, at most `limit`.
    pub fn alert_events(
        &mut self,
        since_ns: i64,
        limit: i64,
    ) -> Result<Vec<AlertEvent>, ArchiveError> {
        let rows = self.backend.sql().rows(
            "SELECT rule, path, label, edge, at_ns, value, result_id, detail FROM alert_events \
             WHERE at_ns >= $1 ORDER BY at_ns DESC, rule, path LIMIT $2",
            &[Value::Int(Some(since_ns)), Value::Int(Some(limit.max(1)))],
        )?;
        Ok(rows.iter().filter_map(|r| read_event(r)).collect())
    }

    /// How many notices each rule gave, by edge: `(rule, edge, count)`.
    pub fn alert_notice_counts(&mut self) -> Result<Vec<(String, String, i64)>, ArchiveError> {
        let rows = self.backend.sql().rows(
            "SELECT rule, edge, COUNT(*) FROM alert_events GROUP BY rule, edge ORDER BY rule, edge",
            &[],
        )?;
        Ok(rows
            .iter()
            .filter_map(|r| {
                Some((
                    r.first()?.text()?.to_string(),
                    r.get(1)?.text()?.to_string(),
                    r.get(2)?.int()?,
                ))
            })
            .collect())
    }

    /// Writes a batch's work in one transaction: the `states` it changed,
    /// its `events`, and `taken` off the queue `queue`.
    pub fn alert_batch(
        &mut self,
        queue: &str,
        states: &[AlertStateRow],
        events: &[AlertEvent],
        taken: &[String],
    ) -> Result<(), ArchiveError> {
        self.backend.transaction(&mut |tx| {
            for s in states {
                let history = serde_json::to_string(&s.history).unwrap_or_else(|_| "[]".into());
                tx.execute(
                    &format!(
                        "INSERT INTO alert_states ({STATE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, \
                         $6, $7, $8, $9, $10, $11) ON CONFLICT (rule, path) DO UPDATE SET \
                         label = excluded.label, up = excluded.up, run = excluded.run, \
                         history = excluded.history, since_ns = excluded.since_ns, \
                         last_value = excluded.last_value, last_result = excluded.last_result, \
                         updated_ns = excluded.updated_ns, incident_id = excluded.incident_id"
                    ),
                    &[
                        text(&s.rule),
                        text(&s.path),
                        text(&s.label),
                        Value::Bool(s.up),
                        Value::Int(Some(s.run)),
                        text(&history),
                        Value::Int(s.since_ns),
                        Value::Real(s.last_value),
                        Value::Text(s.last_result.clone()),
                        Value::Int(Some(s.updated_ns)),
                        Value::Int(s.incident_id),
                    ],
                )?;
            }
            for e in events {
                tx.execute(
                    "INSERT INTO alert_events (rule, path, label, edge, at_ns, value, result_id, \
                     detail) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING",
                    &[
                        text(&e.rule),
                        text(&e.path),
                        text(&e.label),
                        text(&e.edge),
                        Value::Int(Some(e.at_ns)),
                        Value::Real(e.value),
                        text(&e.result_id),
                        text(&e.detail),
                    ],
                )?;
            }
            dequeue(tx, queue, taken)?;
            Ok(())
        })
    }

    /// Forgets the states of every rule not in `rules` (a rule taken out
    /// of the configuration, or renamed, is raised nowhere any more);
    /// their notices stay. Returns how many states went.
    pub fn alert_forget_except(&mut self, rules: &[&str]) -> Result<u64, ArchiveError> {
        let kept = self
            .backend
            .sql()
            .texts("SELECT DISTINCT rule FROM alert_states ORDER BY rule", &[])?;
        let mut gone = 0;
        self.backend.transaction(&mut |tx| {
            gone = 0;
            for rule in kept.iter().filter(|r| !rules.contains(&r.as_str())) {
                gone += tx.execute("DELETE FROM alert_states WHERE rule = $1", &[text(rule)])?;
            }
            Ok(())
        })?;
        Ok(gone)
    }

    /// Opens `new` at `now_ns` for the alert `rule` on `path` and records
    /// it as that alert's incident, in one transaction: a crash cannot
    /// leave the incident opened but not linked (a clear would then not
    /// find it to comment on). Returns its id.
    pub fn open_alert_incident(
        &mut self,
        rule: &str,
        path: &str,
        new: &sonde_incidents::NewIncident,
        now_ns: i64,
    ) -> Result<i64, ArchiveError> {
        new.validate()?;
        let mut id = 0;
        self.backend.transaction(&mut |tx| {
            id = crate::incidents::insert_incident(tx, new, now_ns)?;
            tx.execute(
                "UPDATE alert_states SET incident_id = $3 WHERE rule = $1 AND path = $2",
                &[text(rule), text(path), Value::Int(Some(id))],
            )?;
            Ok(())
        })?;
        Ok(id)
    }
}
