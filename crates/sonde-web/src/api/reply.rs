//! How the API answers a request it cannot serve: a JSON error with its
//! status ([`ApiError`]), or a refusal with more to say ([`ApiRefusal`]),
//! and the checks of a request's query and body that give them.

use axum::extract::rejection::QueryRejection;
use axum::extract::Query;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

/// A JSON error with its status.
#[derive(Debug)]
pub struct ApiError(pub StatusCode, pub String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(serde_json::json!({ "error": self.1 }))).into_response()
    }
}

/// An error with more to say than its message: a refusal by the gate,
/// `{"error": "…", "rule": "consent", "at": "/url"}`.
#[derive(Debug)]
pub struct ApiRefusal(pub StatusCode, pub serde_json::Value);

impl IntoResponse for ApiRefusal {
    fn into_response(self) -> Response {
        (self.0, Json(self.1)).into_response()
    }
}

impl From<ApiError> for ApiRefusal {
    fn from(e: ApiError) -> Self {
        ApiRefusal(e.0, serde_json::json!({ "error": e.1 }))
    }
}

impl ApiRefusal {
    /// The gate's refusal `r`, its pointer under `prefix` and its message
    /// after `context`: 429 when every slot is taken, 422 otherwise.
    pub fn gate(r: &sonde_gate::Refused, prefix: &str, context: &str) -> Self {
        let status = match r {
            sonde_gate::Refused::Busy(_) => StatusCode::TOO_MANY_REQUESTS,
            _ => StatusCode::UNPROCESSABLE_ENTITY,
        };
        let at = match r.at() {
            "/" if !prefix.is_empty() => prefix.to_string(),
            at => format!("{prefix}{at}"),
        };
        let body =
            serde_json::json!({ "error": format!("{context}{r}"), "rule": r.rule(), "at": at });
        ApiRefusal(status, body)
    }
}

/// The archive failed: 503, saying no more than that (its error, which
/// may name tables, paths or hosts, goes to the agent's log).
pub fn unavailable() -> ApiError {
    ApiError(
        StatusCode::SERVICE_UNAVAILABLE,
        "the archive cannot be read or written now (the agent's log says why)".into(),
    )
}

pub fn bad(message: impl Into<String>) -> ApiError {
    ApiError(StatusCode::BAD_REQUEST, message.into())
}

pub fn not_found(message: impl Into<String>) -> ApiError {
    ApiError(StatusCode::NOT_FOUND, message.into())
}

/// A request body, or the JSON error of why it could not be read (413
/// over `http.max_body_bytes`).
pub fn body(
    b: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<axum::body::Bytes, ApiError> {
    b.map_err(|e| ApiError(e.status(), e.body_text()))
}

/// The query string as `T`, or a 400 naming what is wrong.
pub fn query<T>(q: Result<Query<T>, QueryRejection>) -> Result<T, ApiError> {
    q.map(|Query(v)| v).map_err(|e| bad(e.body_text()))
}
