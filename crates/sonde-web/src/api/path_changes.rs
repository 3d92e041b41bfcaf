//! Route changes in the API (docs/trace.md, "Path changes"): `GET
//! /api/v1/path-changes`, the traces that took another route than the
//! trace before them on their path, newest first.

use super::openapi::{Op, Routes, Shape, JSON};
use super::reply::{bad, query, ApiError};
use crate::state::{with_read_store, Shared};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::Json;
use serde::Deserialize;
use sonde_archive::PathChangeRow;
use std::net::IpAddr;

pub fn routes() -> Routes {
    Routes::new()
        .op(
            Op::get("/api/v1/path-changes", "pathChanges", "Route changes: traces that took another route than the trace before them on their path, newest first")
                .query::<ChangesQuery>()
                .reply(200, "the changes, newest first", JSON, Shape::of::<Vec<PathChangeRow>>())
                .error(400, "a bad parameter, named")
                .errors(&[401, 403, 503, 429]),
            changes,
        )
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ChangesQuery {
    /// Only the path toward this address (IPv6 or IPv4).
    #[schemars(extend("anyOf" = [{"format": "ipv6"}, {"format": "ipv4"}]))]
    target: Option<String>,
    /// At most this many (default 100, at most 10,000).
    #[schemars(range(min = 1, max = 10_000))]
    limit: Option<i64>,
}

async fn changes(
    State(state): State<Shared>,
    q: Result<Query<ChangesQuery>, QueryRejection>,
) -> Result<Json<Vec<PathChangeRow>>, ApiError> {
    let q = query(q)?;
    let target = match q.target {
        Some(t) => Some(
            t.parse::<IpAddr>()
                .map_err(|_| bad(format!("target '{t}': an IPv6 or IPv4 address")))?
                .to_string(),
        ),
        None => None,
    };
    let limit = q.limit.unwrap_or(100);
    if !(1..=10_000).contains(&limit) {
        return Err(bad(format!("limit {limit}: 1 to 10000")));
    }
    let rows = with_read_store(&state, move |s| s.path_changes(target.as_deref(), limit)).await?;
    Ok(Json(rows))
}
