//! The JSON API under `/api/v1` (docs/api.md; its OpenAPI document at
//! `/api/v1/openapi.json`) and `/metrics`. Errors are JSON, `{"error":
//! "…"}`, with the status that fits: 400 a bad parameter or body, 401 no
//! token, 403 a wrong one, 404 nothing there, 409 a conflict, 413 a body
//! over the cap, 503 the archive unreachable.

mod alerts;
mod campaigns;
mod export;
mod forwarding;
mod incident_bodies;
mod incidents;
mod list;
pub mod mesh_agents;
pub mod openapi;
mod path_changes;
mod readings;
pub(crate) mod redact;
pub mod reply;
mod results;
mod running;
mod views;

use crate::auth;
use crate::state::Shared;
use axum::extract::{DefaultBodyLimit, State as AxState};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use openapi::{Op, Routes, Shape, JSON};
use reply::not_found;
use std::sync::Arc;

/// Every route of the API, behind the token check.
pub fn router(state: Shared) -> Router {
    routes(state.http.max_ingest_bytes)
        .into_router()
        .fallback(|| async { not_found("no such endpoint (see /api/v1/openapi.json)") })
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&state),
            auth::guard,
        ))
        .layer(DefaultBodyLimit::max(state.http.max_body_bytes))
        .with_state(state)
}

/// The API's routes with their operations: what the router serves and
/// the OpenAPI document describes.
fn routes(max_ingest_bytes: usize) -> Routes {
    Routes::new()
        .op(
            Op::get("/api/v1/info", "info", "This agent")
                .reply(200, "the agent", JSON, Shape::of::<Info>())
                .errors(&[401, 403, 429]),
            info,
        )
        .op(
            Op::get("/api/v1/metrics", "metricRegistry", "The metric registry")
                .describe("Every metric the archive indexes and `metric` parameters take: its names, label, unit, the scale from its kept unit, decimals, which way is worse and the tests that measure it (docs/metrics.md).")
                .reply(200, "the registry", JSON, Shape::of::<Registry>())
                .errors(&[401, 403, 429]),
            metrics_registry,
        )
        .op(
            Op::get("/metrics", "metrics", "Prometheus / OpenMetrics (docs/prometheus.md)")
                .reply(200, "the metrics", "application/openmetrics-text", Shape::text())
                .errors(&[401, 403, 503, 429]),
            crate::metrics::serve,
        )
        .op(
            Op::get("/api/v1/openapi.json", "openapi", "This document")
                .reply(200, "OpenAPI 3.1", JSON, Shape::object())
                .errors(&[401, 403, 429]),
            openapi,
        )
        .merge(results::routes())
        .merge(export::routes())
        .merge(views::routes())
        .merge(campaigns::routes())
        .merge(running::routes())
        .merge(forwarding::routes(max_ingest_bytes))
        .merge(mesh_agents::routes())
        .merge(alerts::routes())
        .merge(path_changes::routes())
        .merge(incidents::routes())
        .merge(readings::routes())
}

/// The API's OpenAPI document (`openapi::document`), as committed in
/// `crates/sonde-web/openapi.json`.
pub fn openapi_document() -> serde_json::Value {
    routes(0).document()
}

/// This agent: its version, name, archive and what it serves.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Info {
    sonde_version: &'static str,
    hostname: String,
    /// Where its archive is (a password left out).
    archive: String,
    /// Where it reads from when that is a read replica
    /// (`http.archive_read`; a password left out).
    #[serde(skip_serializing_if = "Option::is_none")]
    archive_read: Option<String>,
    /// Whether reading needs no token (`http.read_public`).
    read_public: bool,
    /// Whether campaigns may be made through the API.
    campaigns: bool,
    /// The metrics `metric` parameters take, from the metric registry.
    metrics: Vec<MetricEntry>,
}

async fn info(AxState(state): AxState<Shared>) -> Json<Info> {
    Json(Info {
        sonde_version: sonde_model::SONDE_VERSION,
        hostname: state.hostname.clone(),
        archive: sonde_archive::redacted(&state.archive),
        archive_read: state
            .http
            .archive_read
            .as_deref()
            .map(sonde_archive::redacted),
        read_public: state.http.read_public,
        campaigns: state.campaigns_dir.is_some(),
        metrics: registry(),
    })
}

/// A metric as the registry describes it (docs/metrics.md): what the
/// portal labels its choices with.
#[derive(serde::Serialize, schemars::JsonSchema)]
#[schemars(rename = "Metric")]
pub(crate) struct MetricEntry {
    /// As written in JSON and the archive.
    name: &'static str,
    /// The short name (`compare --metric`, a chart's title).
    short: &'static str,
    /// Other names `metric` parameters take (the RTT median is also
    /// `rtt_ms`).
    aliases: &'static [&'static str],
    /// As a table's column or a chart's axis names it.
    label: &'static str,
    /// The unit it is shown in.
    unit: &'static str,
    /// Shown value = kept value × scale.
    scale: f64,
    /// Decimals a value in its kept unit is printed with.
    decimals: usize,
    worse: sonde_model::metric::Worse,
    /// The tests whose results have it.
    tests: &'static [sonde_model::TestKind],
}

/// The metrics the API's `metric` parameters take, as the metric
/// registry describes them.
pub(crate) fn registry() -> Vec<MetricEntry> {
    sonde_model::Metric::ALL
        .into_iter()
        .map(|m| {
            let info = m.info();
            MetricEntry {
                name: info.name,
                short: info.short,
                aliases: info.aliases,
                label: info.label,
                unit: info.unit,
                scale: info.scale,
                decimals: info.decimals,
                worse: info.worse,
                tests: info.tests,
            }
        })
        .collect()
}

/// The metric registry, as `GET /api/v1/metrics` answers it.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Registry {
    metrics: Vec<MetricEntry>,
}

/// `GET /api/v1/metrics`: the metric registry.
async fn metrics_registry() -> Json<Registry> {
    Json(Registry {
        metrics: registry(),
    })
}

/// `GET /api/v1/openapi.json`: the document, made once.
async fn openapi() -> Response {
    static DOC: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let doc = DOC.get_or_init(|| openapi_document().to_string());
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        doc.clone(),
    )
        .into_response()
}
