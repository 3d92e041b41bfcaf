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

/// What the API answers when it cannot serve a request.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
#[schemars(rename = "Error")]
pub struct ErrorBody {
    /// What is wrong, for a person.
    pub error: String,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(ErrorBody { error: self.1 })).into_response()
    }
}

/// A request the agent's gate refused: the rule and where in the spec.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct Refusal {
    pub error: String,
    /// The rule: max_duration, max_streams, max_rate, max_work,
    /// max_concurrent_tests, no_files, consent, not_permitted, invalid_spec.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// The JSON pointer of the value at fault (`/` for the whole
    /// request).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
}

/// An error with more to say than its message: a refusal by the gate,
/// `{"error": "…", "rule": "consent", "at": "/url"}`.
#[derive(Debug)]
pub struct ApiRefusal(pub StatusCode, pub Refusal);

impl IntoResponse for ApiRefusal {
    fn into_response(self) -> Response {
        (self.0, Json(self.1)).into_response()
    }
}

impl From<ApiError> for ApiRefusal {
    fn from(e: ApiError) -> Self {
        ApiRefusal(
            e.0,
            Refusal {
                error: e.1,
                rule: None,
                at: None,
            },
        )
    }
}

/// The first item of a batch that was refused, by its index, and why:
/// nothing of the batch was kept.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct ItemRefusal {
    pub error: String,
    /// Its index in the batch (0 for a lone item).
    pub item: usize,
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
        let body = Refusal {
            error: format!("{context}{r}"),
            rule: Some(r.rule()),
            at: Some(at),
        };
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
