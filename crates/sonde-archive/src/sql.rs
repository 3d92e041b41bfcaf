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
}
