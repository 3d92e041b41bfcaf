//! The web portal's files (built from `portal/` by `build.rs` with npm
//! and vite), embedded in the binary with rust-embed: nothing to install
//! beside the agent, nothing fetched from a CDN. `index.html` is served
//! at `/` and `/portal` (the pages route after `#`), revalidated on each load (its ETag is the file's
//! hash); the scripts and styles under `/assets/` carry a hash in their
//! names, so they are cached for a year.

use axum::extract::Path;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use rust_embed::Embed;

#[derive(Embed)]
#[folder = "$OUT_DIR/portal"]
struct Portal;

/// The page's own scripts and styles only; uPlot and the pages set
/// inline styles, the favicon is a data: URL.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
                   img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'";

pub fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/", get(index))
        .route("/portal", get(index))
        .route("/portal/", get(index))
        .route("/assets/{*file}", get(asset))
}

async fn index(headers: HeaderMap) -> Response {
    serve("index.html", "no-cache", &headers)
}

async fn asset(Path(file): Path<String>, headers: HeaderMap) -> Response {
    serve(
        &format!("assets/{file}"),
        "public, max-age=31536000, immutable",
        &headers,
    )
}

fn serve(name: &str, cache: &'static str, headers: &HeaderMap) -> Response {
    let Some(file) = Portal::get(name) else {
        return (StatusCode::NOT_FOUND, "no such file in the portal").into_response();
    };
    let etag = format!("\"{}\"", hex(&file.metadata.sha256_hash()[..16]));
    let common = [
        (header::CACHE_CONTROL, HeaderValue::from_static(cache)),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
        (
            header::ETAG,
            HeaderValue::from_str(&etag).expect("hex is a valid header value"),
        ),
    ];
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag));
    if fresh {
        return (StatusCode::NOT_MODIFIED, common).into_response();
    }
    let mut response = (
        common,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static(content_type(name)),
        )],
        file.data.into_owned(),
    )
        .into_response();
    if name == "index.html" {
        response.headers_mut().insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CSP),
        );
    }
    response
}

/// The content type of a file vite writes, by its extension.
fn content_type(name: &str) -> &'static str {
    match name.rsplit('.').next().unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_portal_is_embedded() {
        let index = Portal::get("index.html").expect("index.html embedded");
        let page = String::from_utf8_lossy(&index.data);
        assert!(page.contains("/assets/"), "{page}");
        // Every asset the page names is embedded, under a hashed name.
        let names: Vec<String> = Portal::iter().map(|n| n.into_owned()).collect();
        for piece in page.split("\"/assets/").skip(1) {
            let file = piece.split('"').next().unwrap();
            assert!(
                names.contains(&format!("assets/{file}")),
                "{file} not in {names:?}"
            );
        }
        assert!(names.iter().any(|n| n.ends_with(".js")));
        assert!(names.iter().any(|n| n.ends_with(".css")));
    }

    #[test]
    fn content_types_follow_the_extension() {
        assert_eq!(content_type("index.html"), "text/html; charset=utf-8");
        assert_eq!(
            content_type("assets/index-Ab12.js"),
            "text/javascript; charset=utf-8"
        );
        assert_eq!(
            content_type("assets/index-Ab12.css"),
            "text/css; charset=utf-8"
        );
        assert_eq!(content_type("assets/x.bin"), "application/octet-stream");
    }
}
