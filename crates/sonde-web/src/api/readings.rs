//! The API's readings (docs/readings.md).
//!
//! - `POST /api/v1/readings`: one reading (a JSON object) or a batch (an
//!   array of up to [`MAX_BATCH`]), kept all or nothing: 201 with how
//!   many were new and how many already kept (200 if none was new); 422
//!   `{"error", "item"}` naming the first bad reading (its index, 0 for a
//!   lone object) and why, and then nothing is kept.
//! - `GET /api/v1/readings?probe=&metric=&interval=day|month|year&date=
//!   YYYY-MM-DD`: the series (a day: 96 15-minute points; a month: a
//!   point a day; a year: a point a month); every point is there, its
//!   figures null where nothing was read. `interval` defaults to `day`,
//!   `date` to today (UTC).
//! - `GET /api/v1/readings/probes`: every probe's metrics, with unit and
//!   first and last reading's time (at most `limit`, as every list).

use super::list::{self, ListQ};
use super::openapi::{Op, Routes, Shape, JSON};
use super::reply::ItemRefusal;
use super::reply::{bad, body, not_found, query, ApiError};
use crate::state::{with_read_store, with_store, Shared};
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::Value;
use sonde_archive::ReadingsWrite;
use sonde_model::clock::now_ns;
use sonde_readings::aggregate::Point;
use sonde_readings::reading::{format_time, valid_name};
use sonde_readings::{Interval, Reading};

/// The most readings one request may post.
pub const MAX_BATCH: usize = 10_000;

pub fn routes() -> Routes {
    Routes::new()
        .op(
            Op::get("/api/v1/readings", "readingsSeries", "A probe's metric over a day (96 15-minute points), a month (a point a day) or a year (a point a month)")
                .query::<SeriesQuery>()
                .reply(200, "the series", JSON, Shape::of::<ReadingsSeries>())
                .error(400, "a bad parameter")
                .error(404, "no such probe's metric")
                .errors(&[401, 403, 503, 429]),
            series,
        )
        .op(
            Op::post("/api/v1/readings", "postReadings", "Post one reading or a batch (all or nothing)")
                .token()
                .body(JSON, Shape::read::<Readings>())
                .reply(201, "kept, some new", JSON, Shape::of::<ReadingsPosted>())
                .reply(200, "every reading was already kept", JSON, Shape::of::<ReadingsPosted>())
                .error(400, "a body that is not a reading or an array of readings")
                .reply(422, "a bad reading: nothing kept", JSON, Shape::of::<ItemRefusal>())
                .errors(&[413, 401, 403, 503, 429]),
            post,
        )
        .op(
            Op::get("/api/v1/readings/probes", "readingsProbes", "Every probe's metrics, with unit and first and last reading's time")
                .query::<super::list::ListQuery>()
                .reply(200, "the probes' metrics", JSON, Shape::of::<ReadingSeriesList>())
                .headers(super::list::truncated_header())
                .error(400, "a bad parameter (limit out of range, an unknown one)")
                .errors(&[401, 403, 503, 429]),
            probes,
        )
}

/// What a batch of readings came to.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct ReadingsPosted {
    /// Readings kept that were not kept before.
    new: usize,
    /// Readings already kept (the same probe, metric and time).
    duplicate: usize,
}

fn refused(item: usize, error: String) -> Response {
    (
        StatusCode::UNPROCESSABLE_ENTITY,
        Json(ItemRefusal {
            error: format!("reading {item}: {error}"),
            item,
        }),
    )
        .into_response()
}

async fn post(
    State(state): State<Shared>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let raw = body(raw)?;
    let doc: Value =
        serde_json::from_slice(&raw).map_err(|e| bad(format!("the body is not JSON: {e}")))?;
    let items = match doc {
        Value::Array(a) => a,
        o @ Value::Object(_) => vec![o],
        _ => {
            return Err(bad(
                "the body is a reading (an object) or an array of readings",
            ))
        }
    };
    if items.is_empty() {
        return Err(bad("no readings in the array"));
    }
    if items.len() > MAX_BATCH {
        return Err(bad(format!(
            "{} readings: at most {MAX_BATCH} a request",
            items.len()
        )));
    }
    let now = now_ns();
    let mut readings = Vec::with_capacity(items.len());
    for (i, v) in items.into_iter().enumerate() {
        // A reading without `at` is read when it arrived; the i-th of a
        // batch a nanosecond after the one before, so that a batch of
        // them is not taken for one reading and its duplicates.
        let arrived = now.saturating_add(i64::try_from(i).unwrap_or(0));
        match Reading::from_json(v, arrived) {
            Ok(r) => readings.push(r),
            Err(e) => return Ok(refused(i, e.to_string())),
        }
    }
    let written = with_store(&state, move |s| s.put_readings(&readings, now)).await?;
    Ok(match written {
        ReadingsWrite::Kept { new, duplicate } => {
            let status = if new > 0 {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            (status, Json(ReadingsPosted { new, duplicate })).into_response()
        }
        ReadingsWrite::UnitConflict { index, message } => refused(index, message),
    })
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct SeriesQuery {
    /// The probe: 1 to 64 letters, digits, `.`, `_`, `-` or `:`.
    #[schemars(regex(pattern = r"^[A-Za-z0-9._:-]{1,64}$"))]
    probe: String,
    /// The metric, named as the probe is.
    #[schemars(regex(pattern = r"^[A-Za-z0-9._:-]{1,64}$"))]
    metric: String,
    /// day (the default: 96 15-minute points), month (a point a day) or
    /// year (a point a month).
    #[schemars(extend("enum" = ["day", "month", "year"]))]
    interval: Option<String>,
    /// YYYY-MM-DD (UTC), from 1970 to 2200; default today.
    #[schemars(
        extend("format" = "date"),
        regex(pattern = r"^(19[7-9][0-9]|2[01][0-9][0-9]|2200)-[0-9]{2}-[0-9]{2}$")
    )]
    date: Option<String>,
}

/// A probe's metric over a day, a month or a year.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct ReadingsSeries {
    probe: String,
    metric: String,
    unit: String,
    /// day, month or year.
    interval: &'static str,
    /// The day it starts on, YYYY-MM-DD (UTC).
    date: String,
    points: Vec<ReadingPoint>,
}

/// One bucket, 15 minutes, a day or a month: figures `null` where nothing
/// was read.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct ReadingPoint {
    /// When it starts, RFC 3339.
    #[schemars(extend("format" = "date-time"))]
    start: String,
    start_ns: i64,
    /// Readings in it.
    count: i64,
    mean: Option<f64>,
    min: Option<f64>,
    #[schemars(extend("format" = "date-time"))]
    min_at: Option<String>,
    max: Option<f64>,
    #[schemars(extend("format" = "date-time"))]
    max_at: Option<String>,
    /// The companion value read with the maximum.
    with_at_max: Option<f64>,
}

/// Every probe's metrics.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct ReadingSeriesList {
    series: Vec<ReadingSeriesLine>,
}

/// A probe's metric: its unit, and its first and last reading's time.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct ReadingSeriesLine {
    probe: String,
    metric: String,
    unit: String,
    #[schemars(extend("format" = "date-time"))]
    first: String,
    #[schemars(extend("format" = "date-time"))]
    last: String,
}

/// One reading, or a batch of 1 to [`MAX_BATCH`].
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)] // It describes the body; `post` reads it item by item.
enum Readings {
    One(sonde_readings::ReadingInput),
    Many(#[schemars(length(min = 1, max = 10_000))] Vec<sonde_readings::ReadingInput>),
}

fn point(p: &Point) -> ReadingPoint {
    let s = p.summary;
    ReadingPoint {
        start: format_time(p.start_ns),
        start_ns: p.start_ns,
        count: s.map_or(0, |s| s.count),
        mean: s.map(|s| s.mean),
        min: s.map(|s| s.min),
        min_at: s.map(|s| format_time(s.min_at_ns)),
        max: s.map(|s| s.max),
        max_at: s.map(|s| format_time(s.max_at_ns)),
        with_at_max: s.and_then(|s| s.with_at_max),
    }
}

async fn series(
    State(state): State<Shared>,
    q: Result<Query<SeriesQuery>, QueryRejection>,
) -> Result<Json<ReadingsSeries>, ApiError> {
    let q = query(q)?;
    for (field, v) in [("probe", &q.probe), ("metric", &q.metric)] {
        if !valid_name(v) {
            return Err(bad(format!(
                "{field} {v:?}: 1 to 64 letters, digits, '.', '_', '-' or ':'"
            )));
        }
    }
    let interval: Interval = q
        .interval
        .as_deref()
        .unwrap_or("day")
        .parse()
        .map_err(|e: sonde_readings::aggregate::IntervalError| bad(e.to_string()))?;
    let date = q
        .date
        .clone()
        .unwrap_or_else(|| format_time(now_ns()).chars().take(10).collect());
    let periods = interval.periods(&date).map_err(|e| bad(e.to_string()))?;
    let (probe, metric) = (q.probe.clone(), q.metric.clone());
    let found = with_read_store(&state, move |s| {
        s.query_readings(&probe, &metric, interval, &periods)
    })
    .await?
    .ok_or_else(|| not_found(format!("no readings of {} from {}", q.metric, q.probe)))?;
    Ok(Json(ReadingsSeries {
        probe: found.series.probe,
        metric: found.series.metric,
        unit: found.series.unit,
        interval: interval.name(),
        date,
        points: found.points.iter().map(point).collect(),
    }))
}

async fn probes(State(state): State<Shared>, q: ListQ) -> Result<Response, ApiError> {
    let limit = list::limit(q)?;
    let (all, more) = list::cut(
        with_read_store(&state, |s| s.reading_series()).await?,
        limit,
    );
    Ok(list::answer(
        ReadingSeriesList {
            series: all
                .into_iter()
                .map(|s| ReadingSeriesLine {
                    first: format_time(s.first_ns),
                    last: format_time(s.last_ns),
                    probe: s.probe,
                    metric: s.metric,
                    unit: s.unit,
                })
                .collect(),
        },
        more,
    ))
}
