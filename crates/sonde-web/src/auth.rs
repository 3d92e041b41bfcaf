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
use sha2::{Digest, Sha256};
use sonde_agent::ApiPermission;
use subtle::ConstantTimeEq;

/// The name of the token a request came with (for logs and the archive).
#[derive(Debug, Clone)]
pub struct Caller(pub String);

/// The configured token `presented` matches. Every token is compared,
/// as SHA-256 digests of one length in constant time, so the time taken
/// says neither which one came close nor how long any is (`ct_eq` on
/// slices of different lengths returns at once).
fn holder<'t>(
    tokens: &'t [sonde_agent::ApiToken],
    presented: &str,
) -> Option<&'t sonde_agent::ApiToken> {
    let asked = Sha256::digest(presented.as_bytes());
    let mut found = None;
    for t in tokens {
        if bool::from(Sha256::digest(t.token.as_bytes()).ct_eq(&asked)) {
            found = Some(t);
        }
    }
    found
}

/// What a request does beyond reading, if anything: the permission its
/// token needs (`may`). Listed here rather than read from the router so
/// that a method no route has (`PUT /api/v1/info`) gets its 405 from the
/// router, not a request for a token; a test holds every write the
/// OpenAPI document lists to a line here.
fn needs(method: &Method, path: &str) -> Option<ApiPermission> {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    match (method, parts.as_slice()) {
        (&Method::POST, ["api", "v1", "tests"]) | (&Method::DELETE, ["api", "v1", "tests", _]) => {
            Some(ApiPermission::RunNow)
        }
        (&Method::POST, ["api", "v1", "campaigns"])
        | (&Method::POST, ["api", "v1", "campaigns", _, "pause" | "resume"])
        | (&Method::DELETE, ["api", "v1", "campaigns", _]) => Some(ApiPermission::Campaigns),
        (&Method::POST, ["api", "v1", "ingest"]) => Some(ApiPermission::Ingest),
        (&Method::POST, ["api", "v1", "mesh", "register"])
        | (&Method::GET, ["api", "v1", "mesh", "share"]) => Some(ApiPermission::Mesh),
        (&Method::POST, ["api", "v1", "readings"]) => Some(ApiPermission::Readings),
        (&Method::POST, ["api", "v1", "constituencies" | "incidents" | "mail-templates"])
        | (&Method::POST, ["api", "v1", "constituencies", _, "networks" | "contacts"])
        | (&Method::POST, ["api", "v1", "incidents", "import"])
        | (&Method::POST, ["api", "v1", "incidents", _, "comments" | "mail"])
        | (&Method::PATCH, ["api", "v1", "incidents", _])
        | (&Method::PATCH | &Method::DELETE, ["api", "v1", "constituencies", _])
        | (&Method::DELETE, ["api", "v1", "constituencies", _, "networks" | "contacts"]) => {
            Some(ApiPermission::Incidents)
        }
        _ => None,
    }
}

/// Whether a request is one of the API's writes (its routes that change
/// something, start or stop traffic): these always need a token.
fn is_write(method: &Method, path: &str) -> bool {
    needs(method, path).is_some() && method != Method::GET
}

pub async fn guard(State(state): State<Shared>, mut req: Request, next: Next) -> Response {
    let reading = !is_write(req.method(), req.uri().path());
    let presented = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .map(str::to_string);
    let caller = match presented {
        Some(t) => match holder(&state.http.tokens, &t) {
            Some(token) => {
                if let Some(what) = needs(req.method(), req.uri().path()) {
                    if !token.may(what) {
                        tracing::warn!(token = %token.name, path = %req.uri().path(), "http: a token refused what it may not do");
                        return ApiError(
                            StatusCode::FORBIDDEN,
                            format!("the token of {} may not {}", token.name, what.name()),
                        )
                        .into_response();
                    }
                }
                Some(token.name.clone())
            }
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
    fn the_writes_are_the_routes_that_change_something() {
        assert!(is_write(&Method::POST, "/api/v1/tests"));
        assert!(is_write(&Method::DELETE, "/api/v1/campaigns/nightly"));
        assert!(is_write(&Method::POST, "/api/v1/campaigns/nightly/resume"));
        assert!(is_write(&Method::POST, "/api/v1/ingest"));
        assert!(!is_write(&Method::GET, "/api/v1/mesh/share"));
        assert_eq!(
            needs(&Method::GET, "/api/v1/mesh/share"),
            Some(ApiPermission::Mesh)
        );
        assert_eq!(needs(&Method::GET, "/api/v1/mesh/agents"), None);
        assert!(!is_write(&Method::GET, "/api/v1/campaigns/nightly"));
        assert_eq!(
            needs(&Method::DELETE, "/api/v1/tests/x"),
            Some(ApiPermission::RunNow)
        );
        assert!(!is_write(&Method::PUT, "/api/v1/info"));
        assert!(!is_write(&Method::DELETE, "/api/v1/results/x"));
    }

    /// A write route added without its line in `needs` would be open to
    /// anyone: every operation the OpenAPI document lists that is not a
    /// GET must need a token.
    #[test]
    fn every_documented_write_needs_a_token() {
        let doc: serde_json::Value = serde_json::from_str(include_str!("../openapi.json")).unwrap();
        let mut writes = 0;
        for (path, ops) in doc["paths"].as_object().unwrap() {
            let concrete: String = path
                .split('/')
                .map(|p| if p.starts_with('{') { "x" } else { p })
                .collect::<Vec<_>>()
                .join("/");
            for method in ops.as_object().unwrap().keys() {
                let m: Method = method.to_ascii_uppercase().parse().unwrap();
                if m == Method::GET {
                    continue;
                }
                writes += 1;
                assert!(is_write(&m, &concrete), "{method} {path} needs no token");
            }
        }
        assert!(writes >= 10, "{writes} writes documented");
        for (method, path) in [
            (Method::PATCH, "/api/v1/constituencies/noc"),
            (Method::DELETE, "/api/v1/constituencies/noc"),
            (Method::DELETE, "/api/v1/constituencies/noc/networks"),
            (Method::DELETE, "/api/v1/constituencies/noc/contacts"),
        ] {
            assert_eq!(
                needs(&method, path),
                Some(ApiPermission::Incidents),
                "{method} {path}"
            );
        }
    }

    #[test]
    fn a_token_is_found_by_its_whole_value_only() {
        let tokens = [
            ApiToken {
                name: "ops".into(),
                token: "0123456789abcdef".into(),
                may: None,
            },
            ApiToken {
                name: "ci".into(),
                token: "fedcba9876543210".into(),
                may: Some(vec![ApiPermission::Ingest]),
            },
        ];
        let ci = holder(&tokens, "fedcba9876543210").map(|t| t.name.as_str());
        assert_eq!(ci, Some("ci"));
        assert!(tokens[1].may(ApiPermission::Ingest));
        assert!(!tokens[1].may(ApiPermission::RunNow));
        assert!(tokens[0].may(ApiPermission::RunNow), "no list: everything");
        assert_eq!(holder(&tokens, "0123456789abcde"), None);
        assert_eq!(holder(&tokens, "0123456789abcdef0"), None);
        assert_eq!(holder(&tokens, ""), None);
    }
}
