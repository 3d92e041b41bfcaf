//! The acceptor's table of connections: where each stands, and the
//! counts of handshakes and refusals per source kept with it.

use super::Acceptor;
use crate::handshake::Full;
use crate::state::ConnectionSlot;
use mio::net::TcpStream;
use mio::{Interest, Token};
use sonde_wire::TestId;
use std::collections::HashMap;
use std::io::{self, Read};
use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

/// Where a connection in the acceptor stands.
#[derive(Debug)]
pub(super) enum Phase {
    /// Waiting for its opening: sonde's preamble and first message, or
    /// iperf3's cookie.
    Opening,
    /// An iperf3 test, sent PARAM_EXCHANGE, waiting for its parameters.
    Params(TestId),
    /// Over a cap: waiting for the first byte, to refuse in its protocol.
    Refusing(Full),
    /// Refused: reading whatever comes until the client closes, so that
    /// closing sends no reset over the refusal.
    Closing,
}

impl Phase {
    pub(super) fn is_handshake(&self) -> bool {
        matches!(self, Phase::Opening | Phase::Params(_))
    }
}

#[derive(Debug)]
pub(super) struct Conn {
    pub(super) stream: TcpStream,
    pub(super) peer: SocketAddr,
    pub(super) source: IpAddr,
    pub(super) deadline: Instant,
    /// Its place in the accept order, and its count against
    /// `max_connections` (handshakes only).
    pub(super) slot: Option<(ConnectionSlot, u64)>,
    pub(super) phase: Phase,
}

fn count(map: &mut HashMap<IpAddr, u32>, source: IpAddr, up: bool) {
    if up {
        *map.entry(source).or_default() += 1;
    } else if let Some(n) = map.get_mut(&source) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            map.remove(&source);
        }
    }
}

impl Acceptor {
    /// Watches `conn`; its token, unless it could not be watched (then it
    /// is closed).
    pub(super) fn insert(&mut self, mut conn: Conn) -> Option<usize> {
        let token = self.next_token;
        self.next_token = self.next_token.wrapping_add(1).max(self.listeners.len());
        if let Err(e) =
            self.poll
                .registry()
                .register(&mut conn.stream, Token(token), Interest::READABLE)
        {
            tracing::warn!(peer = %conn.peer, error = %e, "cannot watch a connection; closing");
            return None;
        }
        if conn.phase.is_handshake() {
            count(&mut self.handshakes_by_source, conn.source, true);
        } else {
            count(&mut self.refusing_by_source, conn.source, true);
            self.refusing += 1;
        }
        self.conns.insert(token, conn);
        Some(token)
    }

    pub(super) fn remove(&mut self, token: usize) -> Option<Conn> {
        let mut conn = self.conns.remove(&token)?;
        let _ = self.poll.registry().deregister(&mut conn.stream);
        if conn.phase.is_handshake() {
            count(&mut self.handshakes_by_source, conn.source, false);
        } else {
            count(&mut self.refusing_by_source, conn.source, false);
            self.refusing = self.refusing.saturating_sub(1);
        }
        Some(conn)
    }
}

/// Reads and drops what a refused client still sends; false once it has
/// closed (or failed).
pub(super) fn drain(stream: &mut TcpStream, scratch: &mut [u8]) -> bool {
    loop {
        match stream.read(scratch) {
            Ok(0) => return false,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
}
