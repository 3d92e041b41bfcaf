//! Who may use the API: bearer tokens from the configuration
//! (`[[http.tokens]]`). Writing and starting traffic always needs a
//! token; reading needs one unless `http.read_public`. No token: 401 with
//! `WWW-Authenticate: Bearer`; a token that is not one of ours: 403.
//! Tokens come only in the `Authorization` header, never in URLs, and
//! are compared in constant time.

use crate::api::reply::ApiError;
use crate::state::Shared;
use crate::tokens::Caller;
use crate::ApiPermission;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::net::SocketAddr;
use std::sync::atomic::Ordering;

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

/// GET routes whose answers hold personal data or the agents' own
/// addresses (contacts, incidents, mail templates, the owner lookup, mesh
/// agents): they need a token even when `http.read_public` lets anyone
/// read results. (Stored requests' secrets, in results and plans, are
/// hidden from such readers instead: `api::redact`.)
fn is_personal(method: &Method, path: &str) -> bool {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    method == Method::GET
        && matches!(
            parts.as_slice(),
            [
                "api",
                "v1",
                "owner" | "incidents" | "mail-templates" | "constituencies",
                ..
            ] | ["api", "v1", "mesh", "agents"]
        )
}

/// The routes that make the agent work hard per request (read or write
/// much of the archive, start traffic, a scheduler): held to
/// `http.requests_per_minute` per token, or per source without one.
fn is_expensive(method: &Method, path: &str) -> bool {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    matches!(
        (method, parts.as_slice()),
        (&Method::GET, ["api", "v1", "export"])
            | (
                &Method::POST,
                ["api", "v1", "tests" | "campaigns" | "ingest"]
            )
    )
}

/// The `Host` the request names, without its port.
fn host_of(req: &Request) -> Option<String> {
    let raw = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_string)
        .or_else(|| req.uri().host().map(str::to_string))?;
    let host = if let Some(rest) = raw.strip_prefix('[') {
        rest.split(']').next().unwrap_or_default().to_string()
    } else {
        raw.rsplit_once(':')
            .filter(|(_, port)| port.chars().all(|c| c.is_ascii_digit()))
            .map_or(raw.as_str(), |(h, _)| h)
            .to_string()
    };
    Some(host.trim_end_matches('.').to_ascii_lowercase())
}

/// Whether the API answers to `host`: an IP address, `localhost`, the
/// machine's own name, or one of `http.hosts` (`*`: any). A name that is
/// none of these is how a DNS-rebinding page in a browser would reach the
/// agent.
fn host_allowed(host: &str, allowed: &[String], own: &str) -> bool {
    host.parse::<std::net::IpAddr>().is_ok()
        || host == "localhost"
        || host.ends_with(".localhost")
        || (!own.is_empty() && host.eq_ignore_ascii_case(own))
        || allowed
            .iter()
            .any(|a| a == "*" || a.trim_end_matches('.').eq_ignore_ascii_case(host))
}

fn refuse(status: StatusCode, message: String) -> Response {
    ApiError(status, message).into_response()
}

fn too_many(message: String, wait: std::time::Duration) -> Response {
    let mut r = refuse(StatusCode::TOO_MANY_REQUESTS, message);
    let secs = wait.as_secs().max(1).to_string();
    if let Ok(v) = header::HeaderValue::from_str(&secs) {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

pub async fn guard(State(state): State<Shared>, mut req: Request, next: Next) -> Response {
    let guards = &state.guards;
    if let Some(host) = host_of(&req) {
        if !host_allowed(&host, &state.http.hosts, &state.hostname) {
            guards.refused.host.fetch_add(1, Ordering::Relaxed);
            tracing::info!(%host, "http: a request for a host name not in http.hosts refused");
            return refuse(
                StatusCode::MISDIRECTED_REQUEST,
                format!("this agent does not answer to the name {host:?} (add it to http.hosts)"),
            );
        }
    }
    let source = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(a)| guards.source_key(a.ip()));
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let reading = !is_write(&method, &path);
    let presented = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .map(str::to_string);
    let caller = match presented {
        Some(t) => {
            if let Some(src) = &source {
                if guards.auth_failures.exhausted(src) {
                    guards.refused.auth_locked.fetch_add(1, Ordering::Relaxed);
                    return too_many(
                        "too many wrong tokens from this address: wait a minute".into(),
                        std::time::Duration::from_secs(60),
                    );
                }
            }
            match state.tokens.holder(&t).await {
                Some(token) => {
                    if let Some(what) = needs(&method, &path) {
                        if !token.may(what) {
                            tracing::warn!(token = %token.name, %path, "http: a token refused what it may not do");
                            return refuse(
                                StatusCode::FORBIDDEN,
                                format!("the token of {} may not {}", token.name, what.name()),
                            );
                        }
                    }
                    Some(token.name.clone())
                }
                None => {
                    guards.refused.wrong_token.fetch_add(1, Ordering::Relaxed);
                    if let Some(src) = &source {
                        let _ = guards.auth_failures.take(src);
                    }
                    tracing::warn!(%path, source = source.as_deref().unwrap_or("-"), "http: a request with a wrong token refused");
                    return refuse(StatusCode::FORBIDDEN, "this token is not valid here".into());
                }
            }
        }
        None if reading && state.http.read_public && is_personal(&method, &path) => {
            guards.refused.personal.fetch_add(1, Ordering::Relaxed);
            return bearer_needed(
                "contacts, incidents, mail templates and agents' addresses need a bearer token (Authorization: Bearer …)",
            );
        }
        None if reading && state.http.read_public => None,
        None => {
            let what = if reading { "reading" } else { "this request" };
            return bearer_needed(&format!(
                "{what} needs a bearer token (Authorization: Bearer …)"
            ));
        }
    };
    if is_expensive(&method, &path) {
        let key = match (&caller, &source) {
            (Some(name), _) => format!("token {name}"),
            (None, Some(src)) => src.clone(),
            (None, None) => "anonymous".into(),
        };
        if let Err(wait) = guards.expensive.take(&key) {
            guards.refused.rate.fetch_add(1, Ordering::Relaxed);
            return too_many(
                format!(
                    "more than {} of these requests a minute (http.requests_per_minute)",
                    state.http.requests_per_minute
                ),
                wait,
            );
        }
    }
    if let Some(name) = caller {
        req.extensions_mut().insert(Caller(name));
    }
    next.run(req).await
}

fn bearer_needed(message: &str) -> Response {
    let mut r = refuse(StatusCode::UNAUTHORIZED, message.to_string());
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer realm=\"sonde\""),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::Tokens;
    use crate::ApiToken;
    use std::sync::Arc;

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

    fn name_of(tokens: &Arc<Tokens>, presented: &str) -> Option<String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(tokens.holder(presented))
            .map(|t| t.name.clone())
    }

    #[test]
    fn a_token_is_found_by_its_whole_value_only_clear_or_hashed() {
        let tokens = Arc::new(Tokens::new(vec![
            ApiToken {
                name: "ops".into(),
                token: "0123456789abcdef".into(),
                hash: None,
                may: None,
            },
            ApiToken {
                name: "ci".into(),
                token: "fedcba9876543210".into(),
                hash: None,
                may: Some(vec![ApiPermission::Ingest]),
            },
            ApiToken {
                name: "kept-hashed".into(),
                token: String::new(),
                hash: Some(crate::api_token::hash("a-hashed-token-0123").unwrap()),
                may: None,
            },
        ]));
        assert_eq!(name_of(&tokens, "fedcba9876543210").as_deref(), Some("ci"));
        assert!(tokens.tokens[1].may(ApiPermission::Ingest));
        assert!(!tokens.tokens[1].may(ApiPermission::RunNow));
        assert!(
            !tokens.tokens[0].may(ApiPermission::RunNow),
            "no list: read only"
        );
        assert_eq!(name_of(&tokens, "0123456789abcde"), None);
        assert_eq!(name_of(&tokens, "0123456789abcdef0"), None);
        assert_eq!(name_of(&tokens, ""), None);
        assert_eq!(
            name_of(&tokens, "a-hashed-token-0123").as_deref(),
            Some("kept-hashed")
        );
        assert_eq!(
            name_of(&tokens, "a-hashed-token-0123").as_deref(),
            Some("kept-hashed"),
            "again, from what was verified"
        );
        assert_eq!(name_of(&tokens, "a-hashed-token-0124"), None);
    }

    #[test]
    fn a_host_is_answered_only_by_address_or_an_allowed_name() {
        let allowed = vec!["sonde.example.net".to_string()];
        for ok in [
            "127.0.0.1",
            "::1",
            "localhost",
            "sonde.example.net",
            "agent-7",
        ] {
            assert!(host_allowed(ok, &allowed, "agent-7"), "{ok}");
        }
        for no in ["attacker.example", "sonde.example.net.evil", ""] {
            assert!(!host_allowed(no, &allowed, "agent-7"), "{no}");
        }
        assert!(host_allowed("anything.example", &["*".into()], ""));
        let req = |h: &str| {
            Request::builder()
                .uri("/api/v1/info")
                .header(header::HOST, h)
                .body(axum::body::Body::empty())
                .unwrap()
        };
        assert_eq!(host_of(&req("[::1]:8080")).as_deref(), Some("::1"));
        assert_eq!(
            host_of(&req("Sonde.Example.NET.:443")).as_deref(),
            Some("sonde.example.net")
        );
        assert_eq!(host_of(&req("127.0.0.1")).as_deref(), Some("127.0.0.1"));
    }

    #[test]
    fn personal_data_and_expensive_routes_are_named() {
        assert!(is_personal(&Method::GET, "/api/v1/constituencies/noc"));
        assert!(is_personal(&Method::GET, "/api/v1/incidents"));
        assert!(is_personal(&Method::GET, "/api/v1/mesh/agents"));
        assert!(!is_personal(&Method::GET, "/api/v1/campaigns/nightly"));
        assert!(!is_personal(&Method::GET, "/api/v1/campaigns"));
        assert!(!is_personal(&Method::GET, "/api/v1/results"));
        assert!(is_expensive(&Method::GET, "/api/v1/export"));
        assert!(is_expensive(&Method::POST, "/api/v1/ingest"));
        assert!(!is_expensive(&Method::GET, "/api/v1/results"));
    }
}
