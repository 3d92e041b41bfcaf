//! One run shared by every host that runs the plan on one archive (a
//! battery run from both ends, docs/campaigns.md).
//!
//! - Each host *joins* the run due now (the first one makes it) and
//!   claims the steps it may lead: its own endpoint's, and those of an
//!   endpoint with an `agent` (as third-party tests). A step is claimed
//!   once, by a unique row per run and step, whichever host comes first.
//! - A step nobody claimed within the run's slip is recorded `missed`,
//!   with which endpoint should have led it and why it did not.
//! - A step whose host's process is gone is recorded `interrupted`.
//! - When every step has ended, the first host to see it settles the run:
//!   `done` (every step kept its result), `partial` (some have none, each
//!   saying why), `failed`, `interrupted`, or `missed` (no step ran).

use crate::plan::{Plan, Step, StepBody};
use crate::{now_ns, rfc3339, CampaignError, RunEventKind};
use sonde_archive::{RunRow, RunState, StepKey, StepRow, StepState, Store};
use std::time::Duration;

/// This process, as runs, steps and leases name their holder: `host:pid`.
pub fn owner_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".into());
    format!("{host}:{}", std::process::id())
}

/// Whether the process `owner` names is known to be gone: on this host,
/// no such pid; elsewhere, no heartbeat for `stale`.
pub(crate) fn owner_gone(owner: Option<&str>, heartbeat_ns: Option<i64>, stale: Duration) -> bool {
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

/// How long a holder may stay silent before it counts as gone.
pub(crate) fn stale_after(plan: &Plan) -> Duration {
    plan.run_length() + Duration::from_secs(300)
}

/// Whether a scheduler running as endpoint `me` may lead `step`: its own
/// endpoint's steps, and those of an endpoint with an agent (except a
/// ping, which runs only from the host that sends it).
pub(crate) fn can_lead(plan: &Plan, me: &str, step: &Step) -> bool {
    if step.from == me {
        return true;
    }
    let ping = matches!(step.body, StepBody::Test(sonde_model::TestSpec::Ping(_)));
    !ping && plan.endpoint(&step.from).is_some_and(|e| e.agent.is_some())
}

fn key<'a>(run_id: &'a str, i: usize, step: &'a Step) -> StepKey<'a> {
    StepKey {
        run_id,
        step: i as i64,
        name: &step.name,
        endpoint: &step.from,
    }
}

/// Claims for `holder` every step of the run that `me` may lead and
/// nobody has claimed: their places in the plan.
pub(crate) fn claim_steps(
    store: &mut Store,
    plan: &Plan,
    run_id: &str,
    me: &str,
    holder: &str,
) -> Result<Vec<usize>, CampaignError> {
    let mut mine = Vec::new();
    for (i, step) in plan.steps.iter().enumerate() {
        if can_lead(plan, me, step) && store.claim_step(key(run_id, i, step), holder, now_ns())? {
            mine.push(i);
        }
    }
    Ok(mine)
}

/// Records the steps `me` leads in the run as missed, for `reason` (this
/// host came too late to it); how many it recorded.
pub(crate) fn miss_mine(
    store: &mut Store,
    plan: &Plan,
    run_id: &str,
    me: &str,
    reason: &str,
) -> Result<usize, CampaignError> {
    let mut n = 0;
    for (i, step) in plan.steps.iter().enumerate() {
        if step.from == me && store.miss_step(key(run_id, i, step), reason, now_ns())? {
            n += 1;
        }
    }
    Ok(n)
}

/// Why nobody led `step`: who should have, and that it did not come.
fn unclaimed_reason(plan: &Plan, step: &Step) -> String {
    let slip = sonde_model::format_duration(plan.schedule.slip);
    let agent = plan.endpoint(&step.from).and_then(|e| e.agent.as_deref());
    match agent {
        Some(a) if can_lead(plan, "", step) => format!(
            "no scheduler as endpoint {} and no host through its agent {a} claimed it within \
             the slip ({slip})",
            step.from
        ),
        _ => format!(
            "no scheduler as endpoint {} joined the run within its slip ({slip}); only it \
             runs this step",
            step.from
        ),
    }
}

/// What a settled run is, from its steps.
fn state_of(plan: &Plan, steps: &[StepRow]) -> (RunState, Option<String>) {
    let count = |s: StepState| steps.iter().filter(|r| r.state == s).count();
    let without: Vec<String> = steps
        .iter()
        .filter(|r| r.state != StepState::Done)
        .map(|r| {
            format!(
                "{} ({}: {})",
                r.name,
                r.state.name(),
                r.detail.as_deref().unwrap_or("")
            )
        })
        .collect();
    let why = || Some(format!("steps without a result: {}", without.join("; ")));
    if count(StepState::Missed) == plan.steps.len() {
        let reason = steps.first().and_then(|r| r.detail.clone());
        (RunState::Missed, reason)
    } else if count(StepState::Interrupted) > 0 {
        (RunState::Interrupted, why())
    } else if count(StepState::Failed) + count(StepState::Refused) > 0 {
        (RunState::Failed, why())
    } else if without.is_empty() {
        (RunState::Done, None)
    } else {
        (RunState::Partial, why())
    }
}

/// What a sweep of one run found.
#[derive(Debug, Default)]
pub(crate) struct Swept {
    /// The run's state, when this sweep settled it.
    pub settled: Option<(RunState, Option<String>)>,
    /// Steps still going on other hosts: their names.
    pub pending: Vec<String>,
}

/// Looks at a running run: steps of gone holders become interrupted,
/// steps nobody claimed by the end of the slip become missed, and when
/// every step has ended the run is settled with the state they give.
pub(crate) fn sweep(store: &mut Store, plan: &Plan, run: &RunRow) -> Result<Swept, CampaignError> {
    let stale = stale_after(plan);
    let now = now_ns();
    for s in store.run_steps(&run.id)? {
        if !s.state.ended() && owner_gone(s.holder.as_deref(), s.heartbeat_ns, stale) {
            let holder = s.holder.clone().unwrap_or_default();
            let why = format!("its process ({holder}) ended before it did");
            store.set_step(&run.id, s.step, StepState::Interrupted, Some(&why), now)?;
            store.run_event(
                &run.id,
                now,
                RunEventKind::Interrupted.name(),
                &format!("{}: {why}", s.name),
            )?;
            store.drop_leases(&holder)?;
        }
    }
    let due = plan.schedule.due_ns(&plan.name, run.scheduled_ns);
    let deadline = due.saturating_add(plan.schedule.slip.as_nanos() as i64);
    if now > deadline {
        for (i, step) in plan.steps.iter().enumerate() {
            let reason = unclaimed_reason(plan, step);
            if store.miss_step(key(&run.id, i, step), &reason, now)? {
                store.run_event(
                    &run.id,
                    now,
                    RunEventKind::StepMissed.name(),
                    &format!("{}: {reason}", step.name),
                )?;
            }
        }
    }
    let steps = store.run_steps(&run.id)?;
    let pending: Vec<String> = plan
        .steps
        .iter()
        .enumerate()
        .filter(|(i, _)| {
            steps
                .iter()
                .find(|r| r.step == *i as i64)
                .is_none_or(|r| !r.state.ended())
        })
        .map(|(_, s)| s.name.clone())
        .collect();
    if !pending.is_empty() {
        return Ok(Swept {
            settled: None,
            pending,
        });
    }
    let (state, reason) = state_of(plan, &steps);
    let settled = store
        .settle_run(&run.id, state, reason.as_deref(), now)?
        .then_some((state, reason));
    Ok(Swept { settled, pending })
}

/// The line a run's story starts with on this host.
pub(crate) fn joined_detail(due: i64, me: &str, made: bool, steps: &[String]) -> String {
    let led = if steps.is_empty() {
        "no step left to lead".to_string()
    } else {
        format!("leads {}", steps.join(", "))
    };
    let how = if made { "started" } else { "joined" };
    format!("{how} as endpoint {me}, due {}: {led}", rfc3339(due))
}
