//! Who may use the API: bearer tokens from the configuration
//! (`[[http.tokens]]`). Writing and starting traffic always needs a
//! token; reading needs one unless `http.read_public`. No token: 401 with
//! `WWW-Authenticate: Bearer`; a token that is not one of ours: 403.
//! Tokens come only in the `Authorization` header, never in URLs, and
//! are compared in constant time.

use crate::api::{ApiError, Shared};
use axum::extract::{Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

/// The name of the token a request came with (for logs and the archive).
#[derive(Debug, Clone)]
pub struct Caller(pub String);

/// The configured token `presented` matches, by name. Every token is
/// compared, so the time taken does not say which one came close.
fn holder(tokens: &[sonde_agent::ApiToken], presented: &str) -> Option<String> {
    let mut found = None;
    for t in tokens {
        if bool::from(t.token.as_bytes().ct_eq(presented.as_bytes())) {
            found = Some(t.name.clone());
        }
    }
    found
}

pub async fn guard(State(state): State<Shared>, mut req: Request, next: Next) -> Response {
    let reading = matches!(*req.method(), Method::GET | Method::HEAD);
    let presented = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .map(str::to_string);
    let caller = match presented {
        Some(t) => match holder(&state.http.tokens, &t) {
            Some(name) => Some(name),
            None => {
                tracing::warn!(path = %req.uri().path(), "http: a request with a wrong token refused");
                return ApiError(StatusCode::FORBIDDEN, "this token is not valid here".into())
                    .into_response();
            }
        },
        None if reading && state.http.read_public => None,
        None => {
            let what = if reading { "reading" } else { "this request" };
            let mut r = ApiError(
                StatusCode::UNAUTHORIZED,
                format!("{what} needs a bearer token (Authorization: Bearer …)"),
            )
            .into_response();
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer realm=\"sonde\""),
            );
            return r;
        }
    };
    if let Some(name) = caller {
        req.extensions_mut().insert(Caller(name));
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_agent::ApiToken;

    #[test]
    fn a_token_is_found_by_its_whole_value_only() {
        let tokens = [
            ApiToken {
                name: "ops".into(),
                token: "0123456789abcdef".into(),
            },
            ApiToken {
                name: "ci".into(),
                token: "fedcba9876543210".into(),
            },
        ];
        assert_eq!(holder(&tokens, "fedcba9876543210").as_deref(), Some("ci"));
        assert_eq!(holder(&tokens, "0123456789abcde"), None);
        assert_eq!(holder(&tokens, "0123456789abcdef0"), None);
        assert_eq!(holder(&tokens, ""), None);
    }
}
