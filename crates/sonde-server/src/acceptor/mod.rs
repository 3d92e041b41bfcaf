//! The acceptor: one thread that accepts every connection and carries each
//! handshake forward as its bytes arrive (`mio`: epoll), so a client that
//! has not finished its handshake costs no thread, however it trickles.
//!
//! A connection's opening is peeked, not consumed ([`crate::handshake`]
//! judges it). Once it is in, the connection goes to a thread of its own:
//! a native one with its preamble and first message, an iperf3 test with
//! its parameters (its cookie is read here, a data connection is handed to
//! its test here). Every handshake has [`HANDSHAKE_DEADLINE`] from accept;
//! past it the connection is closed.
//!
//! Two caps bound what waits here: `max_connections` (all the server's
//! connections, here or on their threads) and `max_handshakes_per_source`
//! (handshakes under way from one IPv4 address or IPv6 /64). A client over
//! either is told so in its protocol once its first byte names it (sonde's
//! refusal frame, or iperf3's ACCESS_DENIED), then closed; connections
//! waiting to be refused are capped too ([`REFUSING_MAX`] in all, and
//! twice `max_handshakes_per_source` from one source, so that a source
//! whose handshakes and as many refusals again are under way, a
//! slow-loris at its cap, still gets answers): past that, a connection
//! is closed at once, unanswered.

mod conn;
mod hand_off;

use conn::{drain, Conn, Phase};

use crate::handshake::{
    cookie_complete, native_complete, params_complete, protocol, source_name, source_of, Full,
    Protocol, HANDSHAKE_DEADLINE, PEEK_LEN,
};
use crate::state::Shared;
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};
use std::collections::HashMap;
use std::io::{self, Write};
use std::net::{IpAddr, Shutdown, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Most connections being refused at once, from all sources: waiting for
/// the first byte that names their protocol, or for the client to read
/// the refusal.
pub const REFUSING_MAX: usize = 256;
/// How long a refused client has to read its refusal before it is closed.
const LINGER: Duration = Duration::from_secs(1);
/// Longest sleep between two looks at the deadlines and the listeners.
const TICK: Duration = Duration::from_millis(500);

/// Connections turned away since the last log line: at most one line a
/// second says how many, however fast they come.
#[derive(Debug)]
struct TurnedAway {
    /// Refused over a cap (told so).
    refused: u64,
    /// Closed unanswered: too many refusals pending.
    unanswered: u64,
    /// Closed at the handshake deadline.
    late: u64,
    /// The last refusal, as the client read it.
    last: Option<String>,
    logged: Instant,
}

impl TurnedAway {
    fn log_each_second(&mut self) {
        if self.logged.elapsed() < Duration::from_secs(1)
            || self.refused + self.unanswered + self.late == 0
        {
            return;
        }
        tracing::warn!(
            refused = self.refused,
            closed_unanswered = self.unanswered,
            handshake_late = self.late,
            last_refusal = self.last.as_deref().unwrap_or("none"),
            "connections turned away"
        );
        *self = Self {
            refused: 0,
            unanswered: 0,
            late: 0,
            last: None,
            logged: Instant::now(),
        };
    }
}

/// Serves `listeners` on the calling thread, for as long as the process
/// runs.
pub(crate) fn run(listeners: Vec<std::net::TcpListener>, shared: Arc<Shared>) -> io::Result<()> {
    let poll = Poll::new()?;
    let mut mio_listeners = Vec::with_capacity(listeners.len());
    for (i, l) in listeners.into_iter().enumerate() {
        l.set_nonblocking(true)?;
        let mut l = TcpListener::from_std(l);
        poll.registry()
            .register(&mut l, Token(i), Interest::READABLE)?;
        mio_listeners.push(l);
    }
    let mut acceptor = Acceptor {
        poll,
        next_token: mio_listeners.len(),
        listeners: mio_listeners,
        shared,
        conns: HashMap::new(),
        handshakes_by_source: HashMap::new(),
        refusing_by_source: HashMap::new(),
        refusing: 0,
        scratch: vec![0u8; PEEK_LEN],
        turned_away: TurnedAway {
            refused: 0,
            unanswered: 0,
            late: 0,
            last: None,
            logged: Instant::now(),
        },
    };
    acceptor.serve()
}

struct Acceptor {
    poll: Poll,
    listeners: Vec<TcpListener>,
    shared: Arc<Shared>,
    conns: HashMap<usize, Conn>,
    next_token: usize,
    handshakes_by_source: HashMap<IpAddr, u32>,
    refusing_by_source: HashMap<IpAddr, u32>,
    refusing: usize,
    scratch: Vec<u8>,
    turned_away: TurnedAway,
}

impl Acceptor {
    fn serve(&mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(1024);
        loop {
            let now = Instant::now();
            let wait = self
                .conns
                .values()
                .map(|c| c.deadline)
                .min()
                .map_or(TICK, |d| d.saturating_duration_since(now).min(TICK));
            match self.poll.poll(&mut events, Some(wait)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            for event in &events {
                let t = event.token().0;
                if t < self.listeners.len() {
                    self.accept_all(t);
                } else {
                    self.progress(t, event.is_read_closed());
                }
            }
            if events.is_empty() {
                // A connection left in the backlog by a failed accept
                // (out of descriptors) raises no new event: look again.
                for i in 0..self.listeners.len() {
                    self.accept_all(i);
                }
            }
            self.expire();
            self.turned_away.log_each_second();
        }
    }

    fn accept_all(&mut self, listener: usize) {
        loop {
            match self.listeners[listener].accept() {
                Ok((stream, peer)) => self.admit(stream, peer),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    return;
                }
            }
        }
    }

    /// Takes a new connection in: as a handshake if it fits the caps,
    /// else to be refused (or, with the refusals full, closed at once).
    fn admit(&mut self, mut stream: TcpStream, peer: SocketAddr) {
        let limits = self.shared.limits();
        let per_source = limits.max_handshakes_per_source;
        let source = source_of(peer.ip());
        let deadline = Instant::now() + HANDSHAKE_DEADLINE;
        let slot = self
            .shared
            .open_connection(usize::try_from(limits.max_connections).unwrap_or(usize::MAX));
        let handshakes = self.handshakes_by_source.get(&source).copied().unwrap_or(0);
        let phase = match slot {
            None => Phase::Refusing(Full::Connections {
                max: limits.max_connections,
            }),
            Some(_) if handshakes >= per_source => Phase::Refusing(Full::Source {
                max: per_source,
                source,
            }),
            Some(_) => Phase::Opening,
        };
        let slot = slot.filter(|_| phase.is_handshake());
        if let Phase::Refusing(full) = &phase {
            let refusing = self.refusing_by_source.get(&source).copied().unwrap_or(0);
            if self.refusing >= REFUSING_MAX || refusing >= per_source.saturating_mul(2) {
                tracing::debug!(%peer, source = %source_name(source), refusal = %full.refusal(), "too many refusals pending; closing unanswered");
                self.turned_away.unanswered += 1;
                // What came with it is read, so the close is a FIN where
                // it can be.
                drain(&mut stream, &mut self.scratch);
                return;
            }
            tracing::debug!(%peer, refusal = %full.refusal(), "connection refused");
            self.turned_away.refused += 1;
            self.turned_away.last = Some(full.refusal().to_string());
        }
        let conn = Conn {
            stream,
            peer,
            source,
            deadline,
            slot,
            phase,
        };
        // A client's opening has often come by the time it is accepted:
        // taken at once, its handshake does not count against its source
        // while a burst of its connections (a test's streams) is accepted.
        if let Some(token) = self.insert(conn) {
            self.progress(token, false);
        }
    }

    /// Carries connection `token` forward with what it has sent.
    /// `read_closed`: the client has half-closed (sent all it will).
    fn progress(&mut self, token: usize, read_closed: bool) {
        let Some(conn) = self.conns.get_mut(&token) else {
            return;
        };
        if let Phase::Closing = conn.phase {
            if !drain(&mut conn.stream, &mut self.scratch) {
                self.remove(token);
            }
            return;
        }
        // Peeked bytes stay in the socket: epoll (edge-triggered, as mio
        // registers) still reports each new arrival of data on Linux, so
        // the next bytes raise the next event.
        let n = match conn.stream.peek(&mut self.scratch) {
            Ok(0) => {
                tracing::debug!(peer = %conn.peer, "closed during the handshake");
                self.remove(token);
                return;
            }
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return,
            Err(e) => {
                tracing::debug!(peer = %conn.peer, error = %e, "connection failed during the handshake");
                self.remove(token);
                return;
            }
        };
        let bytes = &self.scratch[..n];
        let proto = protocol(bytes);
        match &conn.phase {
            Phase::Refusing(full) => {
                let answer = full.answer(proto);
                // A fresh connection's send buffer takes a refusal whole.
                let _ = (&conn.stream).write(&answer);
                let _ = conn.stream.shutdown(Shutdown::Write);
                conn.phase = Phase::Closing;
                conn.deadline = Instant::now() + LINGER;
                if !drain(&mut conn.stream, &mut self.scratch) {
                    self.remove(token);
                }
            }
            Phase::Opening => {
                let complete = match proto {
                    // A native opening cut short by the client's close
                    // goes to its thread too, which refuses it by name
                    // (`frame`) rather than closing without a word.
                    Protocol::Native => native_complete(bytes) || read_closed,
                    Protocol::Iperf3 => cookie_complete(bytes),
                };
                if complete {
                    self.hand_off(token, proto);
                }
            }
            Phase::Params(_) => {
                if params_complete(bytes) {
                    self.hand_off(token, proto);
                }
            }
            Phase::Closing => {}
        }
    }

    /// Closes every connection past its deadline.
    fn expire(&mut self) {
        let now = Instant::now();
        let late: Vec<usize> = self
            .conns
            .iter()
            .filter(|(_, c)| c.deadline <= now)
            .map(|(t, _)| *t)
            .collect();
        for token in late {
            if let Some(mut conn) = self.remove(token) {
                // What it sent is read first, so the close is a FIN, not
                // a reset.
                drain(&mut conn.stream, &mut self.scratch);
                if conn.phase.is_handshake() {
                    tracing::debug!(peer = %conn.peer, deadline = ?HANDSHAKE_DEADLINE, "handshake not finished in time; closed");
                    self.turned_away.late += 1;
                }
            }
        }
    }
}
