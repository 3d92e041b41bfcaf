//! Tests now: "run a test now" (`POST /api/v1/tests`: a test or a
//! method, through the agent's gate), stopping one (`DELETE
//! /api/v1/tests/{id}`), the tests running, and their events as they
//! happen (Server-Sent Events, `GET /api/v1/events`).

use super::list::{self, ListQ};
use super::openapi::{Op, Routes, Shape, JSON};
use super::reply::{ApiError, ApiRefusal};
use crate::live::{LiveRunner, LiveTest};
use crate::state::Shared;
use crate::tokens::Caller;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::StatusCode;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::{Extension, Json};
use futures_util::stream::Stream;
use serde_json::json;
use sonde_archive::Placement;
use sonde_gate::{Admitted, GatedRunner, Origin, Refused};
use sonde_model::{Spec, TestSpec};
use sonde_run::{BoundedStop, Events, LocalRunner, Runner, Stop};

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;

pub fn routes() -> Routes {
    Routes::new()
        .op(
            Op::post("/api/v1/tests", "runTest", "Run a test or a method now, through the agent's gate")
                .token()
                .body(JSON, Shape::read::<sonde_model::TestSpec>())
                .reply(202, "started; its events on /api/v1/events, its result in the archive", JSON, Shape::of::<Started>())
                .reply(400, "a bad parameter or body", JSON, Shape::of::<super::reply::Refusal>())
                .reply(422, "refused by the gate: a limit, a file named, a target that did not agree", JSON, Shape::of::<super::reply::Refusal>())
                .reply(429, "every test slot is taken", JSON, Shape::of::<super::reply::Refusal>())
                .errors(&[401, 403, 413, 503]),
            run_now,
        )
        .op(
            Op::delete("/api/v1/tests/{id}", "stopTest", "Stop a request the API started; it ends as interrupted and what it measured is kept")
                .token()
                .path_param("id", "the test's run id")
                .reply(202, "stopping", JSON, Shape::of::<Stopping>())
                .error(401, "no token")
                .error(403, "a token that is not valid here, or may not run_now")
                .error(404, "no such running request")
                .errors(&[429]),
            stop_one,
        )
        .op(
            Op::get("/api/v1/live", "live", "Tests running now, with their intervals so far")
                .query::<super::list::ListQuery>()
                .reply(200, "running tests", JSON, Shape::of::<Vec<crate::live::LiveTest>>())
                .headers(super::list::truncated_header())
                .error(400, "a bad parameter (limit out of range, an unknown one)")
                .errors(&[401, 403, 429]),
            live,
        )
        .op(
            Op::get("/api/v1/events", "events", "Live events of running tests (Server-Sent Events: started, interval, reply, finished, failed, lagged)")
                .reply(200, "an event stream", "text/event-stream", Shape::text())
                .error(503, "http.max_event_streams clients follow the events already")
                .errors(&[401, 403, 429]),
            events,
        )
}

/// A test started.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Started {
    /// Its run's id: its events carry it, its result is kept with it.
    run_id: String,
}

/// A test being stopped.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Stopping {
    run_id: String,
    stopping: bool,
}

async fn live(
    State(state): State<Shared>,
    caller: Option<Extension<Caller>>,
    q: ListQ,
) -> Result<axum::response::Response, ApiError> {
    let limit = list::limit(q)?;
    let (running, more) = list::cut::<LiveTest>(state.live.running(), limit);
    Ok(list::answer(
        super::redact::shown(&running, super::redact::has_token(caller.as_ref())),
        more,
    ))
}

/// Every live event from now on, as Server-Sent Events. A watcher too
/// slow to keep up is told how many it missed (`event: lagged`). At most
/// `http.max_event_streams` watch at once; one more gets 503.
async fn events(
    State(state): State<Shared>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, std::convert::Infallible>>>, ApiError> {
    let slot = state.guards.stream().ok_or_else(|| {
        ApiError(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "{} clients follow the live events already (http.max_event_streams)",
                state.http.max_event_streams
            ),
        )
    })?;
    let rx = state.live.subscribe();
    // The slot goes with the stream, and is given back when the client
    // goes.
    let stream = futures_util::stream::unfold((rx, slot), |(mut rx, slot)| async move {
        let event = match rx.recv().await {
            Ok(e) => SseEvent::default().event(e.name).data(e.data),
            Err(RecvError::Lagged(n)) => SseEvent::default()
                .event("lagged")
                .data(json!({ "missed": n }).to_string()),
            Err(RecvError::Closed) => return None,
        };
        Some((Ok(event), (rx, slot)))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

/// Runs the request in the body (a test as a result's `spec` has it,
/// or a method's spec) from this agent, now, if the agent's gate admits
/// it; answers at once with the run's id, and keeps the result in the
/// archive. The run is stopped at its admitted bound plus the gate's
/// grace, or by `DELETE /api/v1/tests/{id}`.
async fn run_now(
    State(state): State<Shared>,
    caller: Option<Extension<Caller>>,
    client: Option<Extension<ConnectInfo<SocketAddr>>>,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<(StatusCode, Json<Started>), ApiRefusal> {
    let body = super::reply::body(body)?;
    let spec = Spec::from_json(&body).map_err(|e| {
        let error = format!("the spec: {e}");
        let body = super::reply::Refusal {
            error,
            rule: Some("invalid_spec".into()),
            at: Some(e.at),
        };
        ApiRefusal(StatusCode::BAD_REQUEST, body)
    })?;
    let client = client.map(|Extension(ConnectInfo(a))| a);
    let who = caller.map_or_else(|| "anonymous".to_string(), |Extension(Caller(n))| n);
    let origin = Origin::Api { who: who.clone() };
    let audit = |r: Option<&Refused>| {
        if let Some(a) = &state.audit {
            let target = sonde_gate::aimed_at(&spec)
                .first()
                .map(|(_, t)| t.host().to_string());
            let why = r.map(|r| format!("{}: {r}", r.rule()));
            a.test(client, Some(&who), &spec, target, why);
        }
    };
    let admitted = match state.gate.admit(&origin, &spec) {
        Ok(a) => a,
        Err(r) => {
            audit(Some(&r));
            state.counters.refused(&r.to_wire());
            tracing::info!(name: "request_refused", origin = "api", by = %who, reason = %r.rule(), "a request through the API refused: {r}");
            return Err(ApiRefusal::gate(&r, "", ""));
        }
    };
    audit(None);
    let run_id = uuid::Uuid::new_v4().to_string();
    let events = Events::new();
    let stop = Stop::new();
    match &spec {
        Spec::Test(t) => state.live.watch(&run_id, t, &events, &stop),
        Spec::Method(_) => state.live.follow_method(&run_id, &events),
    }
    state.runs.lock().insert(run_id.clone(), stop.clone());
    tracing::info!(run = %run_id, by = %who, request = spec.name(), "started through the API");
    let st = Arc::clone(&state);
    let id = run_id.clone();
    let spawned = std::thread::Builder::new()
        .name("sonde-api-test".into())
        .spawn(move || {
            let request = Request {
                state: &st,
                spec: &spec,
                origin,
                who: &who,
                run_id: &id,
            };
            request.run(admitted, &stop, &events);
            // Ends the live view's following of a method.
            events.close();
            st.runs.lock().remove(&id);
        });
    if let Err(e) = spawned {
        state.runs.lock().remove(&run_id);
        return Err(ApiError(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("cannot start the test: {e}"),
        )
        .into());
    }
    Ok((StatusCode::ACCEPTED, Json(Started { run_id })))
}

/// Stops a request the API started, or any test running on the agent
/// (a campaign's, by its id in `/api/v1/live`): it ends as interrupted,
/// and what it measured so far is kept.
async fn stop_one(
    State(state): State<Shared>,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<Stopping>), ApiError> {
    let request = state.runs.lock().get(&id).cloned();
    let stopped = match request {
        Some(stop) => {
            stop.stop();
            true
        }
        None => state.live.stop(&id),
    };
    match stopped {
        true => {
            tracing::info!(run = %id, "stopped through the API");
            Ok((
                StatusCode::ACCEPTED,
                Json(Stopping {
                    run_id: id,
                    stopping: true,
                }),
            ))
        }
        false => Err(super::reply::not_found(format!(
            "no request or test '{id}' is running here"
        ))),
    }
}

/// One admitted request as it runs.
struct Request<'a> {
    state: &'a Shared,
    spec: &'a Spec,
    origin: Origin,
    who: &'a str,
    run_id: &'a str,
}

impl Request<'_> {
    fn run(self, admitted: Admitted, stop: &Stop, events: &Events) {
        // The whole request stops at its admitted bound plus the grace.
        let bounded = BoundedStop::new(stop, admitted.deadline);
        let stop = bounded.flag();
        // A method's trials show live, each with a stop of its own.
        let inner: Box<dyn Runner> = match self.spec {
            Spec::Test(_) => Box::new(LocalRunner),
            Spec::Method(_) => Box::new(LiveRunner {
                inner: Box::new(LocalRunner),
                bus: Arc::clone(&self.state.live),
            }),
        };
        let runner = GatedRunner {
            inner,
            gate: Arc::clone(&self.state.gate),
            origin: self.origin.clone(),
        };
        let at = Placement {
            campaign: None,
            run_id: Some(self.run_id.to_string()),
            method_id: None,
            labels: [
                ("origin".to_string(), "api".to_string()),
                ("by".to_string(), self.who.to_string()),
            ]
            .into(),
        };
        let kept = match self.spec {
            Spec::Test(t) => self.test(&runner, t, stop, events, &at),
            Spec::Method(m) => match sonde_methods::run_method(&runner, m, stop, events) {
                Ok(r) => self
                    .state
                    .stores
                    .with(|s| s.put_method(&r, &at).map(|_| ())),
                Err(e) => {
                    tracing::warn!(run = %self.run_id, "a method through the API failed: {e}");
                    Ok(())
                }
            },
        };
        // The slot, dropped below, counts the test run.
        if bounded.hit_bound() {
            tracing::warn!(run = %self.run_id, "stopped at its admitted bound");
        }
        drop(admitted);
        if let Err(e) = kept {
            self.state.counters.archive_error();
            tracing::error!(run = %self.run_id, "the result of a request through the API was not kept: {e}");
        }
    }

    fn test(
        &self,
        runner: &dyn Runner,
        t: &TestSpec,
        stop: &Stop,
        events: &Events,
        at: &Placement,
    ) -> Result<(), sonde_archive::ArchiveError> {
        match runner.run(t, stop, events) {
            Ok(r) => self.state.stores.with(|s| s.put_result(&r, at).map(|_| ())),
            Err(e) => {
                tracing::warn!(run = %self.run_id, "test through the API failed: {e}");
                Ok(())
            }
        }
    }
}
