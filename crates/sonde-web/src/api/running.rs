//! Tests now: "run a test now" (`POST /api/v1/tests`, under the control
//! port's limits), the tests running, and their events as they happen
//! (Server-Sent Events, `GET /api/v1/events`).

use super::{bad, ApiError, Shared};
use crate::auth::Caller;
use crate::live::LiveTest;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::http::StatusCode;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use futures_util::stream::Stream;
use serde_json::{json, Value};
use sonde_archive::Placement;
use sonde_model::TestSpec;
use sonde_run::{Events, LocalRunner, Runner, Stop};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;

pub fn routes() -> Router<Shared> {
    Router::new()
        .route("/api/v1/tests", post(run_now))
        .route("/api/v1/live", get(live))
        .route("/api/v1/events", get(events))
}

async fn live(State(state): State<Shared>) -> Json<Vec<LiveTest>> {
    Json(state.live.running())
}

/// Every live event from now on, as Server-Sent Events. A watcher too
/// slow to keep up is told how many it missed (`event: lagged`).
async fn events(
    State(state): State<Shared>,
) -> Sse<impl Stream<Item = Result<SseEvent, std::convert::Infallible>>> {
    let rx = state.live.subscribe();
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        let event = match rx.recv().await {
            Ok(e) => SseEvent::default().event(e.name).data(e.data),
            Err(RecvError::Lagged(n)) => SseEvent::default()
                .event("lagged")
                .data(json!({ "missed": n }).to_string()),
            Err(RecvError::Closed) => return None,
        };
        Some((Ok(event), rx))
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

/// Runs the test in the body (a spec as a result's `spec` has it) from
/// this agent, now, if the control port's limits allow it; answers at
/// once with the run's id, and keeps the result in the archive.
async fn run_now(
    State(state): State<Shared>,
    caller: Option<Extension<Caller>>,
    client: Option<Extension<ConnectInfo<SocketAddr>>>,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let body = super::body(body)?;
    let spec: TestSpec =
        serde_json::from_slice(&body).map_err(|e| bad(format!("the test spec: {e}")))?;
    if let TestSpec::Ping(p) = &spec {
        if p.key_file.is_some() {
            return Err(bad("key_file: not accepted through the API"));
        }
    }
    let client = client.map(|Extension(ConnectInfo(a))| a);
    let who = caller.map_or_else(|| "anonymous".to_string(), |Extension(Caller(n))| n);
    let audit = |refusal: Option<&sonde_agent::Refusal>| {
        if let Some(a) = &state.audit {
            a.test(client, Some(&who), &spec, refusal);
        }
    };
    if let Err(refusal) = sonde_agent::check_local_test(&state.limits, &spec) {
        audit(Some(&refusal));
        state.counters.refused(&refusal);
        return Err(ApiError(
            StatusCode::UNPROCESSABLE_ENTITY,
            refusal.to_string(),
        ));
    }
    let max = state.limits.max_concurrent_tests as usize;
    if state.live.count() >= max {
        let refusal = sonde_agent::Refusal::Busy {
            max_concurrent_tests: state.limits.max_concurrent_tests,
        };
        audit(Some(&refusal));
        state.counters.refused(&refusal);
        return Err(ApiError(StatusCode::TOO_MANY_REQUESTS, refusal.to_string()));
    }
    audit(None);
    let run_id = uuid::Uuid::new_v4().to_string();
    let events = Events::new();
    state.live.watch(&run_id, &spec, &events);
    tracing::info!(run = %run_id, by = %who, test = spec.kind().name(), target = spec.host(), "test started through the API");
    let st = Arc::clone(&state);
    let id = run_id.clone();
    let spawned = std::thread::Builder::new()
        .name("sonde-api-test".into())
        .spawn(move || run_and_keep(&st, &spec, &events, &who, &id));
    if let Err(e) = spawned {
        return Err(ApiError(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("cannot start the test: {e}"),
        ));
    }
    Ok((StatusCode::ACCEPTED, Json(json!({ "run_id": run_id }))))
}

fn run_and_keep(state: &Shared, spec: &TestSpec, events: &Events, who: &str, run_id: &str) {
    let outcome = LocalRunner.run(spec, &Stop::new(), events);
    state.counters.test_run();
    let result = match outcome {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(run = %run_id, "test through the API failed: {e}");
            return;
        }
    };
    let at = Placement {
        campaign: None,
        run_id: Some(run_id.to_string()),
        method_id: None,
        labels: [
            ("origin".to_string(), "api".to_string()),
            ("by".to_string(), who.to_string()),
        ]
        .into(),
    };
    let kept = state.stores.with(|s| s.put_result(&result, &at));
    if let Err(e) = kept {
        state.counters.archive_error();
        tracing::error!(run = %run_id, "the result of a test through the API was not kept: {e}");
    }
}
