//! The embedded backend: one SQLite file in WAL mode (rusqlite, SQLite
//! built in, so nothing needs installing).

use crate::sql::{Backend, Sql, Value};
use crate::ArchiveError;
use rusqlite::types::Value as Lite;
use rusqlite::Connection;
use std::path::Path;
use std::time::Duration;

pub struct SqliteBackend {
    conn: Connection,
    location: String,
}

fn lite(v: &Value) -> Option<Lite> {
    Some(match v {
        Value::Text(Some(s)) => Lite::Text(s.clone()),
        Value::Int(Some(i)) => Lite::Integer(*i),
        Value::Real(Some(r)) => Lite::Real(*r),
        Value::Bool(b) => Lite::Integer(i64::from(*b)),
        Value::Text(None) | Value::Int(None) | Value::Real(None) => Lite::Null,
        Value::Texts(_) | Value::Ints(_) | Value::Reals(_) => return None,
    })
}

/// The parameters as SQLite takes them; an array (PostgreSQL's only) is
/// refused, not bound as something else.
fn lites(location: &str, p: &[Value]) -> Result<Vec<Lite>, ArchiveError> {
    p.iter()
        .map(|v| {
            lite(v).ok_or_else(|| ArchiveError::Database {
                location: location.to_string(),
                message: "an array parameter: SQLite has none (a statement of PostgreSQL's)"
                    .to_string(),
            })
        })
        .collect()
}

fn err(location: &str) -> impl Fn(rusqlite::Error) -> ArchiveError + '_ {
    move |e| ArchiveError::Database {
        location: location.to_string(),
        message: e.to_string(),
    }
}

/// Compiled statements kept per connection.
const STATEMENTS_KEPT: usize = 64;

/// How long a writer waits for another's lock before it gives up.
const BUSY_WAIT: Duration = Duration::from_secs(10);

/// The connection's settings: WAL, its durability, foreign keys.
fn set_up(conn: &Connection) -> rusqlite::Result<()> {
    conn.pragma_update(None, "journal_mode", "WAL")?;
    // In WAL mode, NORMAL keeps every committed transaction through a
    // crash of the process (kill -9); only a power loss may take back
    // the last ones. FULL would fsync every result.
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")
}

/// Another connection holds the lock (SQLITE_BUSY or SQLITE_LOCKED).
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

impl SqliteBackend {
    /// Opens (creating) the file at `path`, in WAL mode, waiting up to 10 s
    /// for another writer's lock.
    /// Opens the archive at `path`, creating it readable by its owner
    /// only (0600): it holds contacts and incidents, not only results.
    /// SQLite gives its journal files the database file's mode.
    pub fn open(path: &Path) -> Result<Self, ArchiveError> {
        let location = path.display().to_string();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| ArchiveError::Database {
                location: location.clone(),
                message: format!("cannot create {}: {e}", dir.display()),
            })?;
        }
        create_private(path).map_err(|e| ArchiveError::Database {
            location: location.clone(),
            message: format!("cannot create the archive: {e}"),
        })?;
        let conn = Connection::open(path).map_err(err(&location))?;
        // Statements are kept compiled by their text (`prepare_cached`):
        // an ingest runs the same few again and again, and SQLite's
        // parsing of a multi-row insert was a tenth of its time. SQLite
        // compiles one again by itself when a migration changed its
        // tables.
        conn.set_prepared_statement_cache_capacity(STATEMENTS_KEPT);
        conn.busy_timeout(BUSY_WAIT).map_err(err(&location))?;
        // Turning a new file to WAL takes it whole, and SQLite answers
        // "locked" at once, without its busy handler, to the second of
        // two connections doing so together (schedulers and the API open
        // the one archive at the same moment): wait out such a race here.
        let deadline = std::time::Instant::now() + BUSY_WAIT;
        loop {
            match set_up(&conn) {
                Ok(()) => break,
                Err(e) if is_busy(&e) && std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(err(&location)(e)),
            }
        }
        Ok(Self { conn, location })
    }
}

/// `sql` with sonde's `$N` parameters as SQLite's `?N`: SQLite reads
/// `$2` as a *named* parameter, numbered in order of appearance, so
/// `SET a = $2 WHERE id = $1` would bind backwards.
fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('?');
        } else {
            out.push(c);
        }
    }
    out
}

fn run_batch(c: &Connection, location: &str, sql: &str) -> Result<(), ArchiveError> {
    c.execute_batch(sql).map_err(err(location))
}

fn run_execute(
    c: &Connection,
    location: &str,
    sql: &str,
    p: &[Value],
) -> Result<u64, ArchiveError> {
    let params = lites(location, p)?;
    c.prepare_cached(&numbered(sql))
        .and_then(|mut st| st.execute(rusqlite::params_from_iter(params)))
        .map(|n| n as u64)
        .map_err(err(location))
}

fn run_texts(
    c: &Connection,
    location: &str,
    sql: &str,
    p: &[Value],
) -> Result<Vec<String>, ArchiveError> {
    let params = lites(location, p)?;
    let mut st = c.prepare_cached(&numbered(sql)).map_err(err(location))?;
    let rows = st
        .query_map(rusqlite::params_from_iter(params), |row| {
            row.get::<_, String>(0)
        })
        .map_err(err(location))?;
    rows.collect::<Result<Vec<_>, _>>().map_err(err(location))
}

fn run_int(
    c: &Connection,
    location: &str,
    sql: &str,
    p: &[Value],
) -> Result<Option<i64>, ArchiveError> {
    let params = lites(location, p)?;
    let mut st = c.prepare_cached(&numbered(sql)).map_err(err(location))?;
    let mut rows = st
        .query_map(rusqlite::params_from_iter(params), |row| {
            row.get::<_, Option<i64>>(0)
        })
        .map_err(err(location))?;
    rows.next()
        .transpose()
        .map(Option::flatten)
        .map_err(err(location))
}

fn run_rows(
    c: &Connection,
    location: &str,
    sql: &str,
    p: &[Value],
) -> Result<Vec<Vec<Value>>, ArchiveError> {
    use rusqlite::types::ValueRef;
    let params = lites(location, p)?;
    let mut st = c.prepare_cached(&numbered(sql)).map_err(err(location))?;
    let rows = st
        .query_map(rusqlite::params_from_iter(params), |row| {
            // The row's own count: a kept statement is compiled again by
            // SQLite at its first step after a migration, and its columns
            // known before that step could be the old ones.
            (0..row.as_ref().column_count())
                .map(|i| {
                    Ok(match row.get_ref(i)? {
                        ValueRef::Null => Value::Text(None),
                        ValueRef::Integer(v) => Value::Int(Some(v)),
                        ValueRef::Real(v) => Value::Real(Some(v)),
                        ValueRef::Text(t) | ValueRef::Blob(t) => {
                            Value::Text(Some(String::from_utf8_lossy(t).into_owned()))
                        }
                    })
                })
                .collect::<Result<Vec<_>, rusqlite::Error>>()
        })
        .map_err(err(location))?;
    rows.collect::<Result<Vec<_>, _>>().map_err(err(location))
}

/// A connection or a transaction, with the archive's name.
struct On<'a> {
    conn: &'a Connection,
    location: &'a str,
}

impl Sql for On<'_> {
    fn batch(&mut self, sql: &str) -> Result<(), ArchiveError> {
        run_batch(self.conn, self.location, sql)
    }
    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, ArchiveError> {
        run_execute(self.conn, self.location, sql, params)
    }
    fn texts(&mut self, sql: &str, params: &[Value]) -> Result<Vec<String>, ArchiveError> {
        run_texts(self.conn, self.location, sql, params)
    }
    fn int(&mut self, sql: &str, params: &[Value]) -> Result<Option<i64>, ArchiveError> {
        run_int(self.conn, self.location, sql, params)
    }
    fn rows(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, ArchiveError> {
        run_rows(self.conn, self.location, sql, params)
    }
}

impl SqliteBackend {
    /// Runs `work` in an IMMEDIATE transaction: a write outside one would
    /// start as a read and, if another connection wrote meanwhile, fail
    /// its upgrade at once with "database is locked" (SQLite does not
    /// wait for a stale snapshot).
    fn immediate<T>(
        &mut self,
        work: impl FnOnce(&Connection, &str) -> Result<T, ArchiveError>,
    ) -> Result<T, ArchiveError> {
        let location = self.location.clone();
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(err(&location))?;
        let out = work(&tx, &location)?;
        tx.commit().map_err(err(&location))?;
        Ok(out)
    }
}

impl Sql for SqliteBackend {
    fn batch(&mut self, sql: &str) -> Result<(), ArchiveError> {
        self.immediate(|c, l| run_batch(c, l, sql))
    }
    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, ArchiveError> {
        self.immediate(|c, l| run_execute(c, l, sql, params))
    }
    fn texts(&mut self, sql: &str, params: &[Value]) -> Result<Vec<String>, ArchiveError> {
        run_texts(&self.conn, &self.location, sql, params)
    }
    fn int(&mut self, sql: &str, params: &[Value]) -> Result<Option<i64>, ArchiveError> {
        run_int(&self.conn, &self.location, sql, params)
    }
    fn rows(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, ArchiveError> {
        run_rows(&self.conn, &self.location, sql, params)
    }
}

impl Backend for SqliteBackend {
    fn transaction(
        &mut self,
        work: &mut dyn FnMut(&mut dyn Sql) -> Result<(), ArchiveError>,
    ) -> Result<(), ArchiveError> {
        let location = self.location.clone();
        // IMMEDIATE: take the write lock at the start, so two writers wait
        // for each other (busy_timeout) instead of failing on upgrade.
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(err(&location))?;
        work(&mut On {
            conn: &tx,
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

    /// A connection left inside a transaction (a rollback that failed)
    /// is not used again.
    fn is_closed(&self) -> bool {
        !self.conn.is_autocommit()
    }
}

/// Creates `path` empty with mode 0600 if it is not there (an existing
/// file keeps the mode its owner gave it).
fn create_private(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}
