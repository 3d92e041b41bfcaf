//! The alerts in the API (docs/alerts.md): `GET /api/v1/alerts`, every
//! rule's state on every path it watches (raised ones first) and the
//! latest notices, newest first.

use super::openapi::{Op, Routes, Shape, JSON};
use super::reply::{bad, query, ApiError};
use crate::state::{with_read_store, Shared};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::Json;
use serde::Deserialize;

pub fn routes() -> Routes {
    Routes::new().op(
        Op::get(
            "/api/v1/alerts",
            "alerts",
            "Every alert rule's state on every path it watches, and the latest notices",
        )
        .query::<AlertsQuery>()
        .reply(
            200,
            "how many are raised, the states (raised first) and the notices (newest first)",
            JSON,
            Shape::of::<Alerts>(),
        )
        .error(400, "a bad parameter, named")
        .errors(&[401, 403, 503, 429]),
        alerts,
    )
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct AlertsQuery {
    /// Notices from this time on (Unix seconds, as the results' `since`).
    #[schemars(range(min = 0, max = 9_223_372_036_i64))]
    since: Option<i64>,
    /// At most this many notices (default 100, at most 10,000).
    #[schemars(range(min = 1, max = 10_000))]
    limit: Option<i64>,
}

/// Every alert rule's state on every path it watches, and the latest
/// notices.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Alerts {
    /// How many are up.
    raised: usize,
    /// The states, raised first.
    states: Vec<sonde_archive::AlertStateRow>,
    /// The notices, newest first.
    events: Vec<sonde_archive::AlertEvent>,
}

async fn alerts(
    State(state): State<Shared>,
    q: Result<Query<AlertsQuery>, QueryRejection>,
) -> Result<Json<Alerts>, ApiError> {
    let q = query(q)?;
    let most = i64::MAX / 1_000_000_000;
    let since_ns = match q.since {
        Some(s) if !(0..=most).contains(&s) => {
            return Err(bad(format!("since {s}: Unix seconds from 0 to {most}")));
        }
        s => s.unwrap_or(0) * 1_000_000_000,
    };
    let limit = q.limit.unwrap_or(100);
    if !(1..=10_000).contains(&limit) {
        return Err(bad(format!("limit {limit}: 1 to 10000")));
    }
    let (states, events) = with_read_store(&state, move |s| {
        Ok((s.alert_states()?, s.alert_events(since_ns, limit)?))
    })
    .await?;
    Ok(Json(Alerts {
        raised: states.iter().filter(|s| s.up).count(),
        states,
        events,
    }))
}
