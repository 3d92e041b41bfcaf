//! The central backend: PostgreSQL through the `postgres` crate (a
//! blocking client, as the rest of sonde's measurement side is threads).
//! A `schema=NAME` in the URL's query puts the archive in that schema
//! (created if missing), so one database can hold several archives.
//! TLS as the URL's `sslmode` and `sslrootcert` ask: `pg_tls`.

use crate::sql::{Backend, Sql, Value};
use crate::ArchiveError;
use postgres::types::ToSql;
use postgres::{Client, GenericClient};

pub struct PgBackend {
    client: Client,
    location: String,
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
        Ok(Self { client, location })
    }
}

fn boxed(p: &[Value]) -> Vec<Box<dyn ToSql + Sync>> {
    p.iter()
        .map(|v| -> Box<dyn ToSql + Sync> {
            match v {
                Value::Text(t) => Box::new(t.clone()),
                Value::Int(i) => Box::new(*i),
                Value::Real(r) => Box::new(*r),
                Value::Bool(b) => Box::new(*b),
            }
        })
        .collect()
}

fn refs(b: &[Box<dyn ToSql + Sync>]) -> Vec<&(dyn ToSql + Sync)> {
    b.iter().map(|v| v.as_ref()).collect()
}

struct On<'a, C: GenericClient> {
    c: &'a mut C,
    location: &'a str,
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
        self.c.batch_execute(sql).map_err(err(self.location))
    }
    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, ArchiveError> {
        let b = boxed(params);
        self.c.execute(sql, &refs(&b)).map_err(err(self.location))
    }
    fn texts(&mut self, sql: &str, params: &[Value]) -> Result<Vec<String>, ArchiveError> {
        let b = boxed(params);
        let rows = self.c.query(sql, &refs(&b)).map_err(err(self.location))?;
        rows.iter()
            .map(|r| r.try_get::<_, String>(0).map_err(err(self.location)))
            .collect()
    }
    fn int(&mut self, sql: &str, params: &[Value]) -> Result<Option<i64>, ArchiveError> {
        let b = boxed(params);
        let rows = self.c.query(sql, &refs(&b)).map_err(err(self.location))?;
        match rows.first() {
            Some(r) => r.try_get::<_, Option<i64>>(0).map_err(err(self.location)),
            None => Ok(None),
        }
    }
    fn rows(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, ArchiveError> {
        let b = boxed(params);
        let rows = self.c.query(sql, &refs(&b)).map_err(err(self.location))?;
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
    let t = r.columns()[i].type_().clone();
    Ok(if t == Type::INT8 {
        Value::Int(r.try_get(i)?)
    } else if t == Type::INT4 {
        Value::Int(r.try_get::<_, Option<i32>>(i)?.map(i64::from))
    } else if t == Type::INT2 {
        Value::Int(r.try_get::<_, Option<i16>>(i)?.map(i64::from))
    } else if t == Type::FLOAT8 {
        Value::Real(r.try_get(i)?)
    } else if t == Type::FLOAT4 {
        Value::Real(r.try_get::<_, Option<f32>>(i)?.map(f64::from))
    } else if t == Type::BOOL {
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
        }
        .batch(sql)
    }
    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, ArchiveError> {
        On {
            c: &mut self.client,
            location: &self.location,
        }
        .execute(sql, params)
    }
    fn texts(&mut self, sql: &str, params: &[Value]) -> Result<Vec<String>, ArchiveError> {
        On {
            c: &mut self.client,
            location: &self.location,
        }
        .texts(sql, params)
    }
    fn int(&mut self, sql: &str, params: &[Value]) -> Result<Option<i64>, ArchiveError> {
        On {
            c: &mut self.client,
            location: &self.location,
        }
        .int(sql, params)
    }
    fn rows(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, ArchiveError> {
        On {
            c: &mut self.client,
            location: &self.location,
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
