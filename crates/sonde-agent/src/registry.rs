//! Tests waiting for their data connections. A data connection names its
//! test by id; the registry hands it to that test's control session only
//! if it comes from the same client address.

use crate::limits::canonical;
use sonde_wire::TestId;
use std::collections::HashMap;
use std::net::{IpAddr, TcpStream};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

/// A data connection as a test receives it: its stream index (sonde),
/// or its place in the server's accept order (iperf3), and the socket.
pub type Delivered = (u64, TcpStream);
use std::sync::Mutex;

#[derive(Debug)]
struct Waiting {
    client: IpAddr,
    streams: usize,
    /// How many were delivered in arrival order (iperf3's data connections
    /// carry no index: the order they come in is their order).
    arrived: usize,
    tx: SyncSender<(u64, TcpStream)>,
}

#[derive(Debug, Default)]
pub struct Registry {
    waiting: Mutex<HashMap<TestId, Waiting>>,
}

impl Registry {
    /// Opens a test for `streams` data connections from `client`.
    pub fn open(&self, id: TestId, client: IpAddr, streams: usize) -> Receiver<(u64, TcpStream)> {
        let (tx, rx) = sync_channel(streams.max(1));
        if let Ok(mut w) = self.waiting.lock() {
            w.insert(
                id,
                Waiting {
                    client: canonical(client),
                    streams,
                    arrived: 0,
                    tx,
                },
            );
        }
        rx
    }

    /// Closes a test to further data connections.
    pub fn close(&self, id: TestId) {
        if let Ok(mut w) = self.waiting.lock() {
            w.remove(&id);
        }
    }

    /// Whether `id` is a test waiting for data connections.
    pub fn is_open(&self, id: TestId) -> bool {
        self.waiting.lock().is_ok_and(|w| w.contains_key(&id))
    }

    /// Hands an index-less data connection (iperf3's) to its test, with
    /// the place it had in the server's accept order: the test sorts its
    /// connections by that (they are read on threads of their own, which
    /// may finish in any order; iperf3's client opens them one by one).
    pub fn deliver_accepted(&self, id: TestId, accepted: u64, from: IpAddr, conn: TcpStream) {
        let Ok(mut w) = self.waiting.lock() else {
            return;
        };
        match w.get_mut(&id) {
            Some(t) if t.client == canonical(from) && t.arrived < t.streams => {
                t.arrived += 1;
                if t.tx.try_send((accepted, conn)).is_err() {
                    tracing::warn!(%from, "surplus data connection dropped");
                }
            }
            Some(_) => {
                tracing::warn!(%from, "data connection refused: wrong client or one too many")
            }
            None => tracing::warn!(%from, %id, "data connection for an unknown test"),
        }
    }

    /// Hands a data connection to its test; drops it if the test is
    /// unknown, the index is out of range or the address differs.
    pub fn deliver(&self, id: TestId, stream: u16, from: IpAddr, conn: TcpStream) {
        let Ok(w) = self.waiting.lock() else { return };
        match w.get(&id) {
            Some(t) if t.client == canonical(from) && usize::from(stream) < t.streams => {
                if t.tx.try_send((u64::from(stream), conn)).is_err() {
                    tracing::warn!(%from, stream, "surplus data connection dropped");
                }
            }
            Some(_) => {
                tracing::warn!(%from, stream, "data connection refused: wrong client or index")
            }
            None => tracing::warn!(%from, %id, "data connection for an unknown test"),
        }
    }
}
