//! The central backend: PostgreSQL through the `postgres` crate (a
//! blocking client, as the rest of sonde's measurement side is threads).
//! A `schema=NAME` in the URL's query puts the archive in that schema
//! (created if missing), so one database can hold several archives.
//! TLS as the URL's `sslmode` and `sslrootcert` ask: `pg_tls`.

use crate::sql::{Backend, Sql, Value};
use crate::ArchiveError;
use postgres::types::ToSql;
use postgres::{Client, GenericClient, Statement};
use std::collections::HashMap;

pub struct PgBackend {
    client: Client,
    location: String,
    statements: Statements,
}

/// The statements this connection has prepared, by their text: a
/// statement is parsed and planned by the server once, not on every
/// call (the `postgres` crate prepares each text it is given, a round
/// trip of its own, unless handed a prepared one). An ingest runs the
/// same few multi-row statements again and again.
#[derive(Default)]
struct Statements(HashMap<String, Statement>);

/// Statements kept prepared at most: the texts vary by row count; past
/// this, they are all let go and prepared again as they come.
const STATEMENTS_KEPT: usize = 256;

/// The longest statement kept prepared: an ingest's batch of a few
/// results is well under it; a statement of thousands of parameters (an
/// import's chunk) is planned by the server at every call, as before,
/// rather than held in the server's memory for the connection's life.
const KEPT_TEXT: usize = 8192;

impl Statements {
    /// `sql` prepared on `c`, prepared now if it was not.
    fn get<C: GenericClient>(
        &mut self,
        c: &mut C,
        sql: &str,
    ) -> Result<Statement, postgres::Error> {
        if let Some(s) = self.0.get(sql) {
            return Ok(s.clone());
        }
        let s = c.prepare(sql)?;
        if sql.len() > KEPT_TEXT {
            return Ok(s);
        }
        if self.0.len() >= STATEMENTS_KEPT {
            self.0.clear();
        }
        self.0.insert(sql.to_string(), s.clone());
        Ok(s)
    }
}

fn err(location: &str) -> impl Fn(postgres::Error) -> ArchiveError + '_ {
    move |e| ArchiveError::Database {
        location: location.to_string(),
        message: crate::pg_tls::message(&e),
    }
}

/// The advisory lock key sonde's migrations (and schema creation) hold,
/// in every schema of a database: "sonde" in ASCII.
const MIGRATION_LOCK: i64 = 0x0073_6f6e_6465;

/// `url` without sonde's own `schema=` parameter, and that schema.
fn split_schema(url: &str) -> (String, Option<String>) {
    let Some((base, query)) = url.split_once('?') else {
        return (url.to_string(), None);
    };
    let mut schema = None;
    let rest: Vec<&str> = query
        .split('&')
        .filter(|kv| match kv.strip_prefix("schema=") {
            Some(s) => {
                schema = Some(s.to_string());
                false
            }
            None => true,
        })
        .collect();
    let url = if rest.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", rest.join("&"))
    };
    (url, schema)
}

impl PgBackend {
    /// Connects to `url`; `read_only`: a replica, where a `schema=` is
    /// only looked in, never created.
    pub fn open(url: &str, read_only: bool) -> Result<Self, ArchiveError> {
        let location = crate::redacted(url);
        let (conn_url, schema) = split_schema(url);
        let mut client = crate::pg_tls::connect(&conn_url, &location)?;
        // The server's NOTICEs ("schema … already exists, skipping" for
        // every IF NOT EXISTS) are no news: warnings and errors only.
        // A read-only store's session refuses writes too, should its URL
        // name a primary by mistake.
        let session = if read_only {
            "SET client_min_messages TO warning; SET default_transaction_read_only = on"
        } else {
            "SET client_min_messages TO warning"
        };
        client.batch_execute(session).map_err(err(&location))?;
        // A result's document is compressed as it is stored (TOAST):
        // with LZ4 where the server has it (PostgreSQL 14 on, built with
        // it), several times cheaper to write and read than the default
        // pglz, which took a twentieth of the server's time in a mesh's
        // ingest. A server without it keeps its default.
        if !read_only
            && client
                .batch_execute("SET default_toast_compression = lz4")
                .is_err()
        {
            tracing::debug!(
                "{location}: no LZ4 on this server; documents are compressed with its default"
            );
        }
        // Statements are prepared and kept (`Statements`), but planned
        // for their parameters at every call, as unnamed ones were: a
        // generic plan, which the server may otherwise choose after five
        // calls, cannot leave out the months a time range or a key does
        // not touch before it runs. (PostgreSQL 12 on; older servers
        // plan as they do.)
        let _ = client.batch_execute("SET plan_cache_mode = force_custom_plan");
        // No compiling of queries (JIT, PostgreSQL 11 on): the server
        // compiles a query whose estimated cost passes a threshold, and
        // the archive's are short reads of an index or a partition whose
        // estimates run high; the grid of 10,000 agents took 280 ms
        // compiled where it runs in 55 (bench/mesh-scale, docs/mesh.md).
        let _ = client.batch_execute("SET jit = off");
        if let Some(s) = schema {
            if s.is_empty() || !s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(ArchiveError::Database {
                    location,
                    message: format!("schema '{s}': use letters, digits and _"),
                });
            }
            // Two openers of a new schema at once: one creates it, the
            // other waits for the lock and finds it there.
            let create = if read_only {
                String::new()
            } else {
                format!(
                    "BEGIN; SELECT pg_advisory_xact_lock({MIGRATION_LOCK}); \
                     CREATE SCHEMA IF NOT EXISTS {s}; COMMIT; "
                )
            };
            client
                .batch_execute(&format!("{create}SET search_path TO {s}"))
                .map_err(err(&location))?;
        }
        Ok(Self {
            client,
            location,
            statements: Statements::default(),
        })
    }
}

/// The parameters as the driver takes them, borrowed, not copied.
fn refs(p: &[Value]) -> Vec<&(dyn ToSql + Sync)> {
    p.iter()
        .map(|v| -> &(dyn ToSql + Sync) {
            match v {
                Value::Text(t) => t,
                Value::Int(i) => i,
                Value::Real(r) => r,
                Value::Bool(b) => b,
                Value::Texts(a) => a,
                Value::Ints(a) => a,
                Value::Reals(a) => a,
            }
        })
        .collect()
}

struct On<'a, C: GenericClient> {
    c: &'a mut C,
    location: &'a str,
    statements: &'a mut Statements,
    /// Within a transaction, where a refused statement ends it: no
    /// second try.
    in_transaction: bool,
}

impl<C: GenericClient> On<'_, C> {
    /// The rows `sql` returns for `params`, by its prepared statement.
    /// After an error every statement is prepared again: one whose
    /// tables changed under it (a migration, a partition made) may be
    /// refused by the server ("cached plan must not change result type").
    fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<postgres::Row>, ArchiveError> {
        let p = refs(params);
        self.prepared(sql, |c, s| c.query(s, &p))
    }

    /// `run` with `sql`'s prepared statement. A statement the server
    /// refuses as prepared for tables since changed (by another
    /// connection: a newer sonde's migration) is prepared again and run
    /// once more, outside a transaction; any error lets every statement
    /// go, to be prepared again as it comes.
    fn prepared<T>(
        &mut self,
        sql: &str,
        run: impl Fn(&mut C, &Statement) -> Result<T, postgres::Error>,
    ) -> Result<T, ArchiveError> {
        let mut outcome = self
            .statements
            .get(self.c, sql)
            .and_then(|s| run(self.c, &s));
        if let Err(e) = &outcome {
            self.statements.0.clear();
            let stale = e.code() == Some(&postgres::error::SqlState::FEATURE_NOT_SUPPORTED);
            if stale && !self.in_transaction {
                outcome = self
                    .statements
                    .get(self.c, sql)
                    .and_then(|s| run(self.c, &s));
            }
        }
        outcome.map_err(err(self.location))
    }
}

impl<C: GenericClient> Sql for On<'_, C> {
    fn postgres(&self) -> bool {
        true
    }
    fn lock_migrations(&mut self) -> Result<(), ArchiveError> {
        self.c
            .execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .map(drop)
            .map_err(err(self.location))
    }
    fn batch(&mut self, sql: &str) -> Result<(), ArchiveError> {
        // What a batch does (tables made, altered, dropped) may change
        // what a prepared statement returns.
        self.statements.0.clear();
        self.c.batch_execute(sql).map_err(err(self.location))
    }
    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, ArchiveError> {
        let p = refs(params);
        self.prepared(sql, |c, s| c.execute(s, &p))
    }
    fn texts(&mut self, sql: &str, params: &[Value]) -> Result<Vec<String>, ArchiveError> {
        let rows = self.query(sql, params)?;
        rows.iter()
            .map(|r| r.try_get::<_, String>(0).map_err(err(self.location)))
            .collect()
    }
    fn int(&mut self, sql: &str, params: &[Value]) -> Result<Option<i64>, ArchiveError> {
        let rows = self.query(sql, params)?;
        match rows.first() {
            Some(r) => r.try_get::<_, Option<i64>>(0).map_err(err(self.location)),
            None => Ok(None),
        }
    }
    fn rows(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, ArchiveError> {
        let rows = self.query(sql, params)?;
        rows.iter()
            .map(|r| {
                (0..r.len())
                    .map(|i| cell(r, i))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(err(self.location))
            })
            .collect()
    }
}

/// Column `i` of `r`, typed by its column's type.
fn cell(r: &postgres::Row, i: usize) -> Result<Value, postgres::Error> {
    use postgres::types::Type;
    let t = r.columns()[i].type_();
    Ok(if *t == Type::INT8 {
        Value::Int(r.try_get(i)?)
    } else if *t == Type::INT4 {
        Value::Int(r.try_get::<_, Option<i32>>(i)?.map(i64::from))
    } else if *t == Type::INT2 {
        Value::Int(r.try_get::<_, Option<i16>>(i)?.map(i64::from))
    } else if *t == Type::FLOAT8 {
        Value::Real(r.try_get(i)?)
    } else if *t == Type::FLOAT4 {
        Value::Real(r.try_get::<_, Option<f32>>(i)?.map(f64::from))
    } else if *t == Type::BOOL {
        match r.try_get::<_, Option<bool>>(i)? {
            Some(b) => Value::Bool(b),
            None => Value::Text(None),
        }
    } else {
        Value::Text(r.try_get(i)?)
    })
}

impl Backend for PgBackend {
    fn transaction(
        &mut self,
        work: &mut dyn FnMut(&mut dyn Sql) -> Result<(), ArchiveError>,
    ) -> Result<(), ArchiveError> {
        let location = self.location.clone();
        let mut tx = self.client.transaction().map_err(err(&location))?;
        work(&mut On {
            c: &mut tx,
            location: &location,
            statements: &mut self.statements,
            in_transaction: true,
        })?;
        tx.commit().map_err(err(&location))
    }

    fn sql(&mut self) -> &mut dyn Sql {
        self
    }

    fn location(&self) -> &str {
        &self.location
    }

    fn is_closed(&self) -> bool {
        self.client.is_closed()
    }
}

impl Sql for PgBackend {
    fn postgres(&self) -> bool {
        true
    }
    fn batch(&mut self, sql: &str) -> Result<(), ArchiveError> {
        On {
            c: &mut self.client,
            location: &self.location,
            statements: &mut self.statements,
            in_transaction: false,
        }
        .batch(sql)
    }
    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, ArchiveError> {
        On {
            c: &mut self.client,
            location: &self.location,
            statements: &mut self.statements,
            in_transaction: false,
        }
        .execute(sql, params)
    }
    fn texts(&mut self, sql: &str, params: &[Value]) -> Result<Vec<String>, ArchiveError> {
        On {
            c: &mut self.client,
            location: &self.location,
            statements: &mut self.statements,
            in_transaction: false,
        }
        .texts(sql, params)
    }
    fn int(&mut self, sql: &str, params: &[Value]) -> Result<Option<i64>, ArchiveError> {
        On {
            c: &mut self.client,
            location: &self.location,
            statements: &mut self.statements,
            in_transaction: false,
        }
        .int(sql, params)
    }
    fn rows(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, ArchiveError> {
        On {
            c: &mut self.client,
            location: &self.location,
            statements: &mut self.statements,
            in_transaction: false,
        }
        .rows(sql, params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_parameter_is_sondes_and_passwords_are_not_shown() {
        assert_eq!(
            split_schema("postgres://u@h/db?schema=s1&sslmode=disable"),
            (
                "postgres://u@h/db?sslmode=disable".to_string(),
                Some("s1".to_string())
            )
        );
        assert_eq!(
            split_schema("postgres://u@h/db"),
            ("postgres://u@h/db".to_string(), None)
        );
        assert_eq!(
            crate::redacted("postgres://u:secret@h/db"),
            "postgres://u:***@h/db"
        );
        assert_eq!(crate::redacted("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(
            crate::redacted("postgresql://u@h/db?sslmode=require&password=secret&x=1"),
            "postgresql://u@h/db?sslmode=require&password=***&x=1"
        );
        assert_eq!(
            crate::redacted("/var/lib/sonde/sonde.db"),
            "/var/lib/sonde/sonde.db"
        );
    }
}
