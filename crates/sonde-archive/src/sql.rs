//! The little each backend must do for the [`Store`](crate::Store): run a
//! statement, read one text or integer column, and run a closure in one
//! transaction. Everything else is shared SQL.

use crate::ArchiveError;

/// A parameter, typed even when null (PostgreSQL checks a parameter's type
/// against its column's).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Text(Option<String>),
    Int(Option<i64>),
    Real(Option<f64>),
    Bool(bool),
    /// Arrays, PostgreSQL's only: a batch of rows as one parameter per
    /// column (`UNNEST($1::text[], …)`), so that one statement of fixed
    /// text, prepared once, writes any number of rows. SQLite refuses
    /// them; a caller asks [`Sql::postgres`] first.
    Texts(Vec<String>),
    Ints(Vec<i64>),
    Reals(Vec<Option<f64>>),
}

impl Value {
    /// The value as a number (integers too), if it is one.
    pub fn real(&self) -> Option<f64> {
        match self {
            Value::Real(r) => *r,
            Value::Int(i) => i.map(|i| i as f64),
            _ => None,
        }
    }
    /// The value as an integer, if it is one.
    pub fn int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => *i,
            Value::Bool(b) => Some(i64::from(*b)),
            _ => None,
        }
    }
    /// The value as text, if it is text.
    pub fn text(&self) -> Option<&str> {
        match self {
            Value::Text(t) => t.as_deref(),
            _ => None,
        }
    }
}

/// One connection, or one transaction on it.
pub trait Sql {
    /// Runs statements without parameters (a migration).
    fn batch(&mut self, sql: &str) -> Result<(), ArchiveError>;
    /// Runs one statement; the rows it changed.
    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, ArchiveError>;
    /// The first column of every row, as text.
    fn texts(&mut self, sql: &str, params: &[Value]) -> Result<Vec<String>, ArchiveError>;
    /// The first column of the first row, as an integer.
    fn int(&mut self, sql: &str, params: &[Value]) -> Result<Option<i64>, ArchiveError>;
    /// Every row, each column typed as the database gives it (a null as
    /// `Text(None)`).
    fn rows(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, ArchiveError>;
    /// Within a transaction: waits until no other connection migrates
    /// the database, and holds that until the transaction ends. SQLite
    /// needs nothing (its write transactions already exclude each other);
    /// PostgreSQL runs several at once and would fail one of two
    /// concurrent `CREATE TABLE`s.
    fn lock_migrations(&mut self) -> Result<(), ArchiveError> {
        Ok(())
    }
    /// Whether this is PostgreSQL (whose archive is partitioned by
    /// month), not SQLite.
    fn postgres(&self) -> bool {
        false
    }
}

/// A backend: a connection that runs work in transactions.
pub trait Backend: Send {
    /// Runs `work` in one transaction, committed if it returns `Ok`.
    fn transaction(
        &mut self,
        work: &mut dyn FnMut(&mut dyn Sql) -> Result<(), ArchiveError>,
    ) -> Result<(), ArchiveError>;
    /// The connection itself, for reads.
    fn sql(&mut self) -> &mut dyn Sql;
    /// How the archive is named in messages.
    fn location(&self) -> &str;
    /// Whether the connection is known to be gone (a database server
    /// that closed it); such a backend is not used again.
    fn is_closed(&self) -> bool {
        false
    }
}
