//! The scheduler: one loop per campaign, whose every decision is written
//! to the archive before it acts on it.
//!
//! - It starts at the latest run the archive has for the campaign (that
//!   run itself while it is still going, so a host that comes late joins
//!   it), and goes on from there occurrence by occurrence.
//! - A due run is made once, unique by campaign and nominal time; every
//!   host running the plan *joins* it and claims the steps it leads
//!   (`shared_run`), so a battery run from both ends keeps one schedule
//!   and every run has every step, each run once.
//! - An occurrence past its slip is recorded `missed` with its reason
//!   (the previous run was still going; sonde was not running), one row
//!   each: missed runs are shown, never replayed all at once. When
//!   another host made the run in time, only this host's steps are
//!   missed, each with the reason.
//! - At start and between runs, steps left by a process that is gone are
//!   marked `interrupted`, steps nobody claimed within the slip `missed`,
//!   and a run whose steps have all ended is settled.

use crate::plan::Plan;
use crate::run::RunCtx;
use crate::runners::{Progress, Runners};
use crate::{now_ns, rfc3339, CampaignError};
use sonde_archive::{RunState, Store};
use sonde_run::Stop;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// How often a waiting scheduler looks at its controls.
const TICK: Duration = Duration::from_millis(200);

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

pub use crate::shared_run::owner_name;

pub struct Scheduler<'a> {
    store: Store,
    plan: Plan,
    overrides: crate::Overrides,
    me: String,
    runners: &'a dyn Runners,
    control: &'a Control,
    owner: String,
    began_ns: i64,
    anchor_ns: i64,
    /// The first occurrence this scheduler has yet to handle.
    cursor: i64,
    /// The last occurrence of the schedule this scheduler handled.
    last_occ: Option<i64>,
    /// The last run this scheduler ran: (due, ended).
    last_run: Option<(i64, i64)>,
    /// When it last swept the campaign's open runs.
    swept_ns: i64,
    started: u64,
}

/// How often a waiting scheduler sweeps the open runs.
const SWEEP: Duration = Duration::from_secs(1);

impl<'a> Scheduler<'a> {
    /// A scheduler for `plan` (whose text is `text`, read with
    /// `overrides`), running as endpoint `me`; the plan and its overrides
    /// are kept in the archive.
    pub fn new(
        mut store: Store,
        plan: Plan,
        text: &str,
        overrides: &crate::Overrides,
        me: &str,
        runners: &'a dyn Runners,
        control: &'a Control,
    ) -> Result<Self, CampaignError> {
        if plan.endpoint(me).is_none() {
            return Err(crate::plan_where::bad(format!(
                "this host is to be endpoint '{me}', which the plan does not name"
            )));
        }
        let now = now_ns();
        store.put_campaign(&plan.name, text, overrides.to_json().as_deref(), now)?;
        let anchor_ns = store
            .campaigns()?
            .into_iter()
            .find(|c| c.name == plan.name)
            .map_or(now, |c| c.created_ns);
        Ok(Self {
            store,
            plan,
            overrides: overrides.clone(),
            me: me.to_string(),
            runners,
            control,
            owner: owner_name(),
            began_ns: now,
            anchor_ns,
            cursor: i64::MIN,
            last_occ: None,
            last_run: None,
            swept_ns: 0,
            started: 0,
        })
    }

    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Sweeps the campaign's runs still going (`shared_run::sweep`),
    /// saying which it settled; the number still open.
    fn sweep(&mut self, progress: &mut dyn FnMut(Progress)) -> Result<usize, CampaignError> {
        self.swept_ns = now_ns();
        let stale = crate::shared_run::stale_after(&self.plan);
        let mut open = 0;
        for run in self.store.running_runs(&self.plan.name)? {
            if self.store.run_steps(&run.id)?.is_empty() {
                // A run from before steps were claimed one by one, or one
                // whose maker died before claiming: its owner decides.
                if crate::shared_run::owner_gone(run.owner.as_deref(), run.heartbeat_ns, stale) {
                    let owner = run.owner.clone().unwrap_or_default();
                    let reason =
                        format!("found unfinished: its process ({owner}) ended before it did");
                    self.store.finish_run(
                        &run.id,
                        RunState::Interrupted,
                        Some(&reason),
                        now_ns(),
                    )?;
                    self.store.drop_leases(&owner)?;
                    progress(Progress::Recovered {
                        run_id: run.id,
                        scheduled_ns: run.scheduled_ns,
                    });
                } else {
                    open += 1;
                }
                continue;
            }
            let swept = crate::shared_run::sweep(&mut self.store, &self.plan, &run)?;
            match swept.settled {
                Some((state, reason)) => progress(Progress::Settled {
                    run_id: run.id,
                    scheduled_ns: run.scheduled_ns,
                    state,
                    reason,
                }),
                None if swept.pending.is_empty() => {}
                None => open += 1,
            }
        }
        Ok(open)
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

    /// Waits, when the schedule has ended, for the runs this scheduler
    /// took part in to be settled by whoever ends their last step.
    fn finish(&mut self, progress: &mut dyn FnMut(Progress)) -> Result<(), CampaignError> {
        let mut said = false;
        loop {
            let open: Vec<_> = self
                .store
                .running_runs(&self.plan.name)?
                .into_iter()
                .filter(|r| self.last_occ.is_some_and(|l| r.scheduled_ns <= l))
                .collect();
            if open.is_empty() || self.control.ended() {
                progress(Progress::Finished);
                return Ok(());
            }
            if !said {
                progress(Progress::Waiting {
                    detail: format!(
                        "waiting for other hosts to end their steps of {} run(s)",
                        open.len()
                    ),
                });
                said = true;
            }
            self.sweep(progress)?;
            std::thread::sleep(TICK);
        }
    }

    /// Runs the schedule until it ends, or the control stops or retires
    /// it.
    pub fn run(&mut self, progress: &mut dyn FnMut(Progress)) -> Result<(), CampaignError> {
        self.sweep(progress)?;
        // From the archive's latest run: itself while it is still going
        // (this host joins it), else the one after.
        self.cursor = match self.store.runs(&self.plan.name, 1)?.first() {
            Some(r) if r.state == RunState::Running => r.scheduled_ns,
            Some(r) => r.scheduled_ns.saturating_add(1),
            None => i64::MIN,
        };
        let mut announced = None;
        loop {
            if self.control.ended() {
                return Ok(());
            }
            if let Some((plan, text)) = self.control.take_reload() {
                let over = self.overrides.to_json();
                self.store
                    .put_campaign(&plan.name, &text, over.as_deref(), now_ns())?;
                self.plan = plan;
            }
            let name = self.plan.name.clone();
            let schedule = &self.plan.schedule;
            let Some(occ) = schedule.next_at_or_after(self.anchor_ns, self.cursor) else {
                return self.finish(progress);
            };
            let due = schedule.due_ns(&name, occ);
            let slip = schedule.slip.as_nanos() as i64;
            let now = now_ns();
            if now < due {
                if announced != Some(due) {
                    progress(Progress::Next { at_ns: due });
                    announced = Some(due);
                }
                if now - self.swept_ns > SWEEP.as_nanos() as i64 {
                    self.sweep(progress)?;
                }
                let wait = Duration::from_nanos((due - now) as u64).min(TICK);
                std::thread::sleep(wait);
                continue;
            }
            self.cursor = occ.saturating_add(1);
            self.last_occ = Some(occ);
            let existing = self.store.run_at(&name, occ)?;
            let paused = self.store.is_paused(&name)?;
            if paused || now > due.saturating_add(slip) {
                let reason = if paused {
                    "the campaign was paused".to_string()
                } else {
                    self.missed_reason(due)
                };
                let said = match &existing {
                    None => {
                        let id = uuid::Uuid::new_v4().to_string();
                        self.store.record_missed(&id, &name, occ, &reason)?
                    }
                    Some(r) if r.state == RunState::Running => {
                        let n = crate::shared_run::miss_mine(
                            &mut self.store,
                            &self.plan,
                            &r.id,
                            &self.me,
                            &reason,
                        )?;
                        n > 0
                    }
                    Some(_) => false,
                };
                if said {
                    progress(Progress::Missed {
                        scheduled_ns: occ,
                        reason,
                    });
                }
                continue;
            }
            let (id, made) = match existing {
                Some(r) if r.state == RunState::Running => (r.id, false),
                // Settled already (every step ended): nothing to join.
                Some(_) => continue,
                None => {
                    let id = uuid::Uuid::new_v4().to_string();
                    if !self.store.claim_run(&id, &name, occ, now, &self.owner)? {
                        // Another host made it a moment ago: join it.
                        self.cursor = occ;
                        continue;
                    }
                    (id, true)
                }
            };
            self.run_once(&id, occ, due, made, progress)?;
        }
    }

    /// Joins run `id` (made by this host if `made`), runs the steps it
    /// claims, and settles the run if its steps have all ended.
    fn run_once(
        &mut self,
        id: &str,
        occ: i64,
        due: i64,
        made: bool,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<(), CampaignError> {
        let mine =
            crate::shared_run::claim_steps(&mut self.store, &self.plan, id, &self.me, &self.owner)?;
        self.started += 1;
        progress(Progress::RunStarted {
            run_id: id.to_string(),
            scheduled_ns: occ,
            number: self.started,
            joined: !made,
            steps: mine.len(),
        });
        let names: Vec<String> = mine
            .iter()
            .map(|&i| self.plan.steps[i].name.clone())
            .collect();
        self.store.run_event(
            id,
            now_ns(),
            crate::RunEventKind::Started.name(),
            &crate::shared_run::joined_detail(due, &self.me, made, &names),
        )?;
        let stop = self.control.stop.clone();
        let holder = format!("{}#{id}", self.owner);
        let (mine_state, kept) = RunCtx {
            store: &mut self.store,
            plan: &self.plan,
            run_id: id,
            me: &self.me,
            owner: &self.owner,
            steps: &mine,
            runners: self.runners,
            stop: &stop,
            holder: &holder,
            progress,
        }
        .run()?;
        let ended = now_ns();
        self.last_run = Some((due, ended));
        let run = self.store.run_at(&self.plan.name, occ)?;
        let swept = match run {
            Some(r) if r.state == RunState::Running => {
                crate::shared_run::sweep(&mut self.store, &self.plan, &r)?
            }
            _ => Default::default(),
        };
        progress(Progress::RunEnded {
            run_id: id.to_string(),
            state: swept.settled.as_ref().map(|(s, _)| *s),
            mine: mine_state,
            kept,
            pending: swept.pending,
        });
        Ok(())
    }
}
