//! The mesh's two ends in the API (docs/mesh.md): an agent's forwarding
//! state (`GET /api/v1/forwarding`: backlog, oldest undelivered result,
//! last error, per destination), and a central agent's intake of what
//! agents forward (`POST /api/v1/ingest`, a token needed).

use super::openapi::{Op, Routes, Shape, JSON};
use super::reply::ApiError;
use super::reply::ItemRefusal;
use crate::state::{with_read_store, with_store, Shared};
use crate::tokens::Caller;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use sonde_archive::{ForwardStatus, Item};
use sonde_mesh::{IngestReply, IngestRequest};

pub fn routes(max_ingest_bytes: usize) -> Routes {
    Routes::new()
        .op(
            Op::get("/api/v1/forwarding", "forwarding", "This agent's forwarding to central archives, per destination")
                .reply(200, "backlog, oldest waiting result, delivered and last error per destination", JSON, Shape::of::<Vec<ForwardStatus>>())
                .errors(&[401, 403, 503, 429]),
            forwarding,
        )
        .op_limited(
            Op::post("/api/v1/ingest", "ingest", "A central agent keeps results forwarded by an agent (all or none)")
                .token()
                .body(JSON, Shape::read::<IngestRequest>())
                .reply(200, "kept; new counts the items not kept before", JSON, Shape::of::<IngestReply>())
                .error(413, "a batch over http.max_ingest_bytes")
                .reply(422, "an item that can never be kept, by its index", JSON, Shape::of::<ItemRefusal>())
                .error(429, "over http.requests_per_minute, or a cap (http.max_campaigns, http.max_ingest_requests); Retry-After says when to ask again")
                .errors(&[400, 401, 403, 503]),
            ingest,
            max_ingest_bytes,
        )
}

async fn forwarding(State(state): State<Shared>) -> Result<Json<Vec<ForwardStatus>>, ApiError> {
    Ok(Json(with_read_store(&state, |s| s.forward_status()).await?))
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

/// The `from` labels of `items` that name another than `agent`, each
/// once: what [`claimed_for_another`] must look up (none when an agent
/// sends its own results, as it does).
fn foreign_senders<'a>(items: &'a [Item], agent: &str) -> std::collections::BTreeSet<&'a str> {
    items
        .iter()
        .filter_map(|item| {
            let (Item::Result { placement, .. } | Item::Method { placement, .. }) = item;
            placement.labels.get("from").map(String::as_str)
        })
        .filter(|from| *from != agent)
        .collect()
}

/// The first item of a batch whose `from` label names another agent (one
/// `is_agent` says is: a token's name, or a registered agent of the mesh)
/// than the one whose token sent it: an agent speaks for the paths it
/// measures from, never for another's. (`to`, the far end, may be anyone;
/// a campaign's own endpoint names are not agents.)
fn claimed_for_another(
    items: &[Item],
    agent: &str,
    is_agent: impl Fn(&str) -> bool,
) -> Option<(usize, String)> {
    items.iter().enumerate().find_map(|(index, item)| {
        let (Item::Result { placement, .. } | Item::Method { placement, .. }) = item;
        match placement.labels.get("from") {
            Some(from) if from != agent && is_agent(from) => Some((
                index,
                format!("item {index} is labelled from {from:?}: the token of {agent} sends {agent}'s own results only"),
            )),
            _ => None,
        }
    })
}

/// Keeps a batch of forwarded items, all or none; each labelled with the
/// agent (the token's name) it came from, whatever label it came with.
async fn ingest(
    State(state): State<Shared>,
    caller: Option<Extension<Caller>>,
    raw: axum::body::Body,
) -> Result<Response, ApiError> {
    // Each ingest may hold `max_ingest_bytes` in memory: only so many at
    // once.
    let Ok(_place) = state.guards.ingest.clone().try_acquire_owned() else {
        state
            .guards
            .refused
            .ingest_busy
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut r = ApiError(
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "{} ingest requests are being kept already (http.max_ingest_requests): send again",
                state.http.max_ingest_requests
            ),
        )
        .into_response();
        r.headers_mut().insert(
            axum::http::header::RETRY_AFTER,
            axum::http::HeaderValue::from_static("1"),
        );
        return Ok(r);
    };
    // Read only once a place is held.
    let raw = axum::body::to_bytes(raw, state.http.max_ingest_bytes)
        .await
        .map_err(|e| {
            ApiError(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "the batch is not read whole within http.max_ingest_bytes ({} bytes): {e}",
                    state.http.max_ingest_bytes
                ),
            )
        })?;
    let mut request: IngestRequest = serde_json::from_slice(&raw).map_err(|e| {
        ApiError(
            StatusCode::BAD_REQUEST,
            format!("the body is not a batch of items: {e}"),
        )
    })?;
    if let Some((index, why)) = unkeepable(&request.items) {
        let answer = ItemRefusal {
            error: why,
            item: index,
        };
        return Ok((StatusCode::UNPROCESSABLE_ENTITY, Json(answer)).into_response());
    }
    let agent = caller.map(|Extension(Caller(name))| name);
    if let Some(agent) = &agent {
        // Only the labels that name another are looked up: the mesh's
        // registered agents are read only when one of them is not a
        // token's name (a central agent takes an ingest per agent per
        // battery; the common batch costs no query).
        let foreign = foreign_senders(&request.items, agent);
        let unknown: Vec<&str> = foreign
            .iter()
            .copied()
            .filter(|from| !state.tokens.has_name(from))
            .collect();
        let registered: std::collections::BTreeSet<String> = if unknown.is_empty() {
            std::collections::BTreeSet::new()
        } else {
            with_store(&state, |s| s.mesh_agents())
                .await?
                .into_iter()
                .map(|a| a.info.name)
                .collect()
        };
        let is_agent = |from: &str| state.tokens.has_name(from) || registered.contains(from);
        if let Some((index, why)) = claimed_for_another(&request.items, agent, is_agent) {
            tracing::warn!(%agent, "ingest: {why}");
            let answer = ItemRefusal {
                error: why,
                item: index,
            };
            return Ok((StatusCode::UNPROCESSABLE_ENTITY, Json(answer)).into_response());
        }
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
