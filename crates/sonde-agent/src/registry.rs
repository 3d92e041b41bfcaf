//! Tests waiting for their data connections. A data connection names its
//! test by id; the registry hands it to that test's control session only
//! if it comes from the same client address.

use crate::limits::canonical;
use sonde_wire::TestId;
use std::collections::HashMap;
use std::net::{IpAddr, TcpStream};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Mutex;

#[derive(Debug)]
struct Waiting {
    client: IpAddr,
    streams: usize,
    /// How many were delivered in arrival order (iperf3's data connections
    /// carry no index: the order they come in is their order).
    arrived: usize,
    tx: SyncSender<(u16, TcpStream)>,
}

#[derive(Debug, Default)]
pub struct Registry {
    waiting: Mutex<HashMap<TestId, Waiting>>,
}

impl Registry {
    /// Opens a test for `streams` data connections from `client`.
    pub fn open(&self, id: TestId, client: IpAddr, streams: usize) -> Receiver<(u16, TcpStream)> {
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

    /// Hands an index-less data connection (iperf3's) to its test as the
    /// next stream.
    pub fn deliver_next(&self, id: TestId, from: IpAddr, conn: TcpStream) {
        let index = match self.waiting.lock() {
            Ok(mut w) => match w.get_mut(&id) {
                Some(t) => {
                    t.arrived += 1;
                    u16::try_from(t.arrived - 1).unwrap_or(u16::MAX)
                }
                None => return,
            },
            Err(_) => return,
        };
        self.deliver(id, index, from, conn);
    }

    /// Hands a data connection to its test; drops it if the test is
    /// unknown, the index is out of range or the address differs.
    pub fn deliver(&self, id: TestId, stream: u16, from: IpAddr, conn: TcpStream) {
        let Ok(w) = self.waiting.lock() else { return };
        match w.get(&id) {
            Some(t) if t.client == canonical(from) && usize::from(stream) < t.streams => {
                if t.tx.try_send((stream, conn)).is_err() {
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
