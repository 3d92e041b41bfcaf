//! What every handler of the agent's HTTP side shares ([`State`]), and
//! the one way a handler reaches the archive ([`with_store`]).

use crate::api::reply::{unavailable, ApiError};
use crate::live::LiveBus;
use crate::running_requests::RunningRequests;
use crate::HttpConfig;
use axum::http::StatusCode;
use sonde_archive::Store;
use sonde_server::AgentCounters;
use std::path::PathBuf;
use std::sync::Arc;

/// What every handler shares.
pub struct State {
    /// The caps and rates that keep cheap requests cheap.
    pub guards: Arc<crate::guards::Guards>,
    /// The API's tokens (`http.tokens`), clear or hashed.
    pub tokens: Arc<crate::tokens::Tokens>,
    pub archive: String,
    pub http: HttpConfig,
    /// The one admission gate.
    pub gate: Arc<sonde_gate::Gate>,
    /// The requests started through the API and still running, by run id.
    pub runs: RunningRequests,
    /// Where campaign plans are kept (`--campaigns DIR`), if the agent
    /// runs campaigns.
    pub campaigns_dir: Option<PathBuf>,
    pub live: Arc<LiveBus>,
    pub counters: Arc<AgentCounters>,
    pub hostname: String,
    /// `[mesh]`: the mesh plans this agent publishes as the central one,
    /// and when a silent agent is unknown.
    pub mesh: sonde_mesh::MeshConfig,
    /// The control port's audit log: who started what through the API.
    pub audit: Option<sonde_server::ApiAudit>,
    /// `[smtp]`'s mailer: where incident mail goes, if anywhere.
    pub mailer: Option<sonde_incidents::Mailer>,
    /// Open stores of `archive`, reused from request to request.
    pub stores: sonde_archive::StorePool,
    /// Open stores of `[http] archive_read` (a streaming replica), for
    /// what only reads; `None`: reads go to `stores`.
    pub read_stores: Option<sonde_archive::StorePool>,
    /// The MQTT readings' counts for `/metrics`, when the agent subscribes.
    pub readings: Option<Arc<crate::readings_ingest::IngestStats>>,
}

impl State {
    /// The stores what only reads is served from: the read replica's, or
    /// the archive's.
    pub fn read_pool(&self) -> &sonde_archive::StorePool {
        self.read_stores.as_ref().unwrap_or(&self.stores)
    }
}

pub type Shared = Arc<State>;

/// Runs `work` on the archive on tokio's blocking pool (the `Store` is
/// blocking; a slow database never stalls the event loop).
pub async fn with_store<T: Send + 'static>(
    state: &Shared,
    work: impl FnOnce(&mut Store) -> Result<T, sonde_archive::ArchiveError> + Send + 'static,
) -> Result<T, ApiError> {
    on_pool(state, false, work).await
}

/// Runs `work`, which only reads, on the read replica when the agent has
/// one (`[http] archive_read`), else as [`with_store`]. What a client
/// wrote a moment ago may not be there yet: the replica follows its
/// primary by the replication lag.
pub async fn with_read_store<T: Send + 'static>(
    state: &Shared,
    work: impl FnOnce(&mut Store) -> Result<T, sonde_archive::ArchiveError> + Send + 'static,
) -> Result<T, ApiError> {
    on_pool(state, true, work).await
}

async fn on_pool<T: Send + 'static>(
    state: &Shared,
    read: bool,
    work: impl FnOnce(&mut Store) -> Result<T, sonde_archive::ArchiveError> + Send + 'static,
) -> Result<T, ApiError> {
    let state = Arc::clone(state);
    tokio::task::spawn_blocking(move || {
        let pool = if read {
            state.read_pool()
        } else {
            &state.stores
        };
        pool.with(work)
    })
    .await
    .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
    .map_err(|e| {
        tracing::warn!("http: {e}");
        unavailable()
    })
}
