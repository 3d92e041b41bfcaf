//! The archive's incidents (schema migration 6, docs/incidents.md):
//! each kept with its addresses and their owners (found when it is
//! opened), its comments and the history of every change. Every change
//! writes its history row in the same transaction, and first touches the
//! incident's row, so that two changes of one incident take their turns.

use crate::constituencies::{int, owners_in, text};
use crate::sql::{Sql, Value};
use crate::{ArchiveError, Store};
use sonde_incidents::{
    Comment, HistoryEntry, Incident, IncidentAddress, IncidentChange, IncidentError, NewIncident,
    Role, Severity, Status, INITIAL_STATE,
};

/// Which incidents to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IncidentFilter {
    pub status: Option<Status>,
    /// Only those with an address this constituency owns.
    pub owner: Option<String>,
    /// At most this many, newest first (100 when absent).
    pub limit: Option<usize>,
}

fn not_found(id: i64) -> ArchiveError {
    ArchiveError::Incident(IncidentError::NotFound {
        what: "incident",
        name: id.to_string(),
    })
}

/// Marks incident `id` changed at `now_ns` (taking its row's lock);
/// refuses an incident that is not there.
fn touch(tx: &mut dyn Sql, id: i64, now_ns: i64) -> Result<(), ArchiveError> {
    let n = tx.execute(
        "UPDATE incidents SET updated_ns = $2 WHERE id = $1",
        &[int(id), int(now_ns)],
    )?;
    if n == 0 {
        return Err(not_found(id));
    }
    Ok(())
}

fn next_seq(tx: &mut dyn Sql, table: &str, id: i64) -> Result<i64, ArchiveError> {
    Ok(tx
        .int(
            &format!("SELECT COALESCE(MAX(seq), 0) + 1 FROM {table} WHERE incident = $1"),
            &[int(id)],
        )?
        .unwrap_or(1))
}

/// Writes one history row of incident `id`.
pub(crate) fn history(
    tx: &mut dyn Sql,
    id: i64,
    now_ns: i64,
    actor: &str,
    what: &str,
    old: Option<&str>,
    new: Option<&str>,
) -> Result<(), ArchiveError> {
    let seq = next_seq(tx, "incident_history", id)?;
    tx.execute(
        "INSERT INTO incident_history (incident, seq, at_ns, actor, what, old_value, new_value) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
        &[
            int(id),
            int(seq),
            int(now_ns),
            text(actor),
            text(what),
            Value::Text(old.map(str::to_string)),
            Value::Text(new.map(str::to_string)),
        ],
    )?;
    Ok(())
}

/// Sets incident `id`'s state, status and severity as `change` says,
/// with a history row for each that differs.
pub(crate) fn change_in(
    tx: &mut dyn Sql,
    id: i64,
    change: &IncidentChange,
    actor: &str,
    now_ns: i64,
) -> Result<(), ArchiveError> {
    touch(tx, id, now_ns)?;
    let row = tx.rows(
        "SELECT state, status, severity FROM incidents WHERE id = $1",
        &[int(id)],
    )?;
    let col = |i: usize| {
        row.first()
            .and_then(|r| r.get(i))
            .and_then(Value::text)
            .unwrap_or_default()
            .to_string()
    };
    let fields = [
        ("state", col(0), change.state.clone()),
        ("status", col(1), change.status.map(|s| s.to_string())),
        ("severity", col(2), change.severity.map(|s| s.to_string())),
    ];
    for (field, old, new) in fields {
        let Some(new) = new.filter(|n| *n != old) else {
            continue;
        };
        tx.execute(
            &format!("UPDATE incidents SET {field} = $2 WHERE id = $1"),
            &[int(id), text(&new)],
        )?;
        history(tx, id, now_ns, actor, field, Some(&old), Some(&new))?;
    }
    Ok(())
}

/// Inserts `new` (validated) in `tx` as `reported` and `open`, each
/// address with the constituency that owns it now, and its first history
/// row; returns its id.
pub(crate) fn insert_incident(
    tx: &mut dyn Sql,
    new: &NewIncident,
    now_ns: i64,
) -> Result<i64, ArchiveError> {
    tx.execute("UPDATE incident_counter SET last_id = last_id + 1", &[])?;
    let id = tx
        .int("SELECT last_id FROM incident_counter", &[])?
        .unwrap_or(1);
    tx.execute(
        "INSERT INTO incidents (id, kind, state, status, severity, summary, source, \
         opened_ns, updated_ns) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)",
        &[
            int(id),
            text(&new.kind),
            text(INITIAL_STATE),
            text(Status::Open.as_str()),
            text(new.severity.as_str()),
            text(&new.summary),
            text(&new.source),
            int(now_ns),
        ],
    )?;
    let owners = owners_in(tx)?;
    for (seq, (addr, role)) in new.addresses.iter().enumerate() {
        let owner = owners.owner_of(*addr).map(|(c, _)| c.to_string());
        tx.execute(
            "INSERT INTO incident_addresses (incident, seq, address, role, owner) \
             VALUES ($1, $2, $3, $4, $5)",
            &[
                int(id),
                int(seq as i64 + 1),
                text(&addr.to_string()),
                text(role.as_str()),
                Value::Text(owner),
            ],
        )?;
    }
    history(
        tx,
        id,
        now_ns,
        &new.source,
        "opened",
        None,
        Some(INITIAL_STATE),
    )?;
    Ok(id)
}

impl Store {
    /// Opens `new` at `now_ns` as `reported` and `open`, each address
    /// with the constituency that owns it now; returns its id.
    pub fn open_incident(&mut self, new: &NewIncident, now_ns: i64) -> Result<i64, ArchiveError> {
        new.validate()?;
        let mut id = 0;
        self.backend.transaction(&mut |tx| {
            id = insert_incident(tx, new, now_ns)?;
            Ok(())
        })?;
        Ok(id)
    }

    /// Adds a comment to incident `id` (and its history row).
    pub fn comment_incident(
        &mut self,
        id: i64,
        author: &str,
        text_: &str,
        now_ns: i64,
    ) -> Result<(), ArchiveError> {
        sonde_incidents::model::check_text("author", author, 100, false)?;
        sonde_incidents::model::check_text("text", text_, 20_000, true)?;
        self.backend.transaction(&mut |tx| {
            touch(tx, id, now_ns)?;
            let seq = next_seq(tx, "incident_comments", id)?;
            tx.execute(
                "INSERT INTO incident_comments (incident, seq, author, text, at_ns) \
                 VALUES ($1, $2, $3, $4, $5)",
                &[int(id), int(seq), text(author), text(text_), int(now_ns)],
            )?;
            history(
                tx,
                id,
                now_ns,
                author,
                "comment",
                None,
                Some(&seq.to_string()),
            )
        })
    }

    /// Changes incident `id`'s state, status or severity, as `actor`.
    pub fn change_incident(
        &mut self,
        id: i64,
        change: &IncidentChange,
        actor: &str,
        now_ns: i64,
    ) -> Result<(), ArchiveError> {
        change.validate()?;
        self.backend
            .transaction(&mut |tx| change_in(tx, id, change, actor, now_ns))
    }

    /// Incident `id` with its addresses, comments and history; `None`:
    /// no such incident.
    pub fn incident(&mut self, id: i64) -> Result<Option<Incident>, ArchiveError> {
        let Some(mut incident) = self.incident_rows("WHERE id = $1", &[int(id)], 1)?.pop() else {
            return Ok(None);
        };
        let sql = self.backend.sql();
        let comments = sql.rows(
            "SELECT author, text, at_ns FROM incident_comments WHERE incident = $1 ORDER BY seq",
            &[int(id)],
        )?;
        incident.comments = comments
            .iter()
            .map(|r| Comment {
                author: col(r, 0).unwrap_or_default(),
                text: col(r, 1).unwrap_or_default(),
                at_ns: r.get(2).and_then(Value::int).unwrap_or(0),
            })
            .collect();
        let history = sql.rows(
            "SELECT at_ns, actor, what, old_value, new_value FROM incident_history \
             WHERE incident = $1 ORDER BY seq",
            &[int(id)],
        )?;
        incident.history = history
            .iter()
            .map(|r| HistoryEntry {
                at_ns: r.first().and_then(Value::int).unwrap_or(0),
                actor: col(r, 1).unwrap_or_default(),
                what: col(r, 2).unwrap_or_default(),
                old: col(r, 3),
                new: col(r, 4),
            })
            .collect();
        Ok(Some(incident))
    }

    /// Incidents as `filter` says, newest first, with their addresses
    /// (not their comments and history).
    pub fn incidents(&mut self, filter: &IncidentFilter) -> Result<Vec<Incident>, ArchiveError> {
        let mut clauses = Vec::new();
        let mut params = Vec::new();
        if let Some(s) = filter.status {
            params.push(text(s.as_str()));
            clauses.push(format!("status = ${}", params.len()));
        }
        if let Some(o) = &filter.owner {
            params.push(text(o));
            clauses.push(format!(
                "id IN (SELECT incident FROM incident_addresses WHERE owner = ${})",
                params.len()
            ));
        }
        let filter_sql = if clauses.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", clauses.join(" AND "))
        };
        self.incident_rows(&filter_sql, &params, filter.limit.unwrap_or(100).max(1))
    }

    fn incident_rows(
        &mut self,
        filter_sql: &str,
        params: &[Value],
        limit: usize,
    ) -> Result<Vec<Incident>, ArchiveError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let sql = self.backend.sql();
        let rows = sql.rows(
            &format!(
                "SELECT id, kind, state, status, severity, summary, source, opened_ns, \
                 updated_ns FROM incidents {filter_sql} ORDER BY id DESC LIMIT {limit}"
            ),
            params,
        )?;
        let mut out = Vec::new();
        for r in &rows {
            let id = r.first().and_then(Value::int).unwrap_or(0);
            let addresses = sql
                .rows(
                    "SELECT address, role, owner FROM incident_addresses WHERE incident = $1 \
                     ORDER BY seq",
                    &[int(id)],
                )?
                .iter()
                .filter_map(|a| {
                    Some(IncidentAddress {
                        address: col(a, 0)?.parse().ok()?,
                        role: col(a, 1)?.parse::<Role>().ok()?,
                        owner: col(a, 2),
                    })
                })
                .collect();
            out.push(Incident {
                id,
                kind: col(r, 1).unwrap_or_default(),
                state: col(r, 2).unwrap_or_default(),
                status: col(r, 3).and_then(|s| s.parse().ok()).unwrap_or_default(),
                severity: col(r, 4)
                    .and_then(|s| s.parse::<Severity>().ok())
                    .unwrap_or_default(),
                summary: col(r, 5).unwrap_or_default(),
                source: col(r, 6).unwrap_or_default(),
                opened_ns: r.get(7).and_then(Value::int).unwrap_or(0),
                updated_ns: r.get(8).and_then(Value::int).unwrap_or(0),
                addresses,
                comments: vec![],
                history: vec![],
            });
        }
        Ok(out)
    }
}

fn col(r: &[Value], i: usize) -> Option<String> {
    r.get(i).and_then(Value::text).map(str::to_string)
}
