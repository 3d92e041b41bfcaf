//! Tests running now, as the portal's live page sees them: every test the
//! agent runs itself (a campaign's steps, "run a test now") goes through a
//! [`LiveRunner`], which copies its events to the process-wide
//! [`LiveBus`]. The bus keeps each running test's intervals so far (a page
//! opened mid-test draws them) and broadcasts each event as it comes to
//! the API's Server-Sent Events stream.

use serde_json::{json, Value};
use sonde_model::clock::now_ns;
use sonde_model::{Event, MethodEvent, TestResult, TestSpec};
use sonde_run::{Events, RunError, Runner, Stop};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast;

/// Most intervals kept per running test (an hour of 1 s intervals).
const KEPT_INTERVALS: usize = 3600;

/// One event for the SSE stream: its name and its JSON data.
#[derive(Debug, Clone)]
pub struct LiveEvent {
    pub name: &'static str,
    pub data: String,
}

/// A test running now.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct LiveTest {
    pub run_id: String,
    pub spec: TestSpec,
    pub started_ns: i64,
    /// Its interval reports so far, as its result will have them.
    pub intervals: Vec<Value>,
    /// What stops it (`DELETE /api/v1/tests/{run_id}`).
    #[serde(skip)]
    #[schemars(skip)]
    pub stop: Stop,
}

/// Where running tests' events meet their watchers.
#[derive(Debug)]
pub struct LiveBus {
    tx: broadcast::Sender<LiveEvent>,
    running: Mutex<BTreeMap<String, LiveTest>>,
    /// Every ping answer's RTT, for `/metrics`.
    pub rtt: crate::rtt_histograms::RttHistograms,
}

impl Default for LiveBus {
    fn default() -> Self {
        Self {
            tx: broadcast::channel(1024).0,
            running: Mutex::new(BTreeMap::new()),
            rtt: crate::rtt_histograms::RttHistograms::default(),
        }
    }
}

impl LiveBus {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// A receiver of every event from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<LiveEvent> {
        self.tx.subscribe()
    }

    /// The tests running now, with their intervals so far.
    pub fn running(&self) -> Vec<LiveTest> {
        self.lock().values().cloned().collect()
    }

    /// How many tests are running now.
    pub fn count(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, LiveTest>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn send(&self, name: &'static str, data: Value) {
        // No watcher is not an error.
        let _ = self.tx.send(LiveEvent {
            name,
            data: data.to_string(),
        });
    }

    /// Follows a method's `events` on a thread of its own, sending its
    /// typed progress as `method` events (`{"run_id", "kind", "event"}`)
    /// until the method's events end. Its trials show as tests of their
    /// own (through [`LiveRunner`]).
    pub fn follow_method(self: &Arc<Self>, run_id: &str, events: &Events) {
        let rx = events.subscribe();
        let bus = Arc::clone(self);
        let id = run_id.to_string();
        let spawned = std::thread::Builder::new()
            .name("sonde-live-method".into())
            .spawn(move || {
                for e in rx {
                    if let Event::Method(m) = e {
                        let (kind, event) = method_json(&m);
                        bus.send(
                            "method",
                            json!({"run_id": id, "kind": kind, "event": event}),
                        );
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("live view: cannot follow a method: {e}");
        }
    }

    /// Stops running test `run_id`; false if none runs by that id.
    pub fn stop(&self, run_id: &str) -> bool {
        match self.lock().get(run_id) {
            Some(t) => {
                t.stop.stop();
                true
            }
            None => false,
        }
    }

    /// Announces test `run_id`, which `stop` stops, and follows `events`
    /// on a thread of its own until the test finishes or fails.
    pub fn watch(self: &Arc<Self>, run_id: &str, spec: &TestSpec, events: &Events, stop: &Stop) {
        let rx = events.subscribe();
        let test = LiveTest {
            run_id: run_id.to_string(),
            spec: spec.clone(),
            started_ns: now_ns(),
            intervals: Vec::new(),
            stop: stop.clone(),
        };
        // The event stream is read without a token where reading is
        // public: a stored request's secrets stay out of it.
        let mut shown = serde_json::to_value(spec).unwrap_or(Value::Null);
        crate::api::redact::redact(&mut shown);
        self.send(
            "started",
            json!({"run_id": run_id, "spec": shown, "started_ns": test.started_ns}),
        );
        self.lock().insert(run_id.to_string(), test);
        let bus = Arc::clone(self);
        let id = run_id.to_string();
        let spawned = std::thread::Builder::new()
            .name("sonde-live".into())
            .spawn({
                let spec = spec.clone();
                move || bus.follow(&id, spec, &rx)
            });
        if let Err(e) = spawned {
            tracing::warn!("live view: cannot follow a test: {e}");
            self.lock().remove(run_id);
        }
    }

    fn follow(&self, id: &str, spec: TestSpec, rx: &std::sync::mpsc::Receiver<Event>) {
        for event in rx {
            match event {
                Event::Interval(i) => {
                    let v = serde_json::to_value(&i).unwrap_or(Value::Null);
                    if let Some(t) = self.lock().get_mut(id) {
                        if t.intervals.len() < KEPT_INTERVALS {
                            t.intervals.push(v.clone());
                        }
                    }
                    self.send("interval", json!({"run_id": id, "interval": v}));
                }
                Event::Reply(r) => {
                    if let (false, TestSpec::Ping(p)) = (r.duplicate, &spec) {
                        self.rtt.observe(p, r.rtt_ms / 1e3);
                    }
                    self.send("reply", json!({"run_id": id, "reply": r}));
                }
                Event::Finished(r) => {
                    self.lock().remove(id);
                    self.send(
                        "finished",
                        json!({"run_id": id, "result_id": r.id.to_string()}),
                    );
                    return;
                }
                Event::Failed { reason } => {
                    self.lock().remove(id);
                    self.send("failed", json!({"run_id": id, "reason": reason}));
                    return;
                }
                _ => {}
            }
        }
        // The hub went away without a last word.
        if self.lock().remove(id).is_some() {
            self.send(
                "failed",
                json!({"run_id": id, "reason": "the test ended without a result"}),
            );
        }
    }
}

/// A method's progress as the live stream sends it: its kind and body.
fn method_json(m: &MethodEvent) -> (&'static str, Value) {
    let v = |x: serde_json::Result<Value>| x.unwrap_or(Value::Null);
    match m {
        MethodEvent::NdrTrial(t) => ("ndr_trial", v(serde_json::to_value(t))),
        MethodEvent::SweepStep(s) => ("sweep_step", v(serde_json::to_value(s))),
        MethodEvent::RepeatRun(r) => (
            "repeat_run",
            json!({"result_id": r.id.to_string(), "summary": v(serde_json::to_value(&r.summary))}),
        ),
        MethodEvent::QosCheck(c) => ("qos_check", v(serde_json::to_value(c))),
        MethodEvent::QosStep(s) => ("qos_step", v(serde_json::to_value(s))),
        MethodEvent::OverheadPoint(p) => ("overhead_point", v(serde_json::to_value(p))),
        MethodEvent::TuneStage(s) => ("tune_stage", json!({ "stage": s })),
        MethodEvent::TuneLabStep(s) => ("tune_lab_step", v(serde_json::to_value(s))),
    }
}

/// A runner whose tests show on the live bus.
pub struct LiveRunner {
    pub inner: Box<dyn Runner>,
    pub bus: Arc<LiveBus>,
}

impl Runner for LiveRunner {
    fn run(&self, spec: &TestSpec, stop: &Stop, events: &Events) -> Result<TestResult, RunError> {
        let id = uuid::Uuid::new_v4().to_string();
        // A stop of its own, so that one test of a campaign can be
        // stopped without the campaign.
        let own = sonde_run::BoundedStop::new(stop, None);
        self.bus.watch(&id, spec, events, own.flag());
        self.inner.run(spec, own.flag(), events)
    }

    fn resolve(
        &self,
        host: &str,
        family: sonde_model::IpFamily,
    ) -> Result<Vec<std::net::IpAddr>, sonde_run::RunError> {
        self.inner.resolve(host, family)
    }
}
