//! sonde's HTTP side, in the agent (`sonde serve --http ADDR`): a JSON API
//! over the archive and Prometheus metrics (docs/api.md,
//! docs/prometheus.md). It runs on its own thread with its own small
//! runtime (axum on tokio); the measurement engine stays on its threads.
//!
//! The archive's `Store` is blocking (rusqlite, postgres): each request
//! opens it on tokio's blocking pool, so a slow database never stalls the
//! server's event loop.

mod api;
mod assets;
pub mod metrics;

use std::net::SocketAddr;
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
}

/// Binds `config.addr` and serves on a thread of its own until
/// `shutdown` is set. Returns the address bound.
pub fn spawn(
    config: WebConfig,
    shutdown: Arc<AtomicBool>,
) -> std::io::Result<(SocketAddr, std::thread::JoinHandle<()>)> {
    let listener = std::net::TcpListener::bind(config.addr)?;
    listener.set_nonblocking(true)?;
    let local = listener.local_addr()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
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
                let app = api::router(Arc::new(api::State {
                    archive: config.archive,
                }))
                .merge(assets::router());
                let stop = async move {
                    while !shutdown.load(Ordering::Relaxed) {
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                };
                if let Err(e) = axum::serve(listener, app)
                    .with_graceful_shutdown(stop)
                    .await
                {
                    tracing::error!("http: {e}");
                }
            });
        })?;
    Ok((local, handle))
}
