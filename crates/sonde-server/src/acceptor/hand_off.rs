//! Handing a connection whose handshake is in to what serves it: a thread
//! of its own, or (an iperf3 cookie) `iperf3::open` here.

use super::conn::{Conn, Phase};
use super::Acceptor;
use crate::handshake::Protocol;
use crate::iperf3::Opened;
use crate::state::ConnectionSlot;
use mio::net::TcpStream;
use std::net::SocketAddr;
use std::sync::Arc;

impl Acceptor {
    /// A connection whose opening (or iperf3 parameters) is in: to a
    /// thread of its own, or, for an iperf3 cookie, read here.
    pub(super) fn hand_off(&mut self, token: usize, proto: Protocol) {
        let Some(conn) = self.remove(token) else {
            return;
        };
        let Conn {
            stream,
            peer,
            source,
            deadline,
            slot,
            phase,
        } = conn;
        let Some((slot, accepted)) = slot else { return };
        let stream = std::net::TcpStream::from(stream);
        if let Err(e) = stream.set_nonblocking(false) {
            tracing::warn!(%peer, error = %e, "cannot hand a connection on");
            return;
        }
        let shared = Arc::clone(&self.shared);
        match (phase, proto) {
            (Phase::Params(id), _) => spawn(peer, slot, move || {
                crate::iperf3::run_test(stream, peer, id, &shared, deadline)
            }),
            (_, Protocol::Native) => spawn(peer, slot, move || {
                crate::native::handle(stream, peer, &shared, deadline)
            }),
            (_, Protocol::Iperf3) => match crate::iperf3::open(stream, peer, &shared, accepted) {
                Ok(Opened::Test(stream, id)) => {
                    if let Err(e) = stream.set_nonblocking(true) {
                        tracing::warn!(%peer, error = %e, "cannot wait for iperf3 parameters");
                        return;
                    }
                    self.insert(Conn {
                        stream: TcpStream::from_std(stream),
                        peer,
                        source,
                        deadline,
                        slot: Some((slot, accepted)),
                        phase: Phase::Params(id),
                    });
                }
                Ok(Opened::Data | Opened::Done) => {}
                Err(e) => tracing::info!(%peer, error = %e, "connection ended"),
            },
        }
    }
}

/// Runs a connection's handler on a thread of its own, holding its count
/// against `max_connections` until it ends.
fn spawn(
    peer: SocketAddr,
    slot: ConnectionSlot,
    handler: impl FnOnce() -> Result<(), sonde_engine::EngineError> + Send + 'static,
) {
    let spawned = std::thread::Builder::new()
        .name("sonde-conn".into())
        .spawn(move || {
            if let Err(e) = handler() {
                tracing::info!(%peer, error = %e, "connection ended");
            }
            drop(slot);
        });
    if let Err(e) = spawned {
        tracing::error!(%peer, error = %e, "cannot start a connection thread");
    }
}
