//! One run of a campaign: its steps in order, each result kept in the
//! archive as soon as it is finished (so a crash loses only the step that
//! was running), every step's outcome written as a run event.

use crate::plan::{step_length, Plan, Step, StepBody};
use crate::resource::{path_key, ResourceClass};
use crate::run_event::RunEventKind;
use crate::scheduler::{Progress, Runners};
use crate::{now_ns, CampaignError};
use sonde_archive::{Placement, RunState, Store};
use sonde_run::{Events, Runner, Stop};
use std::time::Duration;

/// How often a step waiting for its path looks again.
const LEASE_POLL: Duration = Duration::from_millis(250);

/// What a run needs from the scheduler.
pub(crate) struct RunCtx<'a> {
    pub store: &'a mut Store,
    pub plan: &'a Plan,
    pub run_id: &'a str,
    /// The endpoint this process is.
    pub me: &'a str,
    pub runners: &'a dyn Runners,
    pub stop: &'a Stop,
    /// Who holds this run's leases: `host:pid#run`.
    pub holder: &'a str,
    pub progress: &'a mut dyn FnMut(Progress),
}

/// How a step ended.
enum Outcome {
    Kept(String),
    Failed(String),
    Skipped(String),
    /// The agent's gate did not admit it.
    Refused(String),
}

impl RunCtx<'_> {
    fn event(&mut self, kind: RunEventKind, detail: &str) {
        if let Err(e) = self
            .store
            .run_event(self.run_id, now_ns(), kind.name(), detail)
        {
            tracing::warn!(run = self.run_id, "run event not kept: {e}");
        }
    }

    /// Runs every step; the run's end state.
    pub fn run(&mut self) -> Result<(RunState, usize), CampaignError> {
        let total = self.plan.steps.len();
        let (mut failed, mut kept) = (0, 0);
        for (i, step) in self.plan.steps.iter().enumerate() {
            if self.stop.is_stopped() {
                self.event(
                    RunEventKind::Interrupted,
                    &format!("stopped before step {}", i + 1),
                );
                return Ok((RunState::Interrupted, kept));
            }
            self.store.heartbeat(self.run_id, now_ns())?;
            (self.progress)(Progress::StepStarted {
                index: i + 1,
                total,
                name: step.name.clone(),
            });
            self.event(RunEventKind::StepStarted, &step.name);
            let outcome = self.step(step)?;
            let (kind, detail) = match &outcome {
                Outcome::Kept(d) => {
                    kept += 1;
                    (RunEventKind::StepDone, d.clone())
                }
                Outcome::Failed(d) => {
                    failed += 1;
                    (RunEventKind::StepFailed, d.clone())
                }
                Outcome::Skipped(d) => (RunEventKind::StepSkipped, d.clone()),
                Outcome::Refused(d) => {
                    failed += 1;
                    (RunEventKind::StepRefused, d.clone())
                }
            };
            self.event(kind, &format!("{}: {detail}", step.name));
            (self.progress)(Progress::StepEnded {
                name: step.name.clone(),
                kind,
                detail,
            });
            if self.stop.is_stopped() {
                self.event(
                    RunEventKind::Interrupted,
                    &format!("stopped in step {}", i + 1),
                );
                return Ok((RunState::Interrupted, kept));
            }
        }
        let state = if failed > 0 {
            RunState::Failed
        } else {
            RunState::Done
        };
        Ok((state, kept))
    }

    fn step(&mut self, step: &Step) -> Result<Outcome, CampaignError> {
        let plan = self.plan;
        let from = plan
            .endpoint(&step.from)
            .expect("steps name known endpoints");
        let to = plan.endpoint(&step.to).expect("steps name known endpoints");
        let runner: Box<dyn Runner> = if step.from == self.me {
            self.runners.local()
        } else {
            let ping = matches!(step.body, StepBody::Test(sonde_model::TestSpec::Ping(_)));
            match (&from.agent, ping) {
                (Some(agent), false) => match self.runners.agent(agent) {
                    Ok(r) => r,
                    Err(e) => return Ok(Outcome::Failed(format!("agent {agent}: {e}"))),
                },
                _ => {
                    return Ok(Outcome::Skipped(format!(
                        "led by {}: it runs this step with its own scheduler",
                        from.name
                    )))
                }
            }
        };
        let _admitted = match self.runners.admit(&step.body) {
            Ok(slot) => slot,
            Err(why) => return Ok(Outcome::Refused(why)),
        };
        let lease = if step.resource == ResourceClass::Throughput {
            let path = path_key(&from.address, &to.address);
            match self.take_path(&path, step)? {
                Some(p) => Some(p),
                None => {
                    return Ok(Outcome::Skipped(format!(
                        "the path {path} stayed busy for longer than the plan's slip"
                    )))
                }
            }
        } else {
            None
        };
        let outcome = self.measure(step, runner.as_ref());
        if let Some(path) = lease {
            self.store.release_lease(&path, self.holder)?;
        }
        outcome
    }

    /// Takes the lease on `path`, waiting while another holds it, up to
    /// the schedule's slip; `None` if it never came free.
    fn take_path(&mut self, path: &str, step: &Step) -> Result<Option<String>, CampaignError> {
        let hold = step_length(&step.body) + Duration::from_secs(120);
        let waited_from = now_ns();
        let limit = self
            .plan
            .schedule
            .slip
            .max(Duration::from_secs(1))
            .as_nanos() as i64;
        let mut said = false;
        loop {
            let now = now_ns();
            let until = now.saturating_add(hold.as_nanos() as i64);
            if self.store.acquire_lease(path, self.holder, now, until)? {
                return Ok(Some(path.to_string()));
            }
            if !said {
                let holder = self.store.lease(path, now)?.map(|l| l.holder);
                let detail = format!(
                    "{}: waits for {path}, held by {}",
                    step.name,
                    holder.as_deref().unwrap_or("another run")
                );
                self.event(RunEventKind::Waiting, &detail);
                (self.progress)(Progress::Waiting { detail });
                said = true;
            }
            if now - waited_from > limit || self.stop.is_stopped() {
                return Ok(None);
            }
            std::thread::sleep(LEASE_POLL);
        }
    }

    /// Runs a method step on a thread of its own while this one passes
    /// its typed progress (`Event::Method`) on as [`Progress::Method`], as
    /// it comes.
    fn run_method(
        &mut self,
        step: &Step,
        runner: &dyn Runner,
        spec: &sonde_model::MethodSpec,
        events: &Events,
    ) -> Result<sonde_model::MethodResult, sonde_methods::MethodError> {
        let rx = events.subscribe();
        let stop = self.stop;
        std::thread::scope(|scope| {
            let method = scope.spawn(move || {
                let out = sonde_methods::run_method(runner, spec, stop, events);
                events.close();
                out
            });
            for e in rx {
                if let sonde_model::Event::Method(event) = e {
                    (self.progress)(Progress::Method {
                        step: step.name.clone(),
                        event,
                    });
                }
            }
            method.join().unwrap_or_else(|_| {
                Err(sonde_methods::MethodError::Invalid {
                    field: "method",
                    detail: "the method's thread panicked".into(),
                })
            })
        })
    }

    /// Runs the step and keeps what it measured.
    fn measure(&mut self, step: &Step, runner: &dyn Runner) -> Result<Outcome, CampaignError> {
        let mut labels = self.plan.labels.clone();
        labels.extend(step.labels.clone());
        labels.insert("step".into(), step.name.clone());
        // The endpoints by name: the mesh grid's rows and columns.
        labels.insert("from".into(), step.from.clone());
        labels.insert("to".into(), step.to.clone());
        let at = Placement {
            campaign: Some(self.plan.name.clone()),
            run_id: Some(self.run_id.to_string()),
            method_id: None,
            labels,
        };
        let events = Events::new();
        match &step.body {
            StepBody::Test(spec) => match runner.run(spec, self.stop, &events) {
                Ok(r) => {
                    self.store.put_result(&r, &at)?;
                    let brief = sonde_report::brief(&r);
                    let sep = if brief.is_empty() { "" } else { ": " };
                    Ok(Outcome::Kept(format!("result {}{sep}{brief}", r.id)))
                }
                Err(e) => Ok(Outcome::Failed(e.to_string())),
            },
            StepBody::Method(spec) => {
                let ran = self.run_method(step, runner, spec, &events);
                match ran {
                    Ok(m) => {
                        self.store.put_method(&m, &at)?;
                        Ok(Outcome::Kept(format!(
                            "method {} ({} trials)",
                            m.id,
                            m.trials.len()
                        )))
                    }
                    Err(e) => Ok(Outcome::Failed(e.to_string())),
                }
            }
        }
    }
}
