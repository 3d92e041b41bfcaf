//! The JSON API (read-only so far): the agent, results by filter, one
//! result, and `/metrics`. Errors are JSON: `{"error": "…"}` with the
//! status that fits (400 a bad parameter, 404 nothing there, 503 the
//! archive unreachable).

use axum::extract::{Path, Query, State as AxState};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use sonde_archive::{ResultFilter, Store};
use sonde_model::{ResultId, TestResult};
use std::sync::Arc;

pub struct State {
    pub archive: String,
}

type Shared = Arc<State>;

/// A JSON error with its status.
pub struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(serde_json::json!({ "error": self.1 }))).into_response()
    }
}

/// Runs `work` on the archive on tokio's blocking pool.
async fn with_store<T: Send + 'static>(
    state: &Shared,
    work: impl FnOnce(&mut Store) -> Result<T, sonde_archive::ArchiveError> + Send + 'static,
) -> Result<T, ApiError> {
    let location = state.archive.clone();
    tokio::task::spawn_blocking(move || {
        let mut store = Store::open(&location)?;
        work(&mut store)
    })
    .await
    .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
    .map_err(|e| ApiError(StatusCode::SERVICE_UNAVAILABLE, e.to_string()))
}

pub fn router(state: Shared) -> Router {
    Router::new()
        .route("/api/v1/info", get(info))
        .route("/api/v1/results", get(results))
        .route("/api/v1/results/{id}", get(result))
        .route("/metrics", get(metrics))
        .with_state(state)
}

async fn info(AxState(state): AxState<Shared>) -> Json<serde_json::Value> {
    let archive = sonde_archive::Store::open(&state.archive)
        .map(|s| s.location().to_string())
        .unwrap_or_else(|_| state.archive.clone());
    Json(serde_json::json!({
        "sonde_version": sonde_model::SONDE_VERSION,
        "archive": archive,
    }))
}

/// The filters of `GET /api/v1/results`, as `sonde results list` has them.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResultsQuery {
    test: Option<String>,
    target: Option<String>,
    campaign: Option<String>,
    family: Option<String>,
    direction: Option<String>,
    /// `KEY=VALUE`.
    label: Option<String>,
    /// Unix seconds.
    since: Option<i64>,
    until: Option<i64>,
    limit: Option<i64>,
}

fn bad(message: String) -> ApiError {
    ApiError(StatusCode::BAD_REQUEST, message)
}

async fn results(
    AxState(state): AxState<Shared>,
    query: Result<Query<ResultsQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Vec<TestResult>>, ApiError> {
    let Query(q) = query.map_err(|e| bad(e.body_text()))?;
    let label = match q.label {
        Some(l) => Some(
            l.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .ok_or_else(|| bad(format!("label '{l}': write KEY=VALUE")))?,
        ),
        None => None,
    };
    let limit = q.limit.unwrap_or(100);
    if !(1..=10_000).contains(&limit) {
        return Err(bad(format!("limit {limit}: 1 to 10000")));
    }
    let filter = ResultFilter {
        test: q.test,
        target: q.target,
        campaign: q.campaign,
        since_ns: q.since.map(|s| s.saturating_mul(1_000_000_000)),
        until_ns: q.until.map(|s| s.saturating_mul(1_000_000_000)),
        family: q.family,
        direction: q.direction,
        label,
        trials: true,
        limit,
    };
    let found = with_store(&state, move |s| s.list_results(&filter)).await?;
    Ok(Json(found))
}

async fn result(
    AxState(state): AxState<Shared>,
    Path(id): Path<String>,
) -> Result<Json<TestResult>, ApiError> {
    let rid: ResultId = id
        .parse()
        .map_err(|_| bad(format!("'{id}' is not a result id (a UUID)")))?;
    with_store(&state, move |s| s.get_result(rid))
        .await?
        .map(Json)
        .ok_or_else(|| ApiError(StatusCode::NOT_FOUND, format!("no result {id}")))
}

async fn metrics(AxState(state): AxState<Shared>) -> Result<Response, ApiError> {
    let filter = ResultFilter {
        trials: false,
        limit: 5_000,
        ..ResultFilter::default()
    };
    let recent = with_store(&state, move |s| s.list_results(&filter)).await?;
    let text = crate::metrics::render(&crate::metrics::latest_per_path(&recent));
    Ok((
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        text,
    )
        .into_response())
}
