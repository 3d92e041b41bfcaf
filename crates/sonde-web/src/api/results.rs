//! Results: query by the filters `sonde results list` has, get one, its
//! interval series, export (CSV, JSON, NDJSON), and method results.

use super::openapi::{Op, Routes, Shape, JSON};
use super::redact::{has_token, shown};
use super::reply::{bad, not_found, query, ApiError};
use crate::state::{with_read_store, Shared};
use crate::tokens::Caller;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::Value;
use sonde_archive::ResultFilter;
use sonde_model::schema::{MethodDocument, ResultDocument};
use sonde_model::Metric;
use sonde_model::{MethodResult, ResultId, TestResult};

pub fn routes() -> Routes {
    Routes::new()
        .op(
            Op::get("/api/v1/results", "listResults", "Results by filter, newest first")
                .query::<ListQuery>()
                .reply(200, "results", JSON, Shape::of::<Vec<ResultDocument>>())
                .errors(&[400, 401, 403, 503, 429]),
            list,
        )
        .op(
            Op::get("/api/v1/results/{id}", "getResult", "One result")
                .path_uuid("id", "the result's id (a UUID)")
                .reply(200, "the result", JSON, Shape::of::<ResultDocument>())
                .errors(&[400, 401, 403, 404, 503, 429]),
            one,
        )
        .op(
            Op::get("/api/v1/results/{id}/intervals", "resultIntervals", "One result's interval series of a metric")
                .path_uuid("id", "the result's id")
                .query::<SeriesQuery>()
                .reply(200, "the series (seconds from the start, value)", JSON, Shape::of::<IntervalSeries>())
                .errors(&[400, 401, 403, 404, 503, 429]),
            intervals,
        )
        .op(
            Op::get("/api/v1/results/{id}/view", "resultView", "One result's page: where it was kept and its chart")
                .path_uuid("id", "the result's id")
                .reply(200, "its campaign, run, method and labels, and its figures per interval as a chart (null without intervals)", JSON, Shape::of::<ResultView>())
                .errors(&[400, 401, 403, 404, 503, 429]),
            view,
        )
        .op(
            Op::get("/api/v1/methods", "listMethods", "Method results, oldest first")
                .query::<MethodsQuery>()
                .reply(200, "method results (docs/schema/method-v1.schema.json)", JSON, Shape::of::<Vec<MethodDocument>>())
                .errors(&[400, 401, 403, 503, 429]),
            methods,
        )
        .op(
            Op::get("/api/v1/methods/{id}", "getMethod", "One method result with its trials")
                .path_uuid("id", "its id (a UUID)")
                .reply(200, "the method result", JSON, Shape::of::<MethodDocument>())
                .errors(&[400, 401, 403, 404, 503, 429]),
            method,
        )
}

/// The filters of a results query, as `sonde results list` has them.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Filter {
    /// Only this test's results (tcp, udp, ping, http or trace).
    pub test: Option<String>,
    /// The host tested toward, as written.
    pub target: Option<String>,
    /// A campaign's name.
    pub campaign: Option<String>,
    /// v6 or v4.
    pub family: Option<String>,
    /// forward, reverse or bidir.
    pub direction: Option<String>,
    /// A label the result was kept with: `KEY=VALUE`.
    #[schemars(regex(pattern = r"^[^=]*=.*$"))]
    pub label: Option<String>,
    /// Results that started at or after this (Unix seconds).
    #[serde(default, deserialize_with = "whole_number")]
    #[schemars(range(min = 0, max = 9_223_372_036_i64))]
    pub since: Option<i64>,
    /// … and before this (Unix seconds).
    #[serde(default, deserialize_with = "whole_number")]
    #[schemars(range(min = 0, max = 9_223_372_036_i64))]
    pub until: Option<i64>,
}

/// A list of results' query: the filter, and how many.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    #[serde(flatten)]
    pub filter: Filter,
    /// At most this many (default 100).
    #[serde(default, deserialize_with = "whole_number")]
    #[schemars(range(min = 1, max = 10_000))]
    pub limit: Option<i64>,
}

/// A whole number in a query string. Needed where a query struct is
/// flattened into another: serde then hands every value over as text.
pub(crate) fn whole_number<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<i64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Int(i64),
        Text(String),
    }
    match Option::<Raw>::deserialize(d)? {
        None => Ok(None),
        Some(Raw::Int(i)) => Ok(Some(i)),
        Some(Raw::Text(t)) => t
            .parse()
            .map(Some)
            .map_err(|_| serde::de::Error::custom(format!("'{t}' is not a whole number"))),
    }
}

impl Filter {
    /// The archive's filter, of `limit` results: `default` when none is
    /// given, and at most `most`.
    pub fn to_filter(
        &self,
        limit: Option<i64>,
        default: i64,
        most: i64,
    ) -> Result<ResultFilter, ApiError> {
        let label = match &self.label {
            Some(l) => Some(
                l.split_once('=')
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .ok_or_else(|| bad(format!("label '{l}': write KEY=VALUE")))?,
            ),
            None => None,
        };
        let limit = limit.unwrap_or(default);
        if !(1..=most).contains(&limit) {
            return Err(bad(format!("limit {limit}: 1 to {most}")));
        }
        let secs = |s: Option<i64>, name: &str| match s {
            Some(s) if !(0..=i64::MAX / 1_000_000_000).contains(&s) => Err(bad(format!(
                "{name} {s}: Unix seconds from 0 to {}",
                i64::MAX / 1_000_000_000
            ))),
            s => Ok(s.map(|s| s * 1_000_000_000)),
        };
        Ok(ResultFilter {
            test: self.test.clone(),
            target: self.target.clone(),
            campaign: self.campaign.clone(),
            since_ns: secs(self.since, "since")?,
            until_ns: secs(self.until, "until")?,
            family: self.family.clone(),
            direction: self.direction.clone(),
            label,
            trials: true,
            limit,
        })
    }
}

fn result_id(id: &str) -> Result<ResultId, ApiError> {
    id.parse()
        .map_err(|_| bad(format!("'{id}' is not a result id (a UUID)")))
}

async fn list(
    State(state): State<Shared>,
    caller: Option<Extension<Caller>>,
    q: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let q = query(q)?;
    let filter = q.filter.to_filter(q.limit, 100, 10_000)?;
    let found: Vec<TestResult> = with_read_store(&state, move |s| s.list_results(&filter)).await?;
    Ok(Json(shown(&found, has_token(caller.as_ref()))))
}

async fn one(
    State(state): State<Shared>,
    caller: Option<Extension<Caller>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let rid = result_id(&id)?;
    with_read_store(&state, move |s| s.get_result(rid))
        .await?
        .map(|r| Json(shown(&r, has_token(caller.as_ref()))))
        .ok_or_else(|| not_found(format!("no result {id}")))
}

/// What the portal's page of one result draws beside the document:
/// where it was kept (campaign, run, method, labels) and its figures per
/// interval as the report crate's chart model (`sonde results show
/// --chart` draws the same), `null` when it has no intervals.
async fn view(
    State(state): State<Shared>,
    Path(id): Path<String>,
) -> Result<Json<ResultView>, ApiError> {
    let rid = result_id(&id)?;
    let found = with_read_store(&state, move |s| {
        let Some(r) = s.get_result(rid)? else {
            return Ok(None);
        };
        Ok(s.placement_of(rid)?.map(|p| (r, p)))
    })
    .await?;
    let (r, placement) = found.ok_or_else(|| not_found(format!("no result {id}")))?;
    Ok(Json(ResultView {
        id,
        campaign: placement.campaign,
        run_id: placement.run_id,
        method_id: placement.method_id,
        labels: placement.labels,
        chart: sonde_report::result_chart::result_chart(&r),
    }))
}

/// One result's page beside its document: where it was kept, and its
/// figures per interval as a chart.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct ResultView {
    id: String,
    /// The campaign whose run made it.
    campaign: Option<String>,
    run_id: Option<String>,
    /// The method it was a trial of.
    method_id: Option<String>,
    /// The labels it was kept with.
    labels: std::collections::BTreeMap<String, String>,
    /// Its figures per interval (`null`: it has no intervals).
    chart: Option<sonde_report::chart::Chart>,
}

/// One result's interval series of a metric.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct IntervalSeries {
    result_id: String,
    /// The metric's name.
    metric: &'static str,
    /// The direction the series is of.
    direction: String,
    /// `[seconds from the result's start, value]`, in the metric's kept
    /// unit.
    points: Vec<(f64, f64)>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct SeriesQuery {
    /// The metric (a name of the metric registry's).
    #[schemars(schema_with = "super::openapi::metric_names")]
    metric: String,
    /// `forward`, `reverse` or `round_trip` (the default: the result's
    /// first direction).
    direction: Option<String>,
}

/// One result's interval series of a metric: `[[seconds from its
/// start, value], …]`.
async fn intervals(
    State(state): State<Shared>,
    Path(id): Path<String>,
    q: Result<Query<SeriesQuery>, QueryRejection>,
) -> Result<Json<IntervalSeries>, ApiError> {
    let rid = result_id(&id)?;
    let q = query(q)?;
    let metric = metric(&q.metric)?;
    let direction = q.direction;
    let found = with_read_store(&state, move |s| {
        let Some(r) = s.get_result(rid)? else {
            return Ok(None);
        };
        let direction = direction.unwrap_or_else(|| default_direction(&r));
        let points = s.interval_series(rid, &direction, metric)?;
        Ok(Some((direction, points)))
    })
    .await?;
    let (direction, points) = found.ok_or_else(|| not_found(format!("no result {id}")))?;
    Ok(Json(IntervalSeries {
        result_id: id,
        metric: metric.name(),
        direction,
        points,
    }))
}

/// The direction a result's intervals are kept under first.
fn default_direction(r: &TestResult) -> String {
    match &r.spec {
        sonde_model::TestSpec::Ping(_)
        | sonde_model::TestSpec::Http(_)
        | sonde_model::TestSpec::Trace(_) => "round_trip".into(),
        sonde_model::TestSpec::Tcp(s) => direction_name(s.direction).into(),
        sonde_model::TestSpec::Udp(s) => direction_name(s.direction).into(),
    }
}

fn direction_name(d: sonde_model::Direction) -> &'static str {
    match d {
        sonde_model::Direction::Reverse => "reverse",
        _ => "forward",
    }
}

/// A metric of the registry by its name, short name or alias
/// (`rtt_ms`), or a 400 listing the names.
pub fn metric(name: &str) -> Result<Metric, ApiError> {
    Metric::named(name).ok_or_else(|| bad(format!("metric '{name}': one of {}", Metric::names())))
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct MethodsQuery {
    /// A campaign's name.
    campaign: Option<String>,
    /// Methods that started at or after this (Unix seconds).
    #[schemars(range(min = 0, max = 9_223_372_036_i64))]
    since: Option<i64>,
    /// … and before this (Unix seconds).
    #[schemars(range(min = 0, max = 9_223_372_036_i64))]
    until: Option<i64>,
    /// At most this many (100 by default, 1,000 at most), the oldest
    /// first.
    #[schemars(range(min = 1, max = 1_000))]
    limit: Option<usize>,
}

/// Method results (NDR searches, sweeps, QoS checks…), oldest first.
async fn methods(
    State(state): State<Shared>,
    caller: Option<Extension<Caller>>,
    q: Result<Query<MethodsQuery>, QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    let q = query(q)?;
    let limit = q.limit.unwrap_or(100);
    if !(1..=1000).contains(&limit) {
        return Err(bad(format!("limit {limit}: 1 to 1000")));
    }
    let range = Filter {
        since: q.since,
        until: q.until,
        ..Filter::default()
    }
    .to_filter(None, 1, 1)?;
    let found = with_read_store(&state, move |s| {
        s.list_methods(q.campaign.as_deref(), range.since_ns, range.until_ns, limit)
    })
    .await?;
    Ok(Json(shown(&found, has_token(caller.as_ref()))))
}

async fn method(
    State(state): State<Shared>,
    caller: Option<Extension<Caller>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let rid = result_id(&id)?;
    with_read_store(&state, move |s| s.get_method(rid))
        .await?
        .map(|m: MethodResult| Json(shown(&m, has_token(caller.as_ref()))))
        .ok_or_else(|| not_found(format!("no method result {id}")))
}
