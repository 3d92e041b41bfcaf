//! This host's part of one run of a campaign: the steps it claimed, in
//! the plan's order, each result kept in the archive as soon as it is
//! finished (so a crash loses only the step that was running), every
//! step's outcome written to its step row and as a run event.

use crate::plan::{step_length, Plan, Step, StepBody};
use crate::resource::{path_key, ResourceClass};
use crate::run_event::RunEventKind;
use crate::runners::{Progress, Runners};
use crate::{now_ns, CampaignError};
use sonde_archive::{Placement, RunState, StepState, Store};
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
    /// This process (`host:pid`), as its steps name their holder.
    pub owner: &'a str,
    /// The steps it claimed: places in the plan.
    pub steps: &'a [usize],
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

    /// Ends the claimed steps from the `from`-th on as interrupted.
    fn interrupt_from(&mut self, from: usize, why: &str) -> Result<(), CampaignError> {
        for &i in &self.steps[from..] {
            self.store.set_step(
                self.run_id,
                i as i64,
                StepState::Interrupted,
                Some(why),
                now_ns(),
            )?;
        }
        self.event(RunEventKind::Interrupted, why);
        Ok(())
    }

    /// Runs the claimed steps; how they went, and how many results were
    /// kept.
    pub fn run(&mut self) -> Result<(RunState, usize), CampaignError> {
        let total = self.plan.steps.len();
        let (mut failed, mut kept) = (0, 0);
        for (n, &i) in self.steps.iter().enumerate() {
            let plan = self.plan;
            let step = &plan.steps[i];
            if self.stop.is_stopped() {
                self.interrupt_from(n, &format!("stopped before step {}", i + 1))?;
                return Ok((RunState::Interrupted, kept));
            }
            let now = now_ns();
            self.store.heartbeat(self.run_id, now)?;
            self.store.step_heartbeat(self.run_id, self.owner, now)?;
            self.store
                .set_step(self.run_id, i as i64, StepState::Running, None, now)?;
            (self.progress)(Progress::StepStarted {
                index: i + 1,
                total,
                name: step.name.clone(),
            });
            self.event(RunEventKind::StepStarted, &step.name);
            let outcome = self.step(step)?;
            let (kind, state, detail) = match &outcome {
                Outcome::Kept(d) => {
                    kept += 1;
                    (RunEventKind::StepDone, StepState::Done, d.clone())
                }
                Outcome::Failed(d) => {
                    failed += 1;
                    (RunEventKind::StepFailed, StepState::Failed, d.clone())
                }
                Outcome::Skipped(d) => (RunEventKind::StepSkipped, StepState::Skipped, d.clone()),
                Outcome::Refused(d) => {
                    failed += 1;
                    (RunEventKind::StepRefused, StepState::Refused, d.clone())
                }
            };
            self.store
                .set_step(self.run_id, i as i64, state, Some(&detail), now_ns())?;
            self.event(kind, &format!("{}: {detail}", step.name));
            (self.progress)(Progress::StepEnded {
                name: step.name.clone(),
                kind,
                detail,
            });
            if self.stop.is_stopped() {
                self.interrupt_from(n + 1, &format!("stopped in step {}", i + 1))?;
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
        // A step of another endpoint is claimed only through its agent
        // (`shared_run::can_lead`).
        let runner: Box<dyn Runner> = match (&from.agent, step.from == self.me) {
            (_, true) => self.runners.local(),
            (Some(agent), false) => match self.runners.agent(agent) {
                Ok(r) => r,
                Err(e) => return Ok(Outcome::Failed(format!("agent {agent}: {e}"))),
            },
            (None, false) => {
                return Ok(Outcome::Failed(format!(
                    "endpoint {} has no agent to run it through",
                    from.name
                )))
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
                        "the path {path} stayed busy for longer than the run and its slip"
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

    /// Takes the lease on `path`, waiting while another holds it (another
    /// host's steps of this run, say), up to the run's length and its
    /// slip; `None` if it never came free.
    fn take_path(&mut self, path: &str, step: &Step) -> Result<Option<String>, CampaignError> {
        let hold = step_length(&step.body) + Duration::from_secs(120);
        let waited_from = now_ns();
        let limit = (self.plan.schedule.slip.max(Duration::from_secs(1)) + self.plan.run_length())
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
                    let brief = r.brief();
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
