//! The JSON API under `/api/v1` (docs/api.md; its OpenAPI document at
//! `/api/v1/openapi.json`) and `/metrics`. Errors are JSON, `{"error":
//! "…"}`, with the status that fits: 400 a bad parameter or body, 401 no
//! token, 403 a wrong one, 404 nothing there, 409 a conflict, 413 a body
//! over the cap, 503 the archive unreachable.

mod alerts;
mod campaigns;
mod export;
mod forwarding;
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
use serde_json::json;
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
                .reply(200, "the agent", JSON, Shape::component("Info"))
                .errors(&[401, 403, 429]),
            info,
        )
        .op(
            Op::get("/api/v1/metrics", "metricRegistry", "The metric registry")
                .describe("Every metric the archive indexes and `metric` parameters take: its names, label, unit, the scale from its kept unit, decimals, which way is worse and the tests that measure it (docs/metrics.md).")
                .reply(200, "the registry", JSON, Shape::json(json!({"type": "object", "properties": {"metrics": {"type": "array", "items": {"$ref": "#/components/schemas/Metric"}}}, "required": ["metrics"], "additionalProperties": false})))
                .errors(&[401, 403, 429]),
            metrics_registry,
        )
        .op(
            Op::get("/metrics", "metrics", "Prometheus / OpenMetrics (docs/prometheus.md)")
                .reply(200, "the metrics", "application/openmetrics-text", Shape::json(json!({"type": "string"})))
                .errors(&[401, 403, 503, 429]),
            crate::metrics::serve,
        )
        .op(
            Op::get("/api/v1/openapi.json", "openapi", "This document")
                .reply(200, "OpenAPI 3.1", JSON, Shape::json(json!({"type": "object"})))
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

async fn info(AxState(state): AxState<Shared>) -> Json<serde_json::Value> {
    Json(serde_json::json!({
        "sonde_version": sonde_model::SONDE_VERSION,
        "hostname": state.hostname,
        "archive": sonde_archive::redacted(&state.archive),
        "read_public": state.http.read_public,
        "campaigns": state.campaigns_dir.is_some(),
        "metrics": registry(),
    }))
}

/// The metrics the API's `metric` parameters take, as the metric
/// registry describes them (what the portal labels its choices with).
pub(crate) fn registry() -> Vec<serde_json::Value> {
    sonde_model::Metric::ALL
        .into_iter()
        .map(|m| {
            let info = m.info();
            let tests: Vec<&str> = info.tests.iter().map(|t| t.name()).collect();
            serde_json::json!({
                "name": info.name,
                "short": info.short,
                "aliases": info.aliases,
                "label": info.label,
                "unit": info.unit,
                "scale": info.scale,
                "decimals": info.decimals,
                "worse": info.worse,
                "tests": tests,
            })
        })
        .collect()
}

/// `GET /api/v1/metrics`: the metric registry.
async fn metrics_registry() -> Json<serde_json::Value> {
    Json(serde_json::json!({ "metrics": registry() }))
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
