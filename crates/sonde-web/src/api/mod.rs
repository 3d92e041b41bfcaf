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
use axum::routing::get;
use axum::{Json, Router};
use reply::not_found;
use std::sync::Arc;

/// Every route of the API, behind the token check.
pub fn router(state: Shared) -> Router {
    Router::new()
        .route("/api/v1/info", get(info))
        .route("/api/v1/openapi.json", get(openapi))
        .route("/api/v1/metrics", get(metrics_registry))
        .route("/metrics", get(crate::metrics::serve))
        .merge(results::routes())
        .merge(export::routes())
        .merge(views::routes())
        .merge(campaigns::routes())
        .merge(running::routes())
        .merge(forwarding::routes(state.http.max_ingest_bytes))
        .merge(mesh_agents::routes())
        .merge(alerts::routes())
        .merge(path_changes::routes())
        .merge(incidents::routes())
        .merge(readings::routes())
        .fallback(|| async { not_found("no such endpoint (see /api/v1/openapi.json)") })
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&state),
            auth::guard,
        ))
        .layer(DefaultBodyLimit::max(state.http.max_body_bytes))
        .with_state(state)
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

/// The OpenAPI document of this API, written by hand
/// (`crates/sonde-web/openapi.json`) with the result schema of
/// docs/schema (generated from the model's types, `sonde_model::schema`)
/// put in at serve time. What keeps the hand-written part true is
/// schemathesis, run against a live agent in tests/portal/http_openapi.rs.
async fn openapi() -> Response {
    static DOC: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let doc = DOC.get_or_init(|| {
        openapi_document(
            include_str!("../../openapi.json"),
            include_str!("../../../../docs/schema/result-v3.schema.json"),
        )
        .to_string()
    });
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        doc.clone(),
    )
        .into_response()
}

/// The API's document with the result schema (docs/schema, the one the
/// results are checked against) put in as `TestResult`: its `$defs` become
/// components named `TestResult.*` (apart from the API's own, which may
/// share a name), and its references are rewritten to match.
fn openapi_document(api: &str, result_schema: &str) -> serde_json::Value {
    use serde_json::Value;
    fn rewrite(v: &mut Value) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get_mut("$ref") {
                    if r == "#" {
                        *r = "#/components/schemas/TestResult".into();
                    } else if let Some(name) = r.strip_prefix("#/$defs/") {
                        *r = format!("#/components/schemas/TestResult.{name}");
                    }
                }
                m.values_mut().for_each(rewrite);
            }
            Value::Array(a) => a.iter_mut().for_each(rewrite),
            _ => {}
        }
    }
    let mut doc: Value = serde_json::from_str(api).unwrap_or(Value::Null);
    let mut result: Value = serde_json::from_str(result_schema).unwrap_or(Value::Null);
    rewrite(&mut result);
    let Some(schemas) = doc
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    else {
        return doc;
    };
    if let Some(r) = result.as_object_mut() {
        if let Some(Value::Object(defs)) = r.remove("$defs") {
            for (k, v) in defs {
                schemas.insert(format!("TestResult.{k}"), v);
            }
        }
        r.remove("$schema");
        r.remove("$id");
    }
    schemas.insert("TestResult".into(), result);
    doc
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_document_holds_the_result_schema_with_its_references_resolved() {
        let doc = super::openapi_document(
            include_str!("../../openapi.json"),
            include_str!("../../../../docs/schema/result-v3.schema.json"),
        );
        let text = doc.to_string();
        assert!(!text.contains("\"#/$defs/"), "a reference left unresolved");
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        assert!(schemas.contains_key("TestResult"));
        // Every reference names a schema that is there.
        for r in text.split("\"$ref\":\"").skip(1) {
            let target = r.split('"').next().unwrap();
            let name = target.strip_prefix("#/components/schemas/").unwrap();
            assert!(schemas.contains_key(name), "{target} is not there");
        }
        assert!(doc["paths"]["/api/v1/tests"]["post"]["security"].is_array());
    }
}
