//! What the portal draws, computed here once: the overview (each path's
//! latest result and status), a metric's history as the report crate's
//! chart model, the day heat map, the mesh grid, and link load beside
//! RTT. The browser only draws these models (docs/portal.md).

use super::list::{self, ListQ};
use super::openapi::{Op, Routes, Shape, JSON};
use super::reply::{query, ApiError};
use super::results::{metric, Filter};
use crate::state::{with_read_store, Shared};
use crate::status::{self, Status};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::Json;
use serde::{Deserialize, Serialize};
use sonde_archive::{Grouping, MeshAgent, ResultFilter, ResultRow};
use sonde_model::clock::now_ns;
use sonde_model::Metric;
use sonde_report::chart::{Chart, Panel, Series};
use sonde_report::heatmap::HeatMap;
use std::collections::{BTreeMap, BTreeSet, HashMap};

pub fn routes() -> Routes {
    Routes::new()
        .op(
            Op::get(
                "/api/v1/overview",
                "overview",
                "Each path's latest result and status",
            )
            .reply(200, "the overview", JSON, Shape::of::<Overview>())
            .errors(&[401, 403, 503, 429]),
            overview,
        )
        .op(
            Op::get(
                "/api/v1/chart",
                "chart",
                "A metric's history as a chart model (one series per direction)",
            )
            .query::<ChartQuery>()
            .reply(
                200,
                "the chart",
                JSON,
                Shape::of::<sonde_report::chart::Chart>(),
            )
            .errors(&[400, 401, 403, 503, 429]),
            chart,
        )
        .op(
            Op::get(
                "/api/v1/heatmap",
                "heatmap",
                "A metric's day heat map (hour of day × day, UTC)",
            )
            .query::<ChartQuery>()
            .reply(
                200,
                "the heat map",
                JSON,
                Shape::of::<sonde_report::heatmap::HeatMap>(),
            )
            .errors(&[400, 401, 403, 503, 429]),
            heatmap,
        )
        .op(
            Op::get(
                "/api/v1/mesh",
                "mesh",
                "The mesh grid: agents × agents, forward and reverse",
            )
            .query::<MeshQuery>()
            .reply(200, "the grid", JSON, Shape::of::<Mesh>())
            .errors(&[400, 401, 403, 503, 429]),
            mesh,
        )
        .op(
            Op::get("/api/v1/interfaces", "interfaces", "Interfaces sampled")
                .query::<super::list::ListQuery>()
                .reply(200, "names", JSON, Shape::of::<Vec<Interface>>())
                .headers(super::list::truncated_header())
                .error(400, "a bad parameter (limit out of range, an unknown one)")
                .errors(&[401, 403, 503, 429]),
            interfaces,
        )
        .op(
            Op::get(
                "/api/v1/load",
                "load",
                "Link load beside RTT over the same time",
            )
            .query::<LoadQuery>()
            .reply(
                200,
                "two panels: link load (Mbit/s each way) and RTT",
                JSON,
                Shape::of::<sonde_report::chart::Chart>(),
            )
            .errors(&[400, 401, 403, 503, 429]),
            load,
        )
}

/// Results looked through for each path's latest.
const SCAN: i64 = 20_000;
const WEEK_S: i64 = 7 * 86_400;

/// Every path's latest result, with its status against the thresholds.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct Overview {
    /// When this was made (ns since the Unix epoch).
    generated_ns: i64,
    thresholds: crate::http_config::Thresholds,
    paths: Vec<PathView>,
}

/// A path's latest result, as the overview lists it.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct PathView {
    key: String,
    test: String,
    source: String,
    target: String,
    direction: String,
    family: String,
    campaign: Option<String>,
    step: Option<String>,
    latest: Latest,
    status: Status,
    why: String,
}

/// The path's latest result's figures.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct Latest {
    id: String,
    start_ns: i64,
    throughput_bps: Option<f64>,
    loss_pct: Option<f64>,
    pdr_pct: Option<f64>,
    jitter_ms: Option<f64>,
    rtt_ms: Option<f64>,
}

/// Registered agents (a central agent's mesh) not heard for
/// `mesh.unknown_after`, with when each last was.
fn silent_agents(registry: &[MeshAgent], state: &Shared, now: i64) -> BTreeMap<String, i64> {
    registry
        .iter()
        .filter(|a| !super::mesh_agents::is_heard(a, state.mesh.unknown_after, now))
        .map(|a| (a.info.name.clone(), a.last_seen_ns))
        .collect()
}

/// A path's status: unknown while the agent that leads it is silent,
/// never the colour of its last result; else by the thresholds.
fn path_status(
    row: &ResultRow,
    state: &Shared,
    now: i64,
    silent: &BTreeMap<String, i64>,
) -> (Status, String) {
    let from = row.from_name();
    match silent.get(from) {
        Some(&last) => (
            Status::Unknown,
            format!(
                "agent {from} not heard for {} (unknown after {})",
                status::humanize(now.saturating_sub(last)),
                status::humanize(
                    i64::try_from(state.mesh.unknown_after.as_nanos()).unwrap_or(i64::MAX)
                )
            ),
        ),
        None => status::of(row, &state.http.thresholds, now),
    }
}

fn view(row: &ResultRow, state: &Shared, now: i64, silent: &BTreeMap<String, i64>) -> PathView {
    let (status, why) = path_status(row, state, now, silent);
    let (test, source, target, family, direction, step) = row.path();
    let direction = if direction.is_empty() {
        "round_trip".to_string()
    } else {
        direction
    };
    PathView {
        key: [test.as_str(), &source, &target, &family, &direction, &step].join("|"),
        test,
        source,
        target: row.target.clone(),
        direction,
        family,
        campaign: row.campaign.clone(),
        step: row.step.clone(),
        latest: Latest {
            id: row.id.clone(),
            start_ns: row.start_ns,
            throughput_bps: row.throughput_bps,
            loss_pct: row.loss_pct,
            pdr_pct: row.pdr_pct,
            jitter_ms: row.jitter_ms,
            rtt_ms: row.rtt_ms,
        },
        status,
        why,
    }
}

async fn overview(State(state): State<Shared>) -> Result<Json<Overview>, ApiError> {
    let (rows, registry) = with_read_store(&state, |s| {
        Ok((
            s.latest_per_path(&ResultFilter::default(), SCAN)?,
            s.mesh_agents()?,
        ))
    })
    .await?;
    let now = now_ns();
    let silent = silent_agents(&registry, &state, now);
    let paths: Vec<PathView> = rows.iter().map(|r| view(r, &state, now, &silent)).collect();
    Ok(Json(Overview {
        generated_ns: now,
        thresholds: state.http.thresholds.clone(),
        paths,
    }))
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ChartQuery {
    /// The metric (a name of the metric registry's).
    #[schemars(schema_with = "super::openapi::metric_names")]
    metric: String,
    #[serde(flatten)]
    filter: Filter,
}

/// How a metric is drawn, from the metric registry: its label, unit, and
/// scale from its archived unit (throughput in Mbit/s).
fn drawn(m: Metric) -> (&'static str, &'static str, f64) {
    let info = m.info();
    (info.label, info.unit, info.scale)
}

/// The filter of a chart: the last week unless `since` says.
fn chart_filter(f: &Filter) -> Result<ResultFilter, ApiError> {
    let mut filter = f.to_filter(None, 1, 1)?;
    if filter.since_ns.is_none() {
        filter.since_ns = Some(now_ns() - WEEK_S * 1_000_000_000);
    }
    Ok(filter)
}

fn name_of_direction(d: &str) -> String {
    match d {
        "" | "round_trip" => "round trip".into(),
        d => d.into(),
    }
}

/// A metric's history: one point per result in the range, one series
/// per direction; x in Unix seconds.
async fn chart(
    State(state): State<Shared>,
    q: Result<Query<ChartQuery>, QueryRejection>,
) -> Result<Json<Chart>, ApiError> {
    let q = query(q)?;
    let m = metric(&q.metric)?;
    let filter = chart_filter(&q.filter)?;
    let points = with_read_store(&state, move |s| {
        s.metric_points(&filter, m, &Grouping::Direction)
    })
    .await?;
    let (label, unit, scale) = drawn(m);
    let mut by_direction: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for p in points {
        by_direction
            .entry(name_of_direction(&p.group))
            .or_default()
            .push((p.start_ns as f64 / 1e9, p.value * scale));
    }
    let title = [q.filter.test.as_deref(), q.filter.target.as_deref()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" to ");
    Ok(Json(Chart {
        panels: vec![Panel {
            title: if title.is_empty() {
                label.to_string()
            } else {
                format!("{label}: {title}")
            },
            x_label: "time (UTC)".into(),
            y_label: format!("{label} ({unit})"),
            y_range: (unit == "%").then_some((0.0, 100.0)),
            x_time: true,
            series: by_direction
                .into_iter()
                .map(|(name, points)| Series { name, points })
                .collect(),
        }],
        columns: 1,
        panel_width: 900,
        panel_height: 320,
    }))
}

/// The day heat map of a metric: hour of day (UTC) × day.
async fn heatmap(
    State(state): State<Shared>,
    q: Result<Query<ChartQuery>, QueryRejection>,
) -> Result<Json<HeatMap>, ApiError> {
    let q = query(q)?;
    let m = metric(&q.metric)?;
    let filter = q.filter.to_filter(None, 1, 1)?;
    let cells = with_read_store(&state, move |s| s.day_heat_map(&filter, m)).await?;
    let (label, unit, scale) = drawn(m);
    let days: Vec<i64> = cells
        .iter()
        .map(|c| c.day)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let column: BTreeMap<i64, usize> = days.iter().enumerate().map(|(i, d)| (*d, i)).collect();
    let mut grid = vec![vec![None; days.len()]; 24];
    for c in &cells {
        if let (Some(row), Some(col)) = (grid.get_mut(c.hour as usize), column.get(&c.day)) {
            row[*col] = Some(c.mean * scale);
        }
    }
    let day_name = |day: i64| {
        sonde_campaign::rfc3339(day.saturating_mul(86_400_000_000_000))
            .get(..10)
            .unwrap_or("")
            .to_string()
    };
    Ok(Json(HeatMap {
        title: format!("{label} by hour of day and day"),
        x_label: "day".into(),
        y_label: "hour of day (UTC)".into(),
        x_names: days.iter().map(|d| day_name(*d)).collect(),
        y_names: (0..24).map(|h| format!("{h:02}")).collect(),
        cells: grid,
        scale_label: format!("{label} ({unit})"),
    }))
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct MeshQuery {
    /// The metric each cell shows (its status uses every threshold).
    #[serde(default)]
    #[schemars(schema_with = "super::openapi::metric_names")]
    metric: Option<String>,
    /// Only this test's results (tcp, udp or ping).
    test: Option<String>,
}

/// One direction of a pair: its latest value and status.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct MeshCell {
    status: Status,
    why: String,
    value: Option<f64>,
    result_id: String,
    start_ns: i64,
}

/// A pair of agents, each way.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct MeshPair {
    source: String,
    target: String,
    /// Data from source to target (a ping: source's round trips).
    forward: Option<MeshCell>,
    /// Data from target to source.
    reverse: Option<MeshCell>,
}

/// The mesh: its agents, and a pair for each two that measured.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct Mesh {
    agents: BTreeSet<String>,
    cells: Vec<MeshPair>,
}

/// MaDDash's grid: agents × agents, each cell split forward/reverse.
async fn mesh(
    State(state): State<Shared>,
    q: Result<Query<MeshQuery>, QueryRejection>,
) -> Result<Json<Mesh>, ApiError> {
    let q = query(q)?;
    let m = match &q.metric {
        Some(name) => Some(metric(name)?),
        None => None,
    };
    let filter = ResultFilter {
        test: q.test.clone(),
        ..ResultFilter::default()
    };
    let (rows, registry) = with_read_store(&state, move |s| {
        let rows = match m {
            Some(m) => s.latest_per_path_of(&filter, SCAN, m)?,
            None => s
                .latest_per_path(&filter, SCAN)?
                .into_iter()
                .map(|row| (row, None))
                .collect(),
        };
        Ok((rows, s.mesh_agents()?))
    })
    .await?;
    let now = now_ns();
    let silent = silent_agents(&registry, &state, now);
    // (a, b) with a <= b → (a to b, b to a), newest first wins. Keyed by
    // the rows' own names: a grid of 10,000 agents has 20,000 rows, and
    // ordered once at the end.
    type Cells = (Option<MeshCell>, Option<MeshCell>);
    let mut pairs: HashMap<(&str, &str), Cells> = HashMap::with_capacity(rows.len());
    for (row, value) in &rows {
        let value = *value;
        if m.is_some() && value.is_none() {
            continue;
        }
        let (from, to) = (row.from_name(), row.to_name());
        let (status, why) = path_status(row, &state, now, &silent);
        let cell = MeshCell {
            status,
            why,
            value,
            result_id: row.id.clone(),
            start_ns: row.start_ns,
        };
        // The data's way: a reverse test from A to B carries B → A.
        let (a, b) = if row.direction == "reverse" {
            (to, from)
        } else {
            (from, to)
        };
        let (key, forward) = if a <= b {
            ((a, b), true)
        } else {
            ((b, a), false)
        };
        let entry = pairs.entry(key).or_default();
        let slot = if forward { &mut entry.0 } else { &mut entry.1 };
        if slot.as_ref().is_none_or(|c| c.start_ns < cell.start_ns) {
            *slot = Some(cell);
        }
    }
    let mut names: Vec<&str> = pairs.keys().flat_map(|&(a, b)| [a, b]).collect();
    names.extend(registry.iter().map(|a| a.info.name.as_str()));
    names.sort_unstable();
    names.dedup();
    let agents: BTreeSet<String> = names.into_iter().map(str::to_string).collect();
    let mut pairs: Vec<((&str, &str), Cells)> = pairs.into_iter().collect();
    pairs.sort_unstable_by(|x, y| x.0.cmp(&y.0));
    let cells: Vec<MeshPair> = pairs
        .into_iter()
        .map(|((source, target), (forward, reverse))| MeshPair {
            source: source.to_string(),
            target: target.to_string(),
            forward,
            reverse,
        })
        .collect();
    Ok(Json(Mesh { agents, cells }))
}

/// An interface whose counters are sampled.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Interface {
    name: String,
}

async fn interfaces(
    State(state): State<Shared>,
    q: ListQ,
) -> Result<axum::response::Response, ApiError> {
    let limit = list::limit(q)?;
    let (names, more) = list::cut(
        with_read_store(&state, |s| s.interface_names()).await?,
        limit,
    );
    let named: Vec<Interface> = names.into_iter().map(|name| Interface { name }).collect();
    Ok(list::answer(named, more))
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct LoadQuery {
    /// The interface.
    interface: String,
    /// The RTT panel's results: toward this target only.
    target: Option<String>,
    /// Unix seconds (default: a week ago).
    #[schemars(range(min = 0, max = 9_223_372_036_i64))]
    since: Option<i64>,
    /// Unix seconds.
    #[schemars(range(min = 0, max = 9_223_372_036_i64))]
    until: Option<i64>,
}

/// Link load beside latency (seed 003 Figs 1–4): the interface's bit
/// rate each way, and RTT, over the same time.
async fn load(
    State(state): State<Shared>,
    q: Result<Query<LoadQuery>, QueryRejection>,
) -> Result<Json<Chart>, ApiError> {
    let q = query(q)?;
    let range = chart_filter(&Filter {
        since: q.since,
        until: q.until,
        target: q.target.clone(),
        ..Filter::default()
    })?;
    let since = range.since_ns.unwrap_or(0);
    // An empty range draws nothing.
    let until = range.until_ns.unwrap_or(i64::MAX).max(since);
    let interface = q.interface.clone();
    let (samples, rtts) = with_read_store(&state, move |s| {
        let samples = s.interface_samples(&interface, since, until)?;
        let rtts = s.metric_points(&range, Metric::RttP50Ms, &Grouping::None)?;
        Ok((samples, rtts))
    })
    .await?;
    let (rx, tx) = crate::interfaces::rates(&samples);
    let rtt: Vec<(f64, f64)> = rtts
        .iter()
        .map(|p| (p.start_ns as f64 / 1e9, p.value))
        .collect();
    Ok(Json(Chart {
        panels: vec![
            Panel {
                title: format!("link load: {}", q.interface),
                x_label: "time (UTC)".into(),
                y_label: "rate (Mbit/s)".into(),
                y_range: None,
                x_time: true,
                series: vec![
                    Series {
                        name: "rx".into(),
                        points: rx,
                    },
                    Series {
                        name: "tx".into(),
                        points: tx,
                    },
                ],
            },
            Panel {
                title: "RTT".into(),
                x_label: "time (UTC)".into(),
                y_label: "RTT (ms)".into(),
                y_range: None,
                x_time: true,
                series: vec![Series {
                    name: "RTT".into(),
                    points: rtt,
                }],
            },
        ],
        columns: 1,
        panel_width: 900,
        panel_height: 240,
    }))
}
