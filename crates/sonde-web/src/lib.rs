//! sonde's HTTP side, in the agent (`sonde serve --http ADDR`): the JSON
//! API over the archive (docs/api.md), the web portal (docs/portal.md)
//! and Prometheus metrics (docs/prometheus.md). It runs on its own thread
//! with its own small runtime (axum on tokio); the measurement engine
//! stays on its threads.
//!
//! The archive's `Store` is blocking (rusqlite, postgres): each request
//! opens it on tokio's blocking pool, so a slow database never stalls the
//! server's event loop.

mod api;
pub mod api_token;
mod assets;
mod auth;
mod connections;
mod guards;
pub mod http_config;
pub mod interfaces;
pub mod live;
pub mod metrics;
mod openmetrics;
mod rate;
pub mod readings_ingest;
mod rtt_histograms;
mod running_requests;
mod serve;
mod state;
mod status;
mod tls;
mod tokens;

pub use http_config::{ApiPermission, ApiToken, HttpConfig, Levels, Thresholds};
pub use live::{LiveBus, LiveRunner};
pub use state::State;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What the HTTP server serves.
#[derive(Debug, Clone)]
pub struct WebConfig {
    /// Where to listen (`[::1]:8080`; port 0 for any free one).
    pub addr: SocketAddr,
    /// The archive it reads (a SQLite path or a postgres:// URL).
    pub archive: String,
    pub http: crate::HttpConfig,
    /// The agent's one admission gate: every request the API starts
    /// passes it.
    pub gate: Arc<sonde_gate::Gate>,
    /// The agent's campaigns directory, if it runs campaigns.
    pub campaigns_dir: Option<PathBuf>,
    pub live: Arc<LiveBus>,
    pub counters: Arc<sonde_server::AgentCounters>,
    /// `[mesh]` of the configuration.
    pub mesh: sonde_mesh::MeshConfig,
    /// The control port's audit log, for the tests the API starts.
    pub audit: Option<sonde_server::ApiAudit>,
    /// The mailer of `[smtp]`: incident mail.
    pub mailer: Option<sonde_incidents::Mailer>,
    /// The MQTT readings' counts, when the agent subscribes.
    pub readings: Option<Arc<readings_ingest::IngestStats>>,
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

/// Binds `config.addr` and serves on a thread of its own until
/// `shutdown` is set. Returns the address bound.
pub fn spawn(
    config: WebConfig,
    shutdown: Arc<AtomicBool>,
) -> std::io::Result<(SocketAddr, std::thread::JoinHandle<()>)> {
    let tls = match (&config.http.tls_cert, &config.http.tls_key) {
        (Some(cert), Some(key)) => Some(tls::acceptor(cert, key)?),
        _ => None,
    };
    let listener = std::net::TcpListener::bind(config.addr)?;
    listener.set_nonblocking(true)?;
    let local = listener.local_addr()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let guards = guards::Guards::new(&config.http);
    let timeouts = serve::Timeouts {
        header: config.http.header_timeout,
        idle: config.http.idle_timeout,
    };
    let state =
        Arc::new(state::State {
            guards: Arc::clone(&guards),
            tokens: Arc::new(tokens::Tokens::new(config.http.tokens.clone())),
            stores: sonde_archive::StorePool::new(&config.archive, config.http.archive_connections),
            read_stores: config.http.archive_read.as_deref().map(|url| {
                sonde_archive::StorePool::read_only(url, config.http.archive_connections)
            }),
            archive: config.archive,
            http: config.http,
            gate: config.gate,
            runs: running_requests::RunningRequests::default(),
            campaigns_dir: config.campaigns_dir,
            live: config.live,
            counters: config.counters,
            hostname: hostname(),
            mesh: config.mesh,
            audit: config.audit,
            mailer: config.mailer,
            readings: config.readings,
        });
    let handle = std::thread::Builder::new()
        .name("sonde-http".into())
        .spawn(move || {
            runtime.block_on(async move {
                let listener = match tokio::net::TcpListener::from_std(listener) {
                    Ok(l) => l,
                    Err(e) => {
                        tracing::error!("http: {e}");
                        return;
                    }
                };
                let app = api::router(state).merge(assets::router());
                let stop = async move {
                    while !shutdown.load(Ordering::Relaxed) {
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                };
                serve::serve(
                    listener,
                    tls,
                    app,
                    Arc::clone(&guards.connections),
                    timeouts,
                    Arc::clone(&guards.closed),
                    stop,
                )
                .await;
            });
        })?;
    Ok((local, handle))
}
