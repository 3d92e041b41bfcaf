//! The listening side of `sonde serve`: bind, and serve the listeners
//! with the acceptor (module `acceptor`), which takes each connection
//! through its handshake without a thread and hands it to the protocol
//! its first bytes name: sonde's preamble (module `native`) or an iperf3
//! cookie (module `iperf3`). A connection that fails ends alone; the
//! server keeps serving.

use crate::config::ServerConfig;
use crate::state::Shared;
use socket2::{Domain, Protocol, Socket, Type};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

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
        let access = crate::access::Access::load(&config.auth, &config.limits)
            .map_err(|(key, reason)| crate::config::ConfigError::Invalid { key, reason })?;
        let audit =
            crate::audit::AuditLog::open(config.auth.audit_log.as_deref()).map_err(|e| {
                crate::config::ConfigError::Invalid {
                    key: "auth.audit_log",
                    reason: format!("cannot open it for appending: {e}"),
                }
            })?;
        Ok(Self {
            listeners,
            shared: Shared::with_access(config.limits, access, audit),
        })
    }

    /// The audit log, for the tests the HTTP API starts.
    pub fn api_audit(&self) -> crate::api_audit::ApiAudit {
        crate::api_audit::ApiAudit(Arc::clone(&self.shared))
    }

    /// What takes a reloaded config's `[limits]` and `[auth]` in.
    pub fn reloader(&self) -> Reloader {
        Reloader(Arc::clone(&self.shared))
    }

    /// Its test slots, for the daemon's gate: a test a client runs here
    /// and one the API starts count against the same cap.
    pub fn slots(&self) -> crate::TestSlots {
        crate::TestSlots(Arc::clone(&self.shared))
    }

    /// Lets the control port run third-party tests with `runner`
    /// (without one it refuses them as unavailable).
    pub fn third_party(self, runner: Arc<dyn crate::ThirdPartyRunner>) -> Self {
        self.shared.set_third_party(runner);
        self
    }

    /// The counters `/metrics` shows: tests run, refusals by reason.
    pub fn counters(&self) -> Arc<crate::counters::AgentCounters> {
        Arc::clone(self.shared.counters_arc())
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
        let shared = Arc::clone(&self.shared);
        let listeners = self.listeners;
        let spawned = std::thread::Builder::new()
            .name("sonde-accept".into())
            .spawn(move || {
                if let Err(e) = crate::acceptor::run(listeners, shared) {
                    tracing::error!(error = %e, "the acceptor stopped");
                }
            });
        if let Err(e) = spawned {
            tracing::error!(error = %e, "cannot start the accept thread");
        }
        addrs
    }

    /// Serves until the process ends.
    pub fn run(self) {
        self.run_until(&Until::default());
    }

    /// Serves until `until` says to stop (or, without a condition, until
    /// the process ends); returns why it stopped.
    pub fn run_until(self, until: &Until) -> Stopped {
        let shared = Arc::clone(&self.shared);
        self.spawn();
        loop {
            std::thread::sleep(Duration::from_millis(100));
            if until
                .stop
                .as_ref()
                .is_some_and(|s| s.load(Ordering::Relaxed))
            {
                return Stopped::Signal;
            }
            if until.one_off && shared.finished_tests() > 0 && shared.running_tests() == 0 {
                return Stopped::OneOff;
            }
            if until.idle_timeout.is_some_and(|t| shared.idle_for() >= t) {
                return Stopped::Idle;
            }
        }
    }
}

/// When a server stops serving on its own (`sonde serve -1`,
/// `--idle-timeout`).
#[derive(Debug, Clone, Default)]
pub struct Until {
    /// After the first test that ran (a refused one does not count).
    pub one_off: bool,
    /// After this long with no test running, counted from the start and
    /// from the end of each test.
    pub idle_timeout: Option<Duration>,
    /// When this is set (by a signal handler).
    pub stop: Option<Arc<AtomicBool>>,
}

/// Why [`Server::run_until`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    OneOff,
    Idle,
    Signal,
}

/// Puts a reloaded config's `[limits]` and `[auth]` (tokens, classes)
/// in force for the requests from now on; tests running keep the terms
/// they were admitted under. The listening sockets, the reflector and
/// the audit log's file stay as they were started.
#[derive(Debug, Clone)]
pub struct Reloader(Arc<Shared>);

impl Reloader {
    /// Checks the new policy whole and puts it in force, or changes
    /// nothing and says what is wrong.
    pub fn reload(&self, config: &ServerConfig) -> Result<(), crate::config::ConfigError> {
        let access = crate::access::Access::load(&config.auth, &config.limits)
            .map_err(|(key, reason)| crate::config::ConfigError::Invalid { key, reason })?;
        self.0.set_policy(config.limits.clone(), access);
        Ok(())
    }
}
