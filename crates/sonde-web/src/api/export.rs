//! `GET /api/v1/export`: the results a filter selects, oldest first, as
//! CSV, JSON or NDJSON, streamed. A page holds at most
//! `http.max_export` results (`limit` asks for fewer); when more follow,
//! the answer says where the next page starts (`X-Sonde-Next-Cursor`
//! and a `Link: <…>; rel="next"`), and `cursor=` asks for it. The
//! archive is read a chunk at a time on the blocking pool, so an export
//! of any size holds one chunk in memory.

use super::openapi::{Op, Routes, Shape, JSON};
use super::redact::{has_token, redact};
use super::reply::{bad, query, ApiError};
use super::results::Filter;
use crate::state::Shared;
use crate::tokens::Caller;
use axum::body::{Body, Bytes};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use serde::Deserialize;
use serde_json::json;
use sonde_archive::{Chunk, Cursor, ExportRows, PageOf, ResultFilter, Store};
use sonde_model::schema::ResultDocument;
use std::sync::Arc;

/// Results read from the archive at a time.
const CHUNK: usize = 500;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExportQuery {
    /// `csv` (the default), `json` or `ndjson`.
    #[schemars(extend("enum" = ["csv", "json", "ndjson"]))]
    format: Option<String>,
    /// `result` (the default) or `interval`: what a CSV row is.
    #[schemars(extend("enum" = ["result", "interval"]))]
    per: Option<String>,
    /// Where the page starts: the X-Sonde-Next-Cursor the page before
    /// gave.
    #[schemars(regex(pattern = r"^[0-9]+\.[0-9a-f-]+$"))]
    cursor: Option<String>,
    /// At most this many in this page (default and most:
    /// `http.max_export`, 10,000).
    #[serde(default, deserialize_with = "super::results::whole_number")]
    #[schemars(range(min = 1, max = 10_000))]
    limit: Option<i64>,
    #[serde(flatten)]
    filter: Filter,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Csv(ExportRows),
    Json,
    Ndjson,
}

/// Where an export stands between two chunks.
struct Progress {
    state: Shared,
    filter: ResultFilter,
    format: Format,
    after: Option<Cursor>,
    left: usize,
    first: bool,
    done: bool,
    token: bool,
}

fn failed(e: impl std::fmt::Display) -> std::io::Error {
    tracing::warn!("http: export: {e}");
    std::io::Error::other("the archive could not be read to the end")
}

/// The next chunk's bytes, read on the blocking pool.
async fn next_chunk(mut p: Progress) -> Option<(Result<Bytes, std::io::Error>, Progress)> {
    if p.done {
        return None;
    }
    let want = p.left.min(CHUNK);
    let (filter, after, format) = (p.filter.clone(), p.after.clone(), p.format);
    let state = Arc::clone(&p.state);
    let read = tokio::task::spawn_blocking(move || {
        state.read_pool().with(|s: &mut Store| {
            let ids = s.page_cursors(&filter, after.as_ref(), want)?;
            let of = match format {
                Format::Csv(rows) => PageOf::Rows(rows),
                Format::Json | Format::Ndjson => PageOf::Documents,
            };
            let chunk = s.export_chunk(&ids, of)?;
            Ok::<_, sonde_archive::ArchiveError>((ids, chunk))
        })
    })
    .await;
    let (ids, chunk) = match read {
        Ok(Ok(x)) => x,
        Ok(Err(e)) => return Some((Err(failed(e)), Progress { done: true, ..p })),
        Err(e) => return Some((Err(failed(e)), Progress { done: true, ..p })),
    };
    let mut out = Vec::new();
    let got = ids.len();
    match (p.format, chunk) {
        (Format::Csv(rows), Chunk::Rows(r)) => {
            let columns = Store::export_columns(rows);
            if let Err(e) = sonde_archive::write_csv_part(
                &columns,
                &r,
                &mut out,
                sonde_campaign::rfc3339,
                p.first,
            ) {
                return Some((Err(failed(e)), Progress { done: true, ..p }));
            }
        }
        (format, Chunk::Documents(docs)) => {
            for (i, doc) in docs.iter().enumerate() {
                let mut v = match sonde_model::load_result(doc) {
                    Ok(r) => serde_json::to_value(&r).unwrap_or_default(),
                    Err(e) => return Some((Err(failed(e)), Progress { done: true, ..p })),
                };
                if !p.token {
                    redact(&mut v);
                }
                if format == Format::Json {
                    out.push(if p.first && i == 0 { b'[' } else { b',' });
                }
                out.extend(serde_json::to_vec(&v).unwrap_or_default());
                if format == Format::Ndjson {
                    out.push(b'\n');
                }
            }
            if format == Format::Json && p.first && docs.is_empty() {
                out.push(b'[');
            }
        }
        _ => {
            return Some((
                Err(failed("mismatched chunk")),
                Progress { done: true, ..p },
            ))
        }
    }
    p.left -= got.min(p.left);
    p.after = ids.last().cloned().or(p.after);
    p.first = false;
    if got < want || p.left == 0 {
        p.done = true;
        if p.format == Format::Json {
            out.push(b']');
        }
    }
    Some((Ok(Bytes::from(out)), p))
}

/// `GET /api/v1/export`.
pub fn routes() -> Routes {
    Routes::new()
        .op(
            Op::get("/api/v1/export", "export", "Results as a file, oldest first")
                .describe(" Streamed; a page holds at most http.max_export results.")
                .query::<ExportQuery>()
                .reply(200, "the file", "text/csv", Shape::text())
                .or(JSON, Shape::of::<Vec<ResultDocument>>())
                .or("application/x-ndjson", Shape::text())
                .headers(json!({"X-Sonde-Next-Cursor": {"description": "when more results follow: the cursor of the next page", "schema": {"type": "string"}}, "Link": {"description": "when more results follow: the next page, rel=\"next\"", "schema": {"type": "string"}}}))
                .error(429, "more than http.requests_per_minute exports a minute (Retry-After says when to ask again)")
                .errors(&[400, 401, 403, 503]),
            export,
        )
}

/// The results a filter selects, oldest first, as a file, a page at a
/// time.
pub async fn export(
    State(state): State<Shared>,
    caller: Option<Extension<Caller>>,
    uri: axum::http::Uri,
    q: Result<Query<ExportQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let q = query(q)?;
    let most = i64::try_from(state.http.max_export).unwrap_or(i64::MAX);
    let filter = q.filter.to_filter(q.limit, most, most)?;
    let limit = usize::try_from(filter.limit).unwrap_or(1);
    let after = q
        .cursor
        .as_deref()
        .map(str::parse::<Cursor>)
        .transpose()
        .map_err(bad)?;
    let format = match (q.format.as_deref().unwrap_or("csv"), q.per.as_deref()) {
        ("csv", None | Some("result")) => Format::Csv(ExportRows::Results),
        ("csv", Some("interval")) => Format::Csv(ExportRows::Intervals),
        (_, Some(p)) if p != "result" && p != "interval" => {
            return Err(bad(format!("per '{p}': result or interval")))
        }
        ("json", _) => Format::Json,
        ("ndjson", _) => Format::Ndjson,
        (f, _) => return Err(bad(format!("format '{f}': csv, json or ndjson"))),
    };
    // Where this page ends, and whether another follows, before the
    // first byte goes out (the headers say so).
    let next = {
        let (filter, after) = (filter.clone(), after.clone());
        crate::state::with_read_store(&state, move |s| {
            let end = s.page_end(&filter, after.as_ref(), limit)?;
            Ok(match end {
                Some(end) => s.page_end(&filter, Some(&end), 1)?.map(|_| end),
                None => None,
            })
        })
        .await?
    };
    let kind = match format {
        Format::Csv(_) => "text/csv; charset=utf-8",
        Format::Json => "application/json",
        Format::Ndjson => "application/x-ndjson",
    };
    let progress = Progress {
        state: Arc::clone(&state),
        filter,
        format,
        after,
        left: limit,
        first: true,
        done: false,
        token: has_token(caller.as_ref()),
    };
    let body = Body::from_stream(futures_util::stream::unfold(progress, next_chunk));
    let mut r = (StatusCode::OK, [(header::CONTENT_TYPE, kind)], body).into_response();
    if let Some(next) = next {
        let cursor = next.to_string();
        if let Ok(v) = HeaderValue::from_str(&cursor) {
            r.headers_mut().insert("x-sonde-next-cursor", v);
        }
        // The same request, from the next cursor on.
        let mut query: Vec<&str> = uri
            .query()
            .unwrap_or_default()
            .split('&')
            .filter(|kv| !kv.is_empty() && !kv.starts_with("cursor="))
            .collect();
        let at = format!("cursor={cursor}");
        query.push(&at);
        let link = format!("<{}?{}>; rel=\"next\"", uri.path(), query.join("&"));
        if let Ok(v) = HeaderValue::from_str(&link) {
            r.headers_mut().insert(header::LINK, v);
        }
    }
    Ok(r)
}
