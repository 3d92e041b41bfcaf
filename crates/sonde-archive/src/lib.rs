//! sonde's archive: every result kept in a real database.
//!
//! One [`Store`] over two backends with one schema ([`schema`]): SQLite,
//! embedded, the default (a file, WAL mode), and PostgreSQL for a central
//! archive (`postgres://…`). Migrations are applied on open; an archive
//! written by a newer sonde is refused by name. A result is written in one
//! transaction, whole document and indexed columns and interval series
//! together, and a second write of the same id changes nothing, so a retry
//! never duplicates (docs/archive.md).

mod alert_states;
mod constituencies;
mod csv_out;
mod export_page;
mod figures;
mod filter;
mod incidents;
mod interfaces;
mod latest;
mod mail_templates;
mod mesh_agents;
mod open;
mod outbox;
mod partition;
mod path_changes;
mod path_latest;
mod pg;
mod pg_tls;
mod pool;
mod put_batch;
mod query;
mod readings;
mod row;
mod run_steps;
mod runs;
pub mod schema;
mod sql;
mod sqlite;

pub use alert_states::{AlertEvent, AlertStateRow};
pub use csv_out::{write_csv, write_csv_part};
pub use export_page::{Chunk, Cursor, PageOf};
pub use filter::ResultFilter;
pub use incidents::IncidentFilter;
pub use interfaces::{Counters, InterfaceSample};
pub use latest::ResultRow;
pub use mesh_agents::{AgentInfo, MeshAgent};
pub use outbox::{ForwardStatus, Item, Outbox, LOCAL_PREFIX};
pub use partition::{Dropped, Month};
pub use path_changes::PathChangeRow;
pub use path_latest::PathLatest;
pub use pool::StorePool;
pub use query::{ExportRows, Grouping, HeatCell, MetricPoint};
pub use readings::{ReadingSeries, ReadingsQuery, ReadingsWrite};
pub use row::Placement;
pub use run_steps::{StepKey, StepRow, StepState};
pub use runs::{CampaignRow, Lease, RunRow, RunState};
pub use sql::Value;

use put_batch::Keep;
use sonde_model::{MethodResult, ResultId, TestResult};
use sql::{Backend, Sql};
use std::path::PathBuf;

/// Why the archive could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("archive {location}: {message}")]
    Database { location: String, message: String },
    #[error(
        "archive {location} has schema version {found}, newer than this sonde reads (up to \
         {supported}): upgrade sonde"
    )]
    TooNew {
        location: String,
        found: i64,
        supported: u32,
    },
    /// A read-only archive (a streaming replica) whose schema is not
    /// this build's: its primary has not been opened by this sonde yet,
    /// or the replica has not caught up with the migration.
    #[error(
        "archive {location} (read-only) has schema version {found}, this sonde reads {supported}: \
         open the primary with this sonde first (it migrates), then wait for the replica"
    )]
    ReadOnlyVersion {
        location: String,
        found: i64,
        supported: u32,
    },
    /// An incident, constituency or template refused (bad, missing or
    /// already there): no fault of the database.
    #[error("{0}")]
    Incident(#[from] sonde_incidents::IncidentError),
    #[error("archive {location}: result {id} does not read back: {message}")]
    Document {
        location: String,
        id: String,
        message: String,
    },
}

/// Where the archive is by default: `$XDG_DATA_HOME/sonde/sonde.db`
/// (`~/.local/share/sonde/sonde.db`), or `/var/lib/sonde/sonde.db` for a
/// daemon (`system`).
pub fn default_path(system: bool) -> PathBuf {
    if system {
        return PathBuf::from("/var/lib/sonde/sonde.db");
    }
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."));
    data.join("sonde").join("sonde.db")
}

/// The archive.
pub struct Store {
    backend: Box<dyn Backend>,
}

impl Store {
    /// Keeps `r` (placed in a campaign's run or a method, if so): its
    /// document, its columns and its interval series, in one transaction.
    /// Returns whether it was new: a result already kept is left as it is.
    pub fn put_result(&mut self, r: &TestResult, at: &Placement) -> Result<bool, ArchiveError> {
        let doc = self.document(r.id, r)?;
        let mut new = false;
        self.backend.transaction(&mut |tx| {
            let keep = Keep {
                result: r,
                at,
                doc: doc.clone(),
            };
            new = !put_batch::put_results_in(tx, &[keep])?.is_empty();
            Ok(())
        })?;
        Ok(new)
    }

    /// The route changes kept (a trace that differed from the one before
    /// it on its path), newest first; toward `target` (an address) only
    /// when given.
    pub fn path_changes(
        &mut self,
        target: Option<&str>,
        limit: i64,
    ) -> Result<Vec<PathChangeRow>, ArchiveError> {
        path_changes::list(self.backend.sql(), target, limit)
    }

    /// Keeps many results in one transaction (an import, a backlog): all
    /// or none. Returns how many were new.
    pub fn put_results(
        &mut self,
        results: &[(TestResult, Placement)],
    ) -> Result<usize, ArchiveError> {
        let docs: Vec<String> = results
            .iter()
            .map(|(r, _)| self.document(r.id, r))
            .collect::<Result<_, _>>()?;
        let mut new = 0;
        self.backend.transaction(&mut |tx| {
            let batch: Vec<Keep<'_>> = results
                .iter()
                .zip(&docs)
                .map(|((result, at), doc)| Keep {
                    result,
                    at,
                    doc: doc.clone(),
                })
                .collect();
            new = put_batch::put_results_in(tx, &batch)?.len();
            Ok(())
        })?;
        Ok(new)
    }

    /// Keeps a method's result and each of its trials (placed in the
    /// method), in one transaction. Returns whether the method was new.
    pub fn put_method(&mut self, m: &MethodResult, at: &Placement) -> Result<bool, ArchiveError> {
        // The method's document without its trials: they are kept as
        // results of their own, found by `method_id`.
        let mut bare = m.clone();
        bare.trials.clear();
        let doc = self.document(m.id, &bare)?;
        let trials: Vec<(String, &TestResult)> = m
            .trials
            .iter()
            .map(|t| self.document(t.id, t).map(|d| (d, t)))
            .collect::<Result<_, _>>()?;
        let in_method = Placement {
            method_id: Some(m.id.to_string()),
            ..at.clone()
        };
        let mut new = false;
        self.backend.transaction(&mut |tx| {
            new = put_method_in(tx, &bare, at, doc.clone())?;
            let batch: Vec<Keep<'_>> = trials
                .iter()
                .map(|(doc, result)| Keep {
                    result,
                    at: &in_method,
                    doc: doc.clone(),
                })
                .collect();
            put_batch::put_results_in(tx, &batch)?;
            Ok(())
        })?;
        Ok(new)
    }

    fn document<T: serde::Serialize>(&self, id: ResultId, v: &T) -> Result<String, ArchiveError> {
        serde_json::to_string(v).map_err(|e| ArchiveError::Document {
            location: self.location().to_string(),
            id: id.to_string(),
            message: e.to_string(),
        })
    }

    /// The result with `id`, read back through the versioned loader.
    pub fn get_result(&mut self, id: ResultId) -> Result<Option<TestResult>, ArchiveError> {
        let docs = self.backend.sql().texts(
            "SELECT doc FROM results WHERE id = $1",
            &[Value::Text(Some(id.to_string()))],
        )?;
        docs.first()
            .map(|d| {
                sonde_model::load_result(d).map_err(|e| ArchiveError::Document {
                    location: self.location().to_string(),
                    id: id.to_string(),
                    message: e.to_string(),
                })
            })
            .transpose()
    }

    /// Where result `id` was kept: its campaign, run, method and labels.
    /// `None` when the archive has no such result.
    pub fn placement_of(&mut self, id: ResultId) -> Result<Option<Placement>, ArchiveError> {
        let key = Value::Text(Some(id.to_string()));
        let rows = self.backend.sql().rows(
            "SELECT campaign, run_id, method_id FROM results WHERE id = $1",
            std::slice::from_ref(&key),
        )?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let col = |i: usize| row.get(i).and_then(Value::text).map(str::to_string);
        let labels = self
            .backend
            .sql()
            .rows(
                "SELECT key, value FROM result_labels WHERE result_id = $1 ORDER BY key",
                std::slice::from_ref(&key),
            )?
            .iter()
            .filter_map(|r| {
                Some((
                    r.first()?.text()?.to_string(),
                    r.get(1)?.text()?.to_string(),
                ))
            })
            .collect();
        Ok(Some(Placement {
            campaign: col(0),
            run_id: col(1),
            method_id: col(2),
            labels,
        }))
    }

    /// The method with `id`, its trials joined back in the order they ran.
    pub fn get_method(&mut self, id: ResultId) -> Result<Option<MethodResult>, ArchiveError> {
        let key = Value::Text(Some(id.to_string()));
        let docs = self.backend.sql().texts(
            "SELECT doc FROM methods WHERE id = $1",
            std::slice::from_ref(&key),
        )?;
        let Some(doc) = docs.first() else {
            return Ok(None);
        };
        let location = self.location().to_string();
        let bad = |message: String| ArchiveError::Document {
            location: location.clone(),
            id: id.to_string(),
            message,
        };
        let mut m: MethodResult = serde_json::from_str(doc).map_err(|e| bad(e.to_string()))?;
        let trials = self.backend.sql().texts(
            "SELECT doc FROM results WHERE method_id = $1 ORDER BY start_ns, id",
            &[key],
        )?;
        m.trials = trials
            .iter()
            .map(|d| sonde_model::load_result(d).map_err(|e| bad(e.to_string())))
            .collect::<Result<_, _>>()?;
        Ok(Some(m))
    }

    /// The results `filter` selects, newest first.
    pub fn list_results(&mut self, filter: &ResultFilter) -> Result<Vec<TestResult>, ArchiveError> {
        let (clause, mut params) = filter.clause();
        params.push(Value::Int(Some(filter.limit.max(1))));
        let sql = format!(
            "SELECT doc FROM results WHERE {clause} ORDER BY start_ns DESC, id LIMIT ${}",
            params.len()
        );
        let location = self.location().to_string();
        self.backend
            .sql()
            .texts(&sql, &params)?
            .iter()
            .map(|d| {
                sonde_model::load_result(d).map_err(|e| ArchiveError::Document {
                    location: location.clone(),
                    id: "?".into(),
                    message: e.to_string(),
                })
            })
            .collect()
    }

    /// The first `limit` methods of `campaign` (any, if `None`) that
    /// started in [`since_ns`, `until_ns`), oldest first, with their
    /// trials.
    pub fn list_methods(
        &mut self,
        campaign: Option<&str>,
        since_ns: Option<i64>,
        until_ns: Option<i64>,
        limit: usize,
    ) -> Result<Vec<MethodResult>, ArchiveError> {
        let mut sql = String::from("SELECT id FROM methods WHERE 1 = 1");
        let mut params = Vec::new();
        if let Some(c) = campaign {
            params.push(Value::Text(Some(c.to_string())));
            sql += &format!(" AND campaign = ${}", params.len());
        }
        if let Some(s) = since_ns {
            params.push(Value::Int(Some(s)));
            sql += &format!(" AND start_ns >= ${}", params.len());
        }
        if let Some(u) = until_ns {
            params.push(Value::Int(Some(u)));
            sql += &format!(" AND start_ns < ${}", params.len());
        }
        params.push(Value::Int(Some(i64::try_from(limit).unwrap_or(i64::MAX))));
        sql += &format!(" ORDER BY start_ns, id LIMIT ${}", params.len());
        let ids = self.backend.sql().texts(&sql, &params)?;
        let mut out = Vec::new();
        for id in ids {
            let Ok(rid) = id.parse::<ResultId>() else {
                continue;
            };
            if let Some(m) = self.get_method(rid)? {
                out.push(m);
            }
        }
        Ok(out)
    }

    /// The methods whose trials `filter` selects (a label or campaign
    /// given to a method is kept on each of its trials), oldest first,
    /// with their trials; at most `limit`.
    pub fn methods_of(
        &mut self,
        filter: &ResultFilter,
        limit: usize,
    ) -> Result<Vec<MethodResult>, ArchiveError> {
        let (clause, mut params) = filter.clause();
        params.push(Value::Int(Some(i64::try_from(limit).unwrap_or(i64::MAX))));
        let sql = format!(
            "SELECT id FROM methods WHERE id IN (SELECT method_id FROM results WHERE {clause}) \
             ORDER BY start_ns, id LIMIT ${}",
            params.len()
        );
        let ids = self.backend.sql().texts(&sql, &params)?;
        let mut out = Vec::new();
        for id in ids.iter().filter_map(|id| id.parse::<ResultId>().ok()) {
            out.extend(self.get_method(id)?);
        }
        Ok(out)
    }

    /// How many results the archive keeps.
    pub fn count_results(&mut self) -> Result<i64, ArchiveError> {
        Ok(self
            .backend
            .sql()
            .int("SELECT COUNT(*) FROM results", &[])?
            .unwrap_or(0))
    }

    /// How many interval rows the archive keeps for `id`.
    pub fn count_intervals(&mut self, id: ResultId) -> Result<i64, ArchiveError> {
        Ok(self
            .backend
            .sql()
            .int(
                "SELECT COUNT(*) FROM intervals WHERE result_id = $1",
                &[Value::Text(Some(id.to_string()))],
            )?
            .unwrap_or(0))
    }
}

/// Inserts a method's row (its document `doc`, without trials) in the
/// transaction `tx`; whether it was new (only then is it queued for the
/// forwarding destinations).
fn put_method_in(
    tx: &mut dyn Sql,
    m: &MethodResult,
    at: &Placement,
    doc: String,
) -> Result<bool, ArchiveError> {
    let n = tx.execute(
        "INSERT INTO methods (id, method, start_ns, duration_s, interrupted, campaign, \
         run_id, doc) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING",
        &[
            Value::Text(Some(m.id.to_string())),
            Value::Text(Some(m.method.name().to_string())),
            Value::Int(Some(row::ns(&m.start))),
            Value::Real(Some(m.duration_s)),
            Value::Bool(m.interrupted),
            Value::Text(at.campaign.clone()),
            Value::Text(at.run_id.clone()),
            Value::Text(Some(doc)),
        ],
    )?;
    if n == 0 {
        return Ok(false);
    }
    outbox::enqueue(tx, &[m.id.to_string()], outbox::ItemKind::Method)?;
    Ok(true)
}

/// A client of the PostgreSQL at `url` (a `postgres://` URL without
/// `schema=`, which is [`Store::open`]'s), over TLS as its `sslmode` and
/// `sslrootcert` ask, as the archive connects (docs/archive.md,
/// "PostgreSQL over TLS"). Errors name what is wrong, without the
/// password.
pub fn connect_postgres(url: &str) -> Result<postgres::Client, ArchiveError> {
    pg_tls::connect(url, &redacted(url))
}

/// An archive's location as answers and logs may show it: a PostgreSQL
/// URL without its password (`user:***@`, `password=***` in the query);
/// a file's path as it is.
pub fn redacted(location: &str) -> String {
    let Some(s) = location.find("://") else {
        return location.to_string();
    };
    let (base, query) = match location.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (location, None),
    };
    let base = match base.rfind('@') {
        Some(at) if at > s => {
            let creds = &base[s + 3..at];
            match creds.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &base[..s + 3], &base[at..]),
                None => base.to_string(),
            }
        }
        _ => base.to_string(),
    };
    match query {
        None => base,
        Some(q) => {
            let q: Vec<String> = q
                .split('&')
                .map(|kv| match kv.split_once('=') {
                    Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                    _ => kv.to_string(),
                })
                .collect();
            format!("{base}?{}", q.join("&"))
        }
    }
}
