//! The listening side of `sonde serve`: accept connections, tell control
//! connections from data connections, and keep serving whatever a client
//! sends.

use crate::config::ServerConfig;
use crate::limits::check_client;
use crate::registry::Registry;
use crate::session::run_control;
use socket2::{Domain, Protocol, Socket, Type};
use sonde_engine::control::Control;
use sonde_engine::EngineError;
use sonde_wire::{
    ClientMessage, Preamble, Refusal, ServerMessage, HANDSHAKE_FRAME_MAX, PROTOCOL_VERSION,
};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Time a new connection has to say who it is.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections handled at once (control, data and not yet identified);
/// more are closed at once so a flood cannot exhaust threads.
pub const MAX_CONNECTIONS: usize = 1024;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("invalid configuration: {0}")]
    Config(#[from] crate::config::ConfigError),
}

/// State shared by every connection of one server.
#[derive(Debug)]
pub struct Shared {
    pub config: ServerConfig,
    pub registry: Registry,
    pub running_tests: AtomicU32,
    connections: AtomicUsize,
    /// Connections accepted so far: each one's place in the accept order.
    accepted: AtomicU64,
}

/// A bound server, ready to run.
#[derive(Debug)]
pub struct Server {
    listeners: Vec<TcpListener>,
    shared: Arc<Shared>,
}

fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    sock.set_reuse_address(true)?;
    if addr.is_ipv6() {
        // `::` serves IPv4 clients too (as v4-mapped addresses).
        sock.set_only_v6(!addr.ip().is_unspecified())?;
    }
    sock.bind(&addr.into())?;
    sock.listen(1024)?;
    Ok(sock.into())
}

impl Server {
    /// Validates `config` and binds its addresses (default: `[::]`,
    /// dual-stack, falling back to `0.0.0.0` where IPv6 is off).
    pub fn bind(config: ServerConfig) -> Result<Self, ServeError> {
        config.validate()?;
        let mut listeners = Vec::new();
        if config.bind.is_empty() {
            let v6 = SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), config.port);
            match listen(v6) {
                Ok(l) => listeners.push(l),
                Err(e) => {
                    tracing::warn!(error = %e, "IPv6 unavailable, listening on IPv4 only");
                    let v4 = SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), config.port);
                    listeners
                        .push(listen(v4).map_err(|source| ServeError::Bind { addr: v4, source })?);
                }
            }
        }
        for ip in &config.bind {
            // With port 0, every address shares the port the first one got.
            let port = listeners
                .first()
                .and_then(|l: &TcpListener| l.local_addr().ok())
                .map_or(config.port, |a| a.port());
            let addr = SocketAddr::new(*ip, port);
            listeners.push(listen(addr).map_err(|source| ServeError::Bind { addr, source })?);
        }
        Ok(Self {
            listeners,
            shared: Arc::new(Shared {
                config,
                registry: Registry::default(),
                running_tests: AtomicU32::new(0),
                connections: AtomicUsize::new(0),
                accepted: AtomicU64::new(0),
            }),
        })
    }

    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.listeners
            .iter()
            .filter_map(|l| l.local_addr().ok())
            .collect()
    }

    /// Serves on background threads; returns at once.
    pub fn spawn(self) -> Vec<SocketAddr> {
        let addrs = self.local_addrs();
        for listener in self.listeners {
            let shared = Arc::clone(&self.shared);
            let spawned = std::thread::Builder::new()
                .name("sonde-accept".into())
                .spawn(move || accept_loop(&listener, &shared));
            if let Err(e) = spawned {
                tracing::error!(error = %e, "cannot start an accept thread");
            }
        }
        addrs
    }

    /// Serves until the process ends.
    pub fn run(self) {
        let mut listeners = self.listeners;
        let last = listeners.pop();
        for listener in listeners {
            let shared = Arc::clone(&self.shared);
            let _ = std::thread::Builder::new()
                .name("sonde-accept".into())
                .spawn(move || accept_loop(&listener, &shared));
        }
        if let Some(l) = last {
            accept_loop(&l, &self.shared);
        }
    }
}

struct ConnectionSlot(Arc<Shared>);

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Ordering::AcqRel);
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    loop {
        let (stream, peer) = match listener.accept() {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        if shared.connections.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
            shared.connections.fetch_sub(1, Ordering::AcqRel);
            tracing::warn!(%peer, "too many connections; closing");
            continue;
        }
        let slot = ConnectionSlot(Arc::clone(shared));
        let accepted = shared.accepted.fetch_add(1, Ordering::AcqRel);
        let spawned = std::thread::Builder::new()
            .name("sonde-conn".into())
            .spawn(move || {
                let shared = Arc::clone(&slot.0);
                if let Err(e) = handle_connection(stream, peer, &shared, accepted) {
                    tracing::info!(%peer, error = %e, "connection ended");
                }
                drop(slot);
            });
        if let Err(e) = spawned {
            tracing::error!(error = %e, "cannot start a connection thread");
        }
    }
}

fn refuse(control: &mut Control, refusal: Refusal) -> Result<(), EngineError> {
    control.send_preamble()?;
    control.send(&ServerMessage::Refused { refusal })
}

/// Serves one connection; `accepted` is its place in the accept order.
fn handle_connection(
    stream: TcpStream,
    peer: SocketAddr,
    shared: &Arc<Shared>,
    accepted: u64,
) -> Result<(), EngineError> {
    let _ = stream.set_nodelay(true);
    // sonde's peers open with its magic; anything else is taken for an
    // iperf3 client (whose cookie is 37 printable bytes).
    let mut first = [0u8; 4];
    stream
        .set_read_timeout(Some(HELLO_TIMEOUT))
        .map_err(EngineError::io("setting a read timeout"))?;
    let peeked = stream
        .peek(&mut first)
        .map_err(EngineError::io("the first bytes"))?;
    if peeked > 0 && first[..peeked] != sonde_wire::MAGIC[..peeked] {
        return crate::iperf3_session::handle(stream, peer, shared, HELLO_TIMEOUT, accepted);
    }
    let mut control = Control::new(stream);
    let preamble: Preamble = control.recv_preamble(HELLO_TIMEOUT)?;
    if preamble.version != PROTOCOL_VERSION {
        let refusal = Refusal::UnsupportedVersion {
            offered: preamble.version,
            supported: PROTOCOL_VERSION,
        };
        tracing::warn!(%peer, %refusal, "refused");
        return refuse(&mut control, refusal);
    }
    let first: ClientMessage =
        control.recv(HANDSHAKE_FRAME_MAX, HELLO_TIMEOUT, "the first message")?;
    match first {
        ClientMessage::TestRequest { request, env } => {
            if let Err(refusal) = check_client(&shared.config.limits, peer.ip()) {
                tracing::warn!(%peer, %refusal, "refused");
                return refuse(&mut control, refusal);
            }
            run_control(control, peer, request, &env, shared)
        }
        ClientMessage::StreamHello { test_id, stream } => {
            shared
                .registry
                .deliver(test_id, stream, peer.ip(), control.into_stream());
            Ok(())
        }
        other => Err(EngineError::Unexpected {
            expected: "a test request or a stream hello",
            got: format!("{other:?}").chars().take(60).collect(),
        }),
    }
}
