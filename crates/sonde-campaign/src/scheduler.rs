//! The scheduler: one loop per campaign, whose every decision is written
//! to the archive before it acts on it.
//!
//! - The next occurrence is the first one after the latest the archive
//!   has recorded for the campaign (run, missed or interrupted), so a
//!   restart goes on where the archive says, never from memory.
//! - An occurrence past its slip is recorded `missed` with its reason
//!   (the previous run was still going; sonde was not running), one row
//!   each: missed runs are shown, never replayed all at once.
//! - A due run is *claimed* by inserting it, unique by campaign and
//!   nominal time: a second process (or a restarted one) that tries the
//!   same occurrence finds it taken, so no run starts twice.
//! - At start, runs left `running` by a process that is gone are marked
//!   `interrupted`, and that process's path leases are dropped.

use crate::plan::Plan;
use crate::run::RunCtx;
use crate::{now_ns, rfc3339, CampaignError};
use sonde_archive::{RunState, Store};
use sonde_run::{Runner, Stop};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// How often a waiting scheduler looks at its controls.
const TICK: Duration = Duration::from_millis(200);

/// Where a campaign's tests run from.
pub trait Runners: Send + Sync {
    /// This host.
    fn local(&self) -> Box<dyn Runner>;
    /// Another agent (`HOST[:PORT]`), as third-party tests.
    fn agent(&self, agent: &str) -> Result<Box<dyn Runner>, String>;
    /// Admits a step when it is due: the agent's gate, for the plan's
    /// origin. What it returns is held while the step runs (its slot);
    /// `Err` says why not, and the step is recorded refused. By default
    /// every step is admitted (the command line's `sonde campaign run`).
    fn admit(&self, _step: &crate::StepBody) -> Result<Box<dyn std::any::Any + Send>, String> {
        Ok(Box::new(()))
    }
}

/// What the scheduler is doing, for a progress display or a log.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    /// A run left by a dead process was marked interrupted.
    Recovered {
        run_id: String,
        scheduled_ns: i64,
    },
    /// Nothing is due before `at_ns`.
    Next {
        at_ns: i64,
    },
    Missed {
        scheduled_ns: i64,
        reason: String,
    },
    RunStarted {
        run_id: String,
        scheduled_ns: i64,
        /// Runs this scheduler has started, this one included.
        number: u64,
    },
    StepStarted {
        index: usize,
        total: usize,
        name: String,
    },
    Waiting {
        detail: String,
    },
    /// A method step's progress, as the method says it (the same typed
    /// events `sonde ndr`, `sonde sweep`, … print from).
    Method {
        step: String,
        event: sonde_model::MethodEvent,
    },
    StepEnded {
        name: String,
        kind: crate::RunEventKind,
        detail: String,
    },
    RunEnded {
        run_id: String,
        state: RunState,
        kept: usize,
    },
    /// The schedule has no occurrence left.
    Finished,
}

/// How the outside steers a running scheduler.
#[derive(Default)]
pub struct Control {
    /// Stops at once: a run in progress ends as interrupted.
    pub stop: Stop,
    /// Ends the loop between runs (the plan's file was removed).
    retire: AtomicBool,
    /// A new version of the plan, taken between runs.
    reload: Mutex<Option<(Plan, String)>>,
}

impl Control {
    /// A control whose `stop` is `stop` (a Ctrl-C flag, say).
    pub fn with_stop(stop: Stop) -> Self {
        Self {
            stop,
            ..Self::default()
        }
    }

    pub fn retire(&self) {
        self.retire.store(true, Ordering::Relaxed);
    }

    pub fn reload(&self, plan: Plan, text: String) {
        *self.reload.lock().unwrap_or_else(|e| e.into_inner()) = Some((plan, text));
    }

    fn take_reload(&self) -> Option<(Plan, String)> {
        self.reload.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    fn ended(&self) -> bool {
        self.stop.is_stopped() || self.retire.load(Ordering::Relaxed)
    }
}

/// This process, as runs and leases name their owner: `host:pid`.
pub fn owner_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".into());
    format!("{host}:{}", std::process::id())
}

/// Whether the process `owner` names is known to be gone: on this host,
/// no such pid; elsewhere, no heartbeat for `stale`.
fn owner_gone(owner: Option<&str>, heartbeat_ns: Option<i64>, stale: Duration) -> bool {
    let me = owner_name();
    let (my_host, _) = me.rsplit_once(':').unwrap_or((&me, ""));
    match owner.and_then(|o| o.rsplit_once(':')) {
        Some((host, pid)) if host == my_host => {
            pid != std::process::id().to_string()
                && !std::path::Path::new(&format!("/proc/{pid}")).exists()
        }
        _ => heartbeat_ns.is_none_or(|h| now_ns() - h > stale.as_nanos() as i64),
    }
}

pub struct Scheduler<'a> {
    store: Store,
    plan: Plan,
    me: String,
    runners: &'a dyn Runners,
    control: &'a Control,
    owner: String,
    began_ns: i64,
    anchor_ns: i64,
    /// The last run this scheduler ran: (due, ended).
    last_run: Option<(i64, i64)>,
    started: u64,
}

impl<'a> Scheduler<'a> {
    /// A scheduler for `plan` (whose text is `text`), running as endpoint
    /// `me`; the plan is kept in the archive.
    pub fn new(
        mut store: Store,
        plan: Plan,
        text: &str,
        me: &str,
        runners: &'a dyn Runners,
        control: &'a Control,
    ) -> Result<Self, CampaignError> {
        if plan.endpoint(me).is_none() {
            return Err(CampaignError::Plan(format!(
                "this host is to be endpoint '{me}', which the plan does not name"
            )));
        }
        let now = now_ns();
        store.put_campaign(&plan.name, text, now)?;
        let anchor_ns = store
            .campaigns()?
            .into_iter()
            .find(|c| c.name == plan.name)
            .map_or(now, |c| c.created_ns);
        Ok(Self {
            store,
            plan,
            me: me.to_string(),
            runners,
            control,
            owner: owner_name(),
            began_ns: now,
            anchor_ns,
            last_run: None,
            started: 0,
        })
    }

    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Marks runs left running by a process that is gone as interrupted.
    fn recover(&mut self, progress: &mut dyn FnMut(Progress)) -> Result<(), CampaignError> {
        let stale = self.plan.run_length() + Duration::from_secs(300);
        for run in self.store.running_runs(&self.plan.name)? {
            if !owner_gone(run.owner.as_deref(), run.heartbeat_ns, stale) {
                continue;
            }
            let owner = run.owner.clone().unwrap_or_default();
            let reason = format!("found unfinished: its process ({owner}) ended before it did");
            self.store
                .finish_run(&run.id, RunState::Interrupted, Some(&reason), now_ns())?;
            self.store.run_event(
                &run.id,
                now_ns(),
                crate::RunEventKind::Interrupted.name(),
                &reason,
            )?;
            self.store.drop_leases(&owner)?;
            progress(Progress::Recovered {
                run_id: run.id,
                scheduled_ns: run.scheduled_ns,
            });
        }
        Ok(())
    }

    /// Why occurrence `occ`, due at `due`, is missed.
    fn missed_reason(&self, due: i64) -> String {
        match self.last_run {
            Some((from, to)) if due >= from && due < to => format!(
                "the run due at {} was still going (until {})",
                rfc3339(from),
                rfc3339(to)
            ),
            _ if due < self.began_ns => format!(
                "sonde was not running then (this scheduler started at {})",
                rfc3339(self.began_ns)
            ),
            _ => "it could not start within its slip".to_string(),
        }
    }

    /// Runs the schedule until it ends, or the control stops or retires
    /// it.
    pub fn run(&mut self, progress: &mut dyn FnMut(Progress)) -> Result<(), CampaignError> {
        self.recover(progress)?;
        let mut announced = None;
        loop {
            if self.control.ended() {
                return Ok(());
            }
            if let Some((plan, text)) = self.control.take_reload() {
                self.store.put_campaign(&plan.name, &text, now_ns())?;
                self.plan = plan;
            }
            let name = self.plan.name.clone();
            let after = self
                .store
                .runs(&name, 1)?
                .first()
                .map_or(i64::MIN, |r| r.scheduled_ns.saturating_add(1));
            let schedule = &self.plan.schedule;
            let Some(occ) = schedule.next_at_or_after(self.anchor_ns, after) else {
                progress(Progress::Finished);
                return Ok(());
            };
            let due = schedule.due_ns(&name, occ);
            let slip = schedule.slip.as_nanos() as i64;
            let now = now_ns();
            if now < due {
                if announced != Some(due) {
                    progress(Progress::Next { at_ns: due });
                    announced = Some(due);
                }
                let wait = Duration::from_nanos((due - now) as u64).min(TICK);
                std::thread::sleep(wait);
                continue;
            }
            let id = uuid::Uuid::new_v4().to_string();
            let paused = self.store.is_paused(&name)?;
            if paused || now > due.saturating_add(slip) {
                let reason = if paused {
                    "the campaign was paused".to_string()
                } else {
                    self.missed_reason(due)
                };
                if self.store.record_missed(&id, &name, occ, &reason)? {
                    progress(Progress::Missed {
                        scheduled_ns: occ,
                        reason,
                    });
                }
                continue;
            }
            if !self.store.claim_run(&id, &name, occ, now, &self.owner)? {
                // Another scheduler took this occurrence: the next one.
                continue;
            }
            self.started += 1;
            progress(Progress::RunStarted {
                run_id: id.clone(),
                scheduled_ns: occ,
                number: self.started,
            });
            self.store.run_event(
                &id,
                now,
                crate::RunEventKind::Started.name(),
                &format!("due {}, as endpoint {}", rfc3339(due), self.me),
            )?;
            let stop = self.control.stop.clone();
            let holder = format!("{}#{id}", self.owner);
            let (state, kept) = RunCtx {
                store: &mut self.store,
                plan: &self.plan,
                run_id: &id,
                me: &self.me,
                runners: self.runners,
                stop: &stop,
                holder: &holder,
                progress,
            }
            .run()?;
            let ended = now_ns();
            let reason = match state {
                RunState::Failed => Some("a step failed: see its events"),
                RunState::Interrupted => Some("stopped"),
                _ => None,
            };
            self.store.finish_run(&id, state, reason, ended)?;
            self.last_run = Some((due, ended));
            progress(Progress::RunEnded {
                run_id: id,
                state,
                kept,
            });
        }
    }
}
