//! Everything the connections of one server share, in one place: the
//! limits and tokens in force (swapped whole when the config is
//! reloaded; a test admitted keeps the terms it was admitted under), the test slots (`max_concurrent_tests`), the count of
//! open connections and their accept order, and the [`Registry`] of tests
//! waiting for their data connections.
//!
//! Counters are changed only here, through guards that give back what
//! they took when dropped.

use crate::limits_config::Limits;
use sonde_wire::TestId;
use std::collections::HashMap;
use std::net::{IpAddr, TcpStream};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// State shared by every connection of one server.
#[derive(Debug)]
pub(crate) struct Shared {
    /// `[limits]` and `[auth]` in force.
    policy: RwLock<Policy>,
    registry: Registry,
    running_tests: AtomicU32,
    connections: AtomicUsize,
    /// Connections accepted so far: each one's place in the accept order.
    accepted: AtomicU64,
    /// Tests that ran and ended (their slot given back).
    finished_tests: AtomicU64,
    /// When the server last had a test running (or started).
    last_busy: Mutex<Instant>,
    /// What `/metrics` counts.
    counters: Arc<crate::counters::AgentCounters>,
    /// Where each decision is written.
    audit: crate::audit::AuditLog,
    /// What runs third-party tests, if the daemon gave one.
    third_party: std::sync::OnceLock<Arc<dyn crate::ThirdPartyRunner>>,
}

/// The limits and tokens in force, swapped whole.
#[derive(Debug, Clone)]
struct Policy {
    limits: Arc<Limits>,
    access: Arc<crate::access::Access>,
}

impl Shared {
    #[cfg(test)]
    pub(crate) fn new(limits: Limits) -> Arc<Self> {
        let access = crate::access::Access::open(&limits);
        Self::with_access(limits, access, crate::audit::AuditLog::default())
    }

    /// Shared state under `[auth]`'s tokens and classes (`access`),
    /// writing decisions to `audit`.
    pub(crate) fn with_access(
        limits: Limits,
        access: crate::access::Access,
        audit: crate::audit::AuditLog,
    ) -> Arc<Self> {
        Arc::new(Self {
            policy: RwLock::new(Policy {
                limits: Arc::new(limits),
                access: Arc::new(access),
            }),
            audit,
            third_party: std::sync::OnceLock::new(),
            registry: Registry::default(),
            running_tests: AtomicU32::new(0),
            connections: AtomicUsize::new(0),
            accepted: AtomicU64::new(0),
            finished_tests: AtomicU64::new(0),
            last_busy: Mutex::new(Instant::now()),
            counters: Arc::default(),
        })
    }

    fn policy(&self) -> Policy {
        match self.policy.read() {
            Ok(p) => p.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The limits every request is checked against now.
    pub(crate) fn limits(&self) -> Arc<Limits> {
        self.policy().limits
    }

    /// Tokens and classes in force now.
    pub(crate) fn access(&self) -> Arc<crate::access::Access> {
        self.policy().access
    }

    /// New limits and tokens for the requests from now on.
    pub(crate) fn set_policy(&self, limits: Limits, access: crate::access::Access) {
        let policy = Policy {
            limits: Arc::new(limits),
            access: Arc::new(access),
        };
        match self.policy.write() {
            Ok(mut p) => *p = policy,
            Err(poisoned) => *poisoned.into_inner() = policy,
        }
    }

    /// The audit log.
    pub(crate) fn audit(&self) -> &crate::audit::AuditLog {
        &self.audit
    }

    pub(crate) fn counters(&self) -> &crate::counters::AgentCounters {
        &self.counters
    }

    /// What runs third-party tests; `None`: they are refused.
    pub(crate) fn third_party(&self) -> Option<Arc<dyn crate::ThirdPartyRunner>> {
        self.third_party.get().cloned()
    }

    /// Gives the server what runs third-party tests (once; a second is
    /// ignored).
    pub(crate) fn set_third_party(&self, runner: Arc<dyn crate::ThirdPartyRunner>) {
        let _ = self.third_party.set(runner);
    }

    pub(crate) fn counters_arc(&self) -> &Arc<crate::counters::AgentCounters> {
        &self.counters
    }

    /// Tests waiting for their data connections.
    pub(crate) fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Claims one of the `max_concurrent_tests` slots; `None` when all are
    /// taken.
    pub(crate) fn claim_test(self: &Arc<Self>) -> Option<TestSlot> {
        let max = self.limits().max_concurrent_tests;
        self.running_tests
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| TestSlot(Arc::clone(self)))
    }

    /// Tests that ran and ended so far.
    pub(crate) fn finished_tests(&self) -> u64 {
        self.finished_tests.load(Ordering::Acquire)
    }

    /// How long no test has been running (zero while one is).
    pub(crate) fn idle_for(&self) -> Duration {
        if self.running_tests() > 0 {
            return Duration::ZERO;
        }
        self.last_busy
            .lock()
            .map_or(Duration::ZERO, |t| t.elapsed())
    }

    /// Tests running now.
    pub(crate) fn running_tests(&self) -> u32 {
        self.running_tests.load(Ordering::Acquire)
    }

    /// Counts a new connection in, unless `max` are open already: its
    /// guard and its place in the accept order.
    pub(crate) fn open_connection(self: &Arc<Self>, max: usize) -> Option<(ConnectionSlot, u64)> {
        if self.connections.fetch_add(1, Ordering::AcqRel) >= max {
            self.connections.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        let slot = ConnectionSlot(Arc::clone(self));
        Some((slot, self.accepted.fetch_add(1, Ordering::AcqRel)))
    }
}

/// A claimed test slot; released on drop.
#[derive(Debug)]
pub struct TestSlot(Arc<Shared>);

impl Drop for TestSlot {
    fn drop(&mut self) {
        if let Ok(mut t) = self.0.last_busy.lock() {
            *t = Instant::now();
        }
        self.0.finished_tests.fetch_add(1, Ordering::AcqRel);
        self.0.counters.test_run();
        self.0.running_tests.fetch_sub(1, Ordering::AcqRel);
    }
}

/// An open connection, counted against the connection cap until dropped.
#[derive(Debug)]
pub(crate) struct ConnectionSlot(Arc<Shared>);

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A data connection as a test receives it: its stream index (sonde),
/// or its place in the server's accept order (iperf3), and the socket.
pub(crate) type Delivered = (u64, TcpStream);

#[derive(Debug)]
struct Waiting {
    client: IpAddr,
    streams: usize,
    /// How many were delivered in arrival order (iperf3's data connections
    /// carry no index: the order they come in is their order).
    arrived: usize,
    tx: SyncSender<Delivered>,
}

/// Tests waiting for their data connections. A data connection names its
/// test by id; the registry hands it to that test's control session only
/// if it comes from the same client address.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    waiting: Mutex<HashMap<TestId, Waiting>>,
}

impl Registry {
    /// Opens a test for `streams` data connections from `client`.
    pub(crate) fn open(&self, id: TestId, client: IpAddr, streams: usize) -> Receiver<Delivered> {
        let (tx, rx) = sync_channel(streams.max(1));
        if let Ok(mut w) = self.waiting.lock() {
            w.insert(
                id,
                Waiting {
                    client: client.to_canonical(),
                    streams,
                    arrived: 0,
                    tx,
                },
            );
        }
        rx
    }

    /// Closes a test to further data connections.
    pub(crate) fn close(&self, id: TestId) {
        if let Ok(mut w) = self.waiting.lock() {
            w.remove(&id);
        }
    }

    /// Whether `id` is a test waiting for data connections.
    pub(crate) fn is_open(&self, id: TestId) -> bool {
        self.waiting.lock().is_ok_and(|w| w.contains_key(&id))
    }

    /// Hands an index-less data connection (iperf3's) to its test, with
    /// the place it had in the server's accept order: the test sorts its
    /// connections by that (they are read on threads of their own, which
    /// may finish in any order; iperf3's client opens them one by one).
    pub(crate) fn deliver_accepted(
        &self,
        id: TestId,
        accepted: u64,
        from: IpAddr,
        conn: TcpStream,
    ) {
        let Ok(mut w) = self.waiting.lock() else {
            return;
        };
        match w.get_mut(&id) {
            Some(t) if t.client == from.to_canonical() && t.arrived < t.streams => {
                t.arrived += 1;
                if t.tx.try_send((accepted, conn)).is_err() {
                    tracing::warn!(name: "data_connection_refused", peer = %from, reason = "surplus", "surplus data connection dropped");
                }
            }
            Some(_) => {
                tracing::warn!(name: "data_connection_refused", peer = %from, reason = "wrong_client", "data connection refused: wrong client or one too many")
            }
            None => {
                tracing::warn!(name: "data_connection_refused", peer = %from, test = %id, reason = "unknown_test", "data connection for an unknown test")
            }
        }
    }

    /// Hands a data connection to its test; drops it if the test is
    /// unknown, the index is out of range or the address differs.
    pub(crate) fn deliver(&self, id: TestId, stream: u16, from: IpAddr, conn: TcpStream) {
        let Ok(w) = self.waiting.lock() else { return };
        match w.get(&id) {
            Some(t) if t.client == from.to_canonical() && usize::from(stream) < t.streams => {
                if t.tx.try_send((u64::from(stream), conn)).is_err() {
                    tracing::warn!(name: "data_connection_refused", peer = %from, stream, reason = "surplus", "surplus data connection dropped");
                }
            }
            Some(_) => {
                tracing::warn!(name: "data_connection_refused", peer = %from, stream, reason = "wrong_client", "data connection refused: wrong client or index")
            }
            None => {
                tracing::warn!(name: "data_connection_refused", peer = %from, test = %id, reason = "unknown_test", "data connection for an unknown test")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_slots_stop_at_the_limit_and_come_back_when_dropped() {
        let shared = Shared::new(Limits {
            max_concurrent_tests: 2,
            ..Limits::default()
        });
        let a = shared.claim_test().unwrap();
        let b = shared.claim_test().unwrap();
        assert!(shared.claim_test().is_none());
        assert_eq!(shared.running_tests(), 2);
        drop(a);
        let c = shared.claim_test().unwrap();
        drop((b, c));
        assert_eq!(shared.running_tests(), 0);
    }

    #[test]
    fn connections_stop_at_the_cap_and_keep_their_accept_order() {
        let shared = Shared::new(Limits::default());
        let (first, n0) = shared.open_connection(2).unwrap();
        let (_second, n1) = shared.open_connection(2).unwrap();
        assert_eq!((n0, n1), (0, 1));
        assert!(shared.open_connection(2).is_none());
        drop(first);
        let (_third, n2) = shared.open_connection(2).unwrap();
        // A refused connection takes no place in the order.
        assert_eq!(n2, 2);
    }
}

/// The server's test slots, for work that starts elsewhere (the daemon's
/// gate: the API's tests, campaign steps, mesh shares) but counts against
/// the same `max_concurrent_tests` as the control port's tests.
#[derive(Debug, Clone)]
pub struct TestSlots(pub(crate) Arc<Shared>);

impl TestSlots {
    /// Tests holding a slot now.
    pub fn running(&self) -> u32 {
        self.0.running_tests()
    }

    /// One slot, held until dropped; `None` when all are taken.
    pub fn claim(&self) -> Option<TestSlot> {
        self.0.claim_test()
    }

    /// The `[limits]` the slots are counted under, now.
    pub fn limits(&self) -> Arc<Limits> {
        self.0.limits()
    }
}
