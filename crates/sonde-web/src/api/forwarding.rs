//! The mesh's two ends in the API (docs/mesh.md): an agent's forwarding
//! state (`GET /api/v1/forwarding`: backlog, oldest undelivered result,
//! last error, per destination), and a central agent's intake of what
//! agents forward (`POST /api/v1/ingest`, a token needed).

use super::{body, with_store, ApiError, Shared};
use crate::auth::Caller;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde_json::json;
use sonde_archive::{ForwardStatus, Item};
use sonde_mesh::{IngestReply, IngestRequest};

pub fn routes(max_ingest_bytes: usize) -> Router<Shared> {
    Router::new()
        .route("/api/v1/forwarding", get(forwarding))
        .route(
            "/api/v1/ingest",
            post(ingest).layer(DefaultBodyLimit::max(max_ingest_bytes)),
        )
}

async fn forwarding(State(state): State<Shared>) -> Result<Json<Vec<ForwardStatus>>, ApiError> {
    Ok(Json(with_store(&state, |s| s.forward_status()).await?))
}

/// The first item of a batch that can never be kept, by its index, and
/// why. The answer names it (422, `{"error", "item"}`) so that the
/// forwarder drops that item and sends the rest again.
fn unkeepable(items: &[Item]) -> Option<(usize, String)> {
    items
        .iter()
        .enumerate()
        .find_map(|(index, item)| match item {
            Item::Result { result, .. }
                if !result.duration_s.is_finite() || result.duration_s < 0.0 =>
            {
                Some((
                    index,
                    format!("result {}: duration_s is not a duration", result.id),
                ))
            }
            Item::Method { method, .. } if !method.trials.is_empty() => Some((
                index,
                format!(
                    "method {}: trials travel as results of their own, not inside the method",
                    method.id
                ),
            )),
            _ => None,
        })
}

/// Keeps a batch of forwarded items, all or none; each labelled with the
/// agent (the token's name) it came from, whatever label it came with.
async fn ingest(
    State(state): State<Shared>,
    caller: Option<Extension<Caller>>,
    raw: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Response, ApiError> {
    let raw = body(raw)?;
    let mut request: IngestRequest = serde_json::from_slice(&raw).map_err(|e| {
        ApiError(
            StatusCode::BAD_REQUEST,
            format!("the body is not a batch of items: {e}"),
        )
    })?;
    if let Some((index, why)) = unkeepable(&request.items) {
        let answer = json!({ "error": why, "item": index });
        return Ok((StatusCode::UNPROCESSABLE_ENTITY, Json(answer)).into_response());
    }
    let agent = caller.map(|Extension(Caller(name))| name);
    if let Some(agent) = &agent {
        for item in &mut request.items {
            let (Item::Result { placement, .. } | Item::Method { placement, .. }) = item;
            // Always the token's name: an agent cannot pass its
            // results off as another's.
            placement.labels.insert("agent".into(), agent.clone());
        }
    }
    let received = request.items.len();
    let items = request.items;
    let new = with_store(&state, move |s| s.put_items(&items)).await?;
    tracing::info!(
        agent = agent.as_deref().unwrap_or("-"),
        received,
        new,
        "ingest"
    );
    Ok(Json(IngestReply { received, new }).into_response())
}
