//! sonde's mesh (docs/mesh.md): many agents, one central archive.
//!
//! Each agent keeps every result in its own archive first; a forwarder
//! per destination ([`forwarder`]) then delivers what the archive queued
//! for it ([`sonde_archive::Outbox`]): to a central agent's API
//! ([`api_client`]) or straight into an archive. A central outage only
//! grows the backlog; delivery is idempotent by result id, so nothing is
//! lost and nothing is kept twice.

pub use sonde_http_client as api_client;
pub mod destination;
pub mod forward_config;
pub mod forwarder;
pub mod member;
pub mod mesh_config;
pub mod plan;

pub use destination::{Delivery, Destination, ForwardError};
pub use forward_config::ForwardConfig;
pub use forwarder::{start, Backoff};
pub use mesh_config::MeshConfig;

/// The body of `POST /api/v1/ingest`: forwarded items.
#[derive(Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IngestRequest {
    pub items: Vec<sonde_archive::Item>,
}

/// [`IngestRequest`] as the forwarder writes it, borrowing its items.
#[derive(Debug, serde::Serialize)]
pub struct IngestBody<'a> {
    pub items: &'a [sonde_archive::Item],
}

/// The central agent's answer to an ingest: how many items came and how
/// many of them were new (the rest it already had).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct IngestReply {
    /// Items in the batch.
    pub received: usize,
    /// Items the central agent did not have before.
    pub new: usize,
}

/// The path of the central agent's ingest endpoint.
pub const INGEST_PATH: &str = "/api/v1/ingest";
