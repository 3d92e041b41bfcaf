//! Opening the archive: its backend from the location, migrating it to
//! this build's schema (and filling what a migration left empty), or,
//! for a replica, only checking that it is at that schema.

use crate::sql::{Backend, Value};
use crate::{partition, pg, schema, sqlite, ArchiveError, Store};

/// The backend of the archive at `location`: PostgreSQL for a
/// `postgres://` (or `postgresql://`) URL, else a SQLite file.
fn backend(location: &str, read_only: bool) -> Result<Box<dyn Backend>, ArchiveError> {
    Ok(
        if location.starts_with("postgres://") || location.starts_with("postgresql://") {
            Box::new(pg::PgBackend::open(location, read_only)?)
        } else {
            Box::new(sqlite::SqliteBackend::open(std::path::Path::new(location))?)
        },
    )
}

impl Store {
    /// Opens the archive at `location`: a `postgres://` (or
    /// `postgresql://`) URL, or a SQLite file path; migrating it to this
    /// build's schema.
    pub fn open(location: &str) -> Result<Self, ArchiveError> {
        let mut store = Self {
            backend: backend(location, false)?,
        };
        store.migrate()?;
        Ok(store)
    }

    /// Opens the archive at `location` to read only (a PostgreSQL
    /// streaming replica, which refuses every write): nothing is migrated
    /// or filled in, and its schema must be this build's.
    pub fn open_read_only(location: &str) -> Result<Self, ArchiveError> {
        let mut store = Self {
            backend: backend(location, true)?,
        };
        // No version table at all: an archive no sonde has made yet.
        let found = store.schema_version().unwrap_or(0);
        let supported = schema::current();
        if found != i64::from(supported) {
            return Err(ArchiveError::ReadOnlyVersion {
                location: store.location().to_string(),
                found,
                supported,
            });
        }
        Ok(store)
    }

    /// Where the archive is, as messages name it (no password:
    /// [`redacted`]).
    pub fn location(&self) -> &str {
        self.backend.location()
    }

    /// Whether its connection is known to be gone (a PostgreSQL server
    /// that closed it); a pool opens another instead.
    pub fn is_closed(&self) -> bool {
        self.backend.is_closed()
    }

    /// The schema version the archive has.
    pub fn schema_version(&mut self) -> Result<i64, ArchiveError> {
        Ok(self
            .backend
            .sql()
            .int("SELECT MAX(version) FROM sonde_schema", &[])?
            .unwrap_or(0))
    }

    /// Applies the migrations the archive lacks, each in its own
    /// transaction with its version; refuses an archive newer than this
    /// build.
    fn migrate(&mut self) -> Result<(), ArchiveError> {
        // An archive already made is only read here: opening it takes no
        // write lock (every test kept, every API request opens one).
        let found = match self.schema_version() {
            Ok(v) => v,
            Err(_) => {
                self.backend.transaction(&mut |tx| {
                    tx.lock_migrations()?;
                    tx.batch(schema::VERSION_TABLE)
                })?;
                self.schema_version()?
            }
        };
        let supported = schema::current();
        if found > i64::from(supported) {
            return Err(ArchiveError::TooNew {
                location: self.location().to_string(),
                found,
                supported,
            });
        }
        for (i, step) in schema::MIGRATIONS.iter().enumerate().skip(found as usize) {
            let version = i as i64 + 1;
            let mut applied = false;
            self.backend.transaction(&mut |tx| {
                // Another process may have migrated meanwhile (it held
                // the lock until its migration was committed).
                tx.lock_migrations()?;
                let now = tx
                    .int("SELECT MAX(version) FROM sonde_schema", &[])?
                    .unwrap_or(0);
                if now >= version {
                    return Ok(());
                }
                if version == i64::from(schema::PARTITIONED) && tx.postgres() {
                    partition::partition_pg(tx)?;
                } else {
                    tx.batch(step)?;
                }
                tx.execute(
                    "INSERT INTO sonde_schema (version) VALUES ($1)",
                    &[Value::Int(Some(version))],
                )?;
                applied = true;
                Ok(())
            })?;
            // Said once, by the process that did it.
            if applied {
                tracing::info!(archive = %self.location(), version, "archive migrated");
            }
        }
        if found < i64::from(schema::PATH_LATEST) {
            self.backfill_path_latest()?;
        }
        self.backfill_result_latest()?;
        self.index_new_metrics()?;
        Ok(())
    }
}
