//! `?limit=N` on the routes that list what configuration and time make
//! (campaigns and their runs, a run's events, constituencies, mail
//! templates, mesh agents, probes, interfaces, tests running): at most N
//! items, 1,000 unless asked, 10,000 at most. An answer that left some
//! out says so in `X-Sonde-Truncated: true`.

use super::reply::{bad, query, ApiError};
use axum::extract::rejection::QueryRejection;
use axum::extract::Query;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;

/// Items a list answer holds unless `limit` asks otherwise.
pub const DEFAULT: usize = 1_000;

/// The most `limit` may ask for.
pub const MOST: usize = 10_000;

/// The header that says a list was cut at its limit.
pub const TRUNCATED: &str = "x-sonde-truncated";

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// At most this many items (default 1000); an answer that left some
    /// out has X-Sonde-Truncated: true.
    #[schemars(range(min = 1, max = 10_000))]
    limit: Option<usize>,
}

/// A list route's query, as its handler takes it.
pub type ListQ = Result<Query<ListQuery>, QueryRejection>;

/// The `limit` the query asks for, or a 400 naming the range.
pub fn limit(q: ListQ) -> Result<usize, ApiError> {
    let n = query(q)?.limit.unwrap_or(DEFAULT);
    if !(1..=MOST).contains(&n) {
        return Err(bad(format!("limit {n}: 1 to {MOST}")));
    }
    Ok(n)
}

/// The first `limit` of `items`, and whether any were left out.
pub fn cut<T>(mut items: Vec<T>, limit: usize) -> (Vec<T>, bool) {
    let more = items.len() > limit;
    items.truncate(limit);
    (items, more)
}

/// The header [`answer`] may send, as the OpenAPI document has it.
pub fn truncated_header() -> serde_json::Value {
    serde_json::json!({
        "X-Sonde-Truncated": {
            "description": "true when the list was cut at its limit",
            "schema": { "type": "string", "enum": ["true"] },
        }
    })
}

/// `body` as JSON, marked truncated if `more`.
pub fn answer(body: impl serde::Serialize, more: bool) -> Response {
    let mut r = Json(body).into_response();
    if more {
        r.headers_mut()
            .insert(TRUNCATED, axum::http::HeaderValue::from_static("true"));
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_is_cut_at_its_limit_and_says_so() {
        assert_eq!(cut(vec![1, 2, 3], 2), (vec![1, 2], true));
        assert_eq!(cut(vec![1, 2], 2), (vec![1, 2], false));
        let r = answer(vec![1], true);
        assert_eq!(r.headers()[TRUNCATED], "true");
        assert!(answer(vec![1], false).headers().get(TRUNCATED).is_none());
    }
}
