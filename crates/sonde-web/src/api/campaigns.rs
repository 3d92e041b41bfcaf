//! Campaigns: list, one with its plan and runs, a run's events; create
//! (TOML or JSON), pause, resume, delete. A created plan is written to
//! the agent's campaigns directory (`--campaigns DIR`), which the agent
//! watches: the plan starts within seconds, as one copied there by hand
//! would. Deleting removes the file: the campaign retires after its run
//! in progress, and its history stays in the archive.

use super::list::{self, ListQ};
use super::openapi::{Op, Routes, Shape, JSON};
use super::reply::{bad, not_found, ApiError, ApiRefusal};
use crate::state::{with_read_store, with_store, Shared};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use axum::Json;
use serde_json::{json, Value};
use sonde_campaign::{campaign_status, CampaignStatus, Overrides, Plan};
use sonde_gate::Origin;
use std::sync::Arc;

pub fn routes() -> Routes {
    Routes::new()
        .op(
            Op::get("/api/v1/campaigns", "listCampaigns", "Every campaign's status")
                .query::<super::list::ListQuery>()
                .reply(200, "campaigns", JSON, Shape::of::<Vec<CampaignStatus>>())
                .headers(super::list::truncated_header())
                .error(400, "a bad parameter (limit out of range, an unknown one)")
                .errors(&[401, 403, 503, 429]),
            list,
        )
        .op(
            Op::post("/api/v1/campaigns", "createCampaign", "Create a campaign from its plan (TOML, or the same keys as JSON)")
                .token()
                .body("application/toml", Shape::text())
                .body(JSON, Shape::object())
                .reply(201, "created: the agent starts it within seconds", JSON, Shape::of::<Created>())
                .reply(400, "a bad parameter or body", JSON, Shape::of::<super::reply::Refusal>())
                .error(409, "a conflict")
                .reply(422, "a step refused by the gate", JSON, Shape::of::<super::reply::Refusal>())
                .error(429, "over http.requests_per_minute, or a cap (http.max_campaigns, http.max_ingest_requests); Retry-After says when to ask again")
                .errors(&[401, 403, 413, 503]),
            create,
        )
        .op(
            Op::get("/api/v1/campaigns/{name}", "getCampaign", "A campaign: status, plan and runs")
                .path_matching("name", "the campaign", json!({"type": "string", "pattern": "^[A-Za-z0-9._-]+$"}))
                .reply(200, "the campaign", JSON, Shape::of::<Campaign>())
                .errors(&[401, 403, 404, 503, 429]),
            one,
        )
        .op(
            Op::delete("/api/v1/campaigns/{name}", "deleteCampaign", "Delete a campaign: it retires after its run in progress; its history stays")
                .token()
                .path_matching("name", "the campaign", json!({"type": "string", "pattern": "^[A-Za-z0-9._-]+$"}))
                .reply(202, "retiring", JSON, Shape::of::<Retiring>())
                .error(409, "a conflict")
                .errors(&[400, 401, 403, 404, 503, 429]),
            remove,
        )
        .op(
            Op::post("/api/v1/campaigns/{name}/pause", "pauseCampaign", "Pause: its runs are recorded as missed")
                .token()
                .path_matching("name", "the campaign", json!({"type": "string", "pattern": "^[A-Za-z0-9._-]+$"}))
                .reply(200, "paused", JSON, Shape::of::<Paused>())
                .errors(&[401, 403, 404, 503, 429]),
            pause,
        )
        .op(
            Op::post("/api/v1/campaigns/{name}/resume", "resumeCampaign", "Resume")
                .token()
                .path_matching("name", "the campaign", json!({"type": "string", "pattern": "^[A-Za-z0-9._-]+$"}))
                .reply(200, "resumed", JSON, Shape::of::<Paused>())
                .errors(&[401, 403, 404, 503, 429]),
            resume,
        )
        .op(
            Op::get("/api/v1/campaigns/{name}/runs", "campaignRuns", "A campaign's runs, newest first")
                .path_matching("name", "the campaign", json!({"type": "string", "pattern": "^[A-Za-z0-9._-]+$"}))
                .query::<super::list::ListQuery>()
                .reply(200, "runs", JSON, Shape::of::<Vec<Run>>())
                .headers(super::list::truncated_header())
                .error(400, "a bad parameter (limit out of range, an unknown one)")
                .errors(&[401, 403, 404, 503, 429]),
            runs,
        )
        .op(
            Op::get("/api/v1/runs/{id}/events", "runEvents", "A run's events")
                .path_param("id", "the run's id")
                .query::<super::list::ListQuery>()
                .reply(200, "events, oldest first", JSON, Shape::of::<Vec<RunEvent>>())
                .headers(super::list::truncated_header())
                .error(400, "a bad parameter (limit out of range, an unknown one)")
                .errors(&[401, 403, 503, 429]),
            events,
        )
}

/// How many recent runs a status looks through.
const RECENT: i64 = 200;

fn campaign_err(e: sonde_campaign::CampaignError) -> sonde_archive::ArchiveError {
    sonde_archive::ArchiveError::Database {
        location: "campaign".into(),
        message: e.to_string(),
    }
}

async fn list(State(state): State<Shared>, q: ListQ) -> Result<Response, ApiError> {
    let limit = list::limit(q)?;
    let (all, more) = with_read_store(&state, move |s| {
        let names: Vec<String> = s.campaigns()?.into_iter().map(|c| c.name).collect();
        // Cut before each status is read: the limit bounds the work too.
        let (names, more) = list::cut(names, limit);
        let mut out: Vec<CampaignStatus> = Vec::new();
        for n in names {
            if let Some(st) = campaign_status(s, &n, RECENT).map_err(campaign_err)? {
                out.push(st);
            }
        }
        Ok((out, more))
    })
    .await?;
    Ok(list::answer(all, more))
}

/// A campaign: its state, its plan (a reader without a token sees its
/// stored requests' secrets hidden), the overrides it runs with and its
/// latest runs.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Campaign {
    status: CampaignStatus,
    /// The plan, TOML, as written.
    plan: String,
    /// What the command line overrode of the plan, kept beside its text
    /// (`null`: nothing).
    overrides: Option<Overrides>,
    /// Its latest runs, newest first.
    runs: Vec<Run>,
}

/// A campaign made.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Created {
    name: String,
    /// Its steps.
    steps: usize,
}

/// A campaign being retired: the agent lets its running run end.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Retiring {
    name: String,
    retiring: bool,
}

/// A campaign paused or resumed.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Paused {
    name: String,
    paused: bool,
}

/// One run of a campaign.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Run {
    id: String,
    /// When it was due (ns since the Unix epoch).
    scheduled_ns: i64,
    started_ns: Option<i64>,
    ended_ns: Option<i64>,
    /// running, done, partial, failed, interrupted or missed.
    state: &'static str,
    /// Why it is missed, partial or failed.
    reason: Option<String>,
}

/// One event of a run, as the agent logged it.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct RunEvent {
    at_ns: i64,
    kind: String,
    detail: String,
}

fn run_line(r: &sonde_archive::RunRow) -> Run {
    Run {
        id: r.id.clone(),
        scheduled_ns: r.scheduled_ns,
        started_ns: r.started_ns,
        ended_ns: r.ended_ns,
        state: r.state.name(),
        reason: r.reason.clone(),
    }
}

/// A campaign with its plan and recent runs. A reader without a token
/// sees the plan with its stored requests' secrets hidden.
async fn one(
    State(state): State<Shared>,
    caller: Option<axum::Extension<crate::tokens::Caller>>,
    Path(name): Path<String>,
) -> Result<Json<Campaign>, ApiError> {
    let n = name.clone();
    let token = caller.is_some();
    let found = with_read_store(&state, move |s| {
        let Some(status) = campaign_status(s, &n, RECENT).map_err(campaign_err)? else {
            return Ok(None);
        };
        let (plan, overrides) = s
            .campaigns()?
            .into_iter()
            .find(|c| c.name == n)
            .map(|c| (c.plan, c.overrides))
            .unwrap_or_default();
        // The command line's overrides, beside the plan as written.
        let overrides: Option<Overrides> = overrides.and_then(|o| serde_json::from_str(&o).ok());
        let plan = if token {
            plan
        } else {
            super::redact::plan_text(&plan).unwrap_or_default()
        };
        let runs: Vec<Run> = s.runs(&n, 50)?.iter().map(run_line).collect();
        Ok(Some(Campaign {
            status,
            plan,
            overrides,
            runs,
        }))
    })
    .await?;
    found
        .map(Json)
        .ok_or_else(|| not_found(format!("no campaign '{name}'")))
}

/// The campaign's runs, newest first.
async fn runs(
    State(state): State<Shared>,
    Path(name): Path<String>,
    q: ListQ,
) -> Result<Response, ApiError> {
    let limit = list::limit(q)?;
    let n = name.clone();
    let found = with_read_store(&state, move |s| {
        if !s.campaigns()?.iter().any(|c| c.name == n) {
            return Ok(None);
        }
        // One more than asked: whether any were left out.
        let rows = s.runs(&n, limit as i64 + 1)?;
        Ok(Some(list::cut(
            rows.iter().map(run_line).collect::<Vec<_>>(),
            limit,
        )))
    })
    .await?;
    let (lines, more) = found.ok_or_else(|| not_found(format!("no campaign '{name}'")))?;
    Ok(list::answer(lines, more))
}

/// A run's events, in the order they happened.
async fn events(
    State(state): State<Shared>,
    Path(id): Path<String>,
    q: ListQ,
) -> Result<Response, ApiError> {
    let limit = list::limit(q)?;
    let events = with_read_store(&state, move |s| s.run_events_upto(&id, limit as i64 + 1)).await?;
    let (events, more) = list::cut(events, limit);
    let lines: Vec<RunEvent> = events
        .into_iter()
        .map(|(at_ns, kind, detail)| RunEvent {
            at_ns,
            kind,
            detail,
        })
        .collect();
    Ok(list::answer(lines, more))
}

/// The plan's TOML text from a body in TOML (`application/toml`, or any
/// text) or JSON (`application/json`: the same keys as the TOML).
fn plan_text(headers: &HeaderMap, body: &[u8]) -> Result<String, ApiError> {
    let text = std::str::from_utf8(body).map_err(|_| bad("the body is not UTF-8 text"))?;
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json"));
    if !json {
        return Ok(text.to_string());
    }
    let value: Value =
        serde_json::from_str(text).map_err(|e| bad(format!("the body is not JSON: {e}")))?;
    toml::to_string(&value).map_err(|e| bad(format!("this JSON has no TOML form: {e}")))
}

fn dir(state: &Shared) -> Result<&std::path::Path, ApiError> {
    state.campaigns_dir.as_deref().ok_or_else(|| {
        ApiError(
            StatusCode::CONFLICT,
            "this agent runs no campaigns: start it with --campaigns DIR".into(),
        )
    })
}

/// Every step of a plan written through the API, through the agent's
/// gate as the scheduler will admit it when due: the first refused, with
/// its step in the pointer (`/step/2/body_file`).
/// Every step of `plan` through the gate. `form` is "" for the plan as
/// written, "quick form: " for its desk form, whose steps are numbered
/// as the file numbers them (`as_written`).
fn admit_steps(
    state: &Shared,
    plan: &Plan,
    as_written: &Plan,
    form: &str,
) -> Result<(), ApiRefusal> {
    for (i, step) in plan.steps.iter().enumerate() {
        if let Err(r) = state.gate.check(&Origin::ApiCampaign, &step.body) {
            state.counters.refused(&r.to_wire());
            tracing::info!(name: "request_refused", origin = "api", campaign = %plan.name, step = %step.name, reason = %r.rule(), "a plan through the API refused: {form}{r}");
            let n = as_written
                .steps
                .iter()
                .position(|s| s.name == step.name)
                .unwrap_or(i)
                + 1;
            let name = &step.name;
            return Err(ApiRefusal::gate(
                &r,
                &format!("/step/{n}"),
                &format!("{form}step {n} ({name}): "),
            ));
        }
    }
    Ok(())
}

async fn create(
    State(state): State<Shared>,
    headers: HeaderMap,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<(StatusCode, Json<Created>), ApiRefusal> {
    let body = super::reply::body(body)?;
    let dir = dir(&state)?.to_path_buf();
    let text = plan_text(&headers, &body)?;
    let over = sonde_campaign::Overrides::default();
    let plan = Plan::parse(&text, &over).map_err(|e| bad(format!("the plan: {e}")))?;
    admit_steps(&state, &plan, &plan, "")?;
    // Its desk form too: kept here, it may be run `--quick` by the
    // operator, and must not hide what the gate would refuse.
    let desk =
        Plan::desk_form(&text, &over).map_err(|e| bad(format!("the plan's quick form: {e}")))?;
    if let Some(desk) = &desk {
        admit_steps(&state, desk, &plan, "quick form: ")?;
    }
    // The mark makes the scheduler run it as the API's, not the operator's.
    let text = format!("{}{}\n{text}", sonde_campaign::API_MARK, plan.name);
    let path = dir.join(format!("{}.toml", plan.name));
    let name = plan.name.clone();
    let cap = state.http.max_campaigns;
    let guards = Arc::clone(&state.guards);
    tokio::task::spawn_blocking(move || -> Result<(), ApiError> {
        // Counted and written under one lock, so that two requests at
        // once cannot both take the last place.
        let _one = guards.campaigns.lock().unwrap_or_else(|e| e.into_inner());
        if api_campaigns(&dir) >= cap {
            guards
                .refused
                .campaigns
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return Err(ApiError(
                StatusCode::TOO_MANY_REQUESTS,
                format!("the agent keeps {cap} campaigns written through the API already (http.max_campaigns): delete one first"),
            ));
        }
        // Written under another name first, so the watcher never reads
        // half a plan; refused if the campaign exists.
        let tmp = dir.join(format!(".{}.toml.new", name));
        std::fs::write(&tmp, &text)
            .map_err(|e| ApiError(StatusCode::SERVICE_UNAVAILABLE, e.to_string()))?;
        let linked = std::fs::hard_link(&tmp, &path);
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(ApiError(
                StatusCode::CONFLICT,
                format!("campaign '{name}' exists: delete it first"),
            )),
            Err(e) => Err(ApiError(StatusCode::SERVICE_UNAVAILABLE, e.to_string())),
        }
    })
    .await
    .map_err(|e| ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))??;
    tracing::info!(campaign = %plan.name, "campaign created through the API");
    Ok((
        StatusCode::CREATED,
        Json(Created {
            name: plan.name,
            steps: plan.steps.len(),
        }),
    ))
}

/// How many plans in `dir` were written through the API (their first
/// line is the API's mark).
fn api_campaigns(dir: &std::path::Path) -> usize {
    use std::io::BufRead;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            !name.starts_with('.') && name.ends_with(".toml")
        })
        .filter(|e| {
            let mut first = String::new();
            std::fs::File::open(e.path())
                .map(std::io::BufReader::new)
                .and_then(|mut r| r.read_line(&mut first))
                .is_ok()
                && first.starts_with(sonde_campaign::API_MARK)
        })
        .count()
}

async fn remove(
    State(state): State<Shared>,
    Path(name): Path<String>,
) -> Result<(StatusCode, Json<Retiring>), ApiError> {
    let dir = dir(&state)?;
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(bad(format!("'{name}' is not a campaign name")));
    }
    let path = dir.join(format!("{name}.toml"));
    match std::fs::remove_file(&path) {
        Ok(()) => {
            tracing::info!(campaign = %name, "campaign deleted through the API: retiring");
            Ok((
                StatusCode::ACCEPTED,
                Json(Retiring {
                    name,
                    retiring: true,
                }),
            ))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(not_found(format!("no campaign '{name}' here")))
        }
        Err(e) => {
            tracing::warn!(campaign = %name, "http: cannot remove the plan: {e}");
            Err(ApiError(
                StatusCode::SERVICE_UNAVAILABLE,
                "the plan cannot be removed now (the agent's log says why)".into(),
            ))
        }
    }
}

async fn set_paused(state: Shared, name: String, paused: bool) -> Result<Json<Paused>, ApiError> {
    let n = name.clone();
    if with_store(&state, move |s| s.set_paused(&n, paused)).await? {
        Ok(Json(Paused { name, paused }))
    } else {
        Err(not_found(format!("no campaign '{name}'")))
    }
}

async fn pause(
    State(state): State<Shared>,
    Path(name): Path<String>,
) -> Result<Json<Paused>, ApiError> {
    set_paused(state, name, true).await
}

async fn resume(
    State(state): State<Shared>,
    Path(name): Path<String>,
) -> Result<Json<Paused>, ApiError> {
    set_paused(state, name, false).await
}
