//! A few open stores of one archive, kept between uses: the HTTP API
//! serves each request with one of them instead of opening the archive
//! (a new PostgreSQL connection, or a SQLite file opened and its schema
//! version read) every time. Hand-written rather than r2d2 or deadpool:
//! a `Store` is one connection of either backend behind one type, and
//! what is needed is only "reuse an idle one, else open one", with no
//! limit on how many are in use (tokio's blocking pool bounds that).

use crate::{ArchiveError, Store};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A store idle this long is asked a query before it is used again: a
/// PostgreSQL server restarted meanwhile would otherwise fail the first
/// request that used its old connection.
const CHECK_AFTER: Duration = Duration::from_secs(30);

/// Stores of the archive at one location, reused.
pub struct StorePool {
    location: String,
    /// Idle stores, each with when it was put back.
    idle: Mutex<Vec<(Store, Instant)>>,
    max_idle: usize,
    /// Its stores are opened to read only ([`Store::open_read_only`]).
    read_only: bool,
}

impl StorePool {
    /// A pool for the archive at `location` that keeps at most
    /// `max_idle` stores open while nobody uses them. Nothing is opened
    /// until first used.
    pub fn new(location: &str, max_idle: usize) -> Self {
        Self {
            location: location.to_string(),
            idle: Mutex::new(Vec::new()),
            max_idle,
            read_only: false,
        }
    }

    /// A pool of stores opened to read only: a streaming replica's
    /// (`[http] archive_read`), which migrates nothing.
    pub fn read_only(location: &str, max_idle: usize) -> Self {
        let mut pool = Self::new(location, max_idle);
        pool.read_only = true;
        pool
    }

    /// Where the archive is.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// How many stores are open and idle now.
    pub fn idle(&self) -> usize {
        self.idle.lock().map_or(0, |v| v.len())
    }

    /// Runs `work` with an idle store, or a newly opened one when none is
    /// idle. The store goes back to the pool afterwards unless its
    /// connection is closed (a PostgreSQL server that went away), or the
    /// pool already keeps `max_idle`; a failed `work` leaves its
    /// transaction rolled back, so its store is still fit for the next.
    pub fn with<T, E: From<ArchiveError>>(
        &self,
        work: impl FnOnce(&mut Store) -> Result<T, E>,
    ) -> Result<T, E> {
        let reused = self.take();
        let mut store = match reused {
            Some(s) => s,
            None if self.read_only => Store::open_read_only(&self.location)?,
            None => Store::open(&self.location)?,
        };
        let out = work(&mut store);
        self.put_back(store);
        out
    }

    fn take(&self) -> Option<Store> {
        let (mut s, since) = self.idle.lock().ok()?.pop()?;
        let current = i64::from(crate::schema::current());
        let fit = !s.is_closed()
            && (since.elapsed() < CHECK_AFTER || s.schema_version().is_ok_and(|v| v == current));
        if fit {
            return Some(s);
        }
        // A connection the server closed: the others, opened to the same
        // server, most likely went with it. A schema a newer sonde
        // migrated: a new store says so (`Store::open` refuses it).
        self.forget_idle();
        None
    }

    fn forget_idle(&self) {
        let idle = self.idle.lock().map(|mut v| std::mem::take(&mut *v));
        drop_on_own_thread(idle.unwrap_or_default());
    }

    fn put_back(&self, store: Store) {
        if store.is_closed() {
            self.forget_idle();
            drop_on_own_thread(vec![(store, Instant::now())]);
            return;
        }
        if let Ok(mut idle) = self.idle.lock() {
            if idle.len() < self.max_idle {
                idle.push((store, Instant::now()));
                return;
            }
        }
        drop_on_own_thread(vec![(store, Instant::now())]);
    }
}

/// The idle stores are closed when the pool goes, off any async runtime.
impl Drop for StorePool {
    fn drop(&mut self) {
        let idle = match self.idle.get_mut() {
            Ok(v) => std::mem::take(v),
            Err(poisoned) => std::mem::take(poisoned.into_inner()),
        };
        drop_on_own_thread(idle);
    }
}

/// Drops `stores` on a thread of their own. A PostgreSQL `Store` closes
/// its connection by blocking on the driver's own runtime, which panics
/// when the dropping thread runs async code of another runtime: the
/// HTTP server drops its state, and this pool, at the end of its
/// runtime's `block_on`. Only stores past the pool's size, closed ones
/// and the pool's own at its end come here.
fn drop_on_own_thread(stores: Vec<(Store, Instant)>) {
    if !stores.is_empty() {
        let _ = std::thread::spawn(move || drop(stores)).join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> std::path::PathBuf {
        let p = std::env::temp_dir().join(format!("sonde-pool-{}-{name}.db", std::process::id()));
        let _ = std::fs::remove_file(&p);
        p
    }

    #[test]
    fn a_store_is_reused_and_at_most_max_idle_are_kept() {
        let path = temp("reuse");
        let pool = StorePool::new(path.to_str().unwrap(), 1);
        assert_eq!(pool.idle(), 0);
        pool.with(Store::schema_version).unwrap();
        assert_eq!(pool.idle(), 1);
        // Two at once: one reused, one opened; only one kept after.
        pool.with(|_| pool.with(Store::schema_version)).unwrap();
        assert_eq!(pool.idle(), 1);
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_pool_of_none_opens_for_every_use() {
        let path = temp("none");
        let pool = StorePool::new(path.to_str().unwrap(), 0);
        for _ in 0..3 {
            pool.with(Store::schema_version).unwrap();
            assert_eq!(pool.idle(), 0);
        }
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_failed_work_still_returns_its_store_and_its_error() {
        let path = temp("error");
        let pool = StorePool::new(path.to_str().unwrap(), 2);
        let e: ArchiveError = pool
            .with(|s| s.comment_incident(424_242, "me", "no such incident", 1))
            .unwrap_err();
        assert!(e.to_string().contains("424242"), "{e}");
        assert_eq!(pool.idle(), 1);
        assert!(pool.with(Store::schema_version).unwrap() >= 8);
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn an_archive_that_cannot_open_is_an_error_and_keeps_nothing() {
        // Its directory would be a regular file.
        let file = temp("not-a-dir");
        std::fs::write(&file, b"x").unwrap();
        let pool = StorePool::new(file.join("a.db").to_str().unwrap(), 2);
        assert!(pool.with(Store::schema_version).is_err());
        assert_eq!(pool.idle(), 0);
        let _ = std::fs::remove_file(&file);
    }
}
