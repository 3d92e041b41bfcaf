//! What `sonde campaign status` shows of a campaign: its runs by state,
//! the last and next run, missed runs and why, and the latest errors —
//! all read from the archive, so it shows the daemon's campaigns too.

use crate::plan::Plan;
use crate::{now_ns, CampaignError};
use serde::Serialize;
use sonde_archive::{RunRow, RunState, Store};
use std::collections::BTreeMap;

/// One run, as status shows it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct RunLine {
    pub id: String,
    pub scheduled_ns: i64,
    pub state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A campaign's state.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct CampaignStatus {
    pub name: String,
    pub paused: bool,
    /// Runs per state: `done` (complete: every step kept its result),
    /// `partial` (some steps have none, each saying why), `failed`,
    /// `interrupted`, `missed`, `running`.
    pub runs: BTreeMap<String, i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last: Option<RunLine>,
    /// When the next run is due, if the schedule has one left.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_ns: Option<i64>,
    /// The latest missed runs, newest first, with their reasons.
    pub missed: Vec<RunLine>,
    /// The latest partial runs, newest first, each saying which steps
    /// have no result and why.
    pub partial: Vec<RunLine>,
    /// The latest failed steps: (run id, detail).
    pub errors: Vec<(String, String)>,
    /// The command line's overrides it runs with, as one line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overrides: Option<String>,
    /// Why the plan kept in the archive no longer reads, if it does not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan_error: Option<String>,
}

fn line(r: &RunRow) -> RunLine {
    RunLine {
        id: r.id.clone(),
        scheduled_ns: r.scheduled_ns,
        state: r.state.name().to_string(),
        reason: r.reason.clone(),
    }
}

/// The status of campaign `name` as the archive has it (`recent`: how
/// many recent runs to look through for missed runs and errors).
pub fn campaign_status(
    store: &mut Store,
    name: &str,
    recent: i64,
) -> Result<Option<CampaignStatus>, CampaignError> {
    let Some(row) = store.campaigns()?.into_iter().find(|c| c.name == name) else {
        return Ok(None);
    };
    let runs = store.runs(name, recent)?;
    let over = crate::Overrides::from_json(row.overrides.as_deref())?;
    let (next_ns, plan_error) = match Plan::parse(&row.plan, &over) {
        Ok(plan) => {
            let after = runs
                .first()
                .map_or(now_ns(), |r| r.scheduled_ns.saturating_add(1).max(now_ns()));
            let next = plan
                .schedule
                .next_at_or_after(row.created_ns, after)
                .map(|occ| plan.schedule.due_ns(name, occ));
            (next, None)
        }
        Err(e) => (None, Some(e.to_string())),
    };
    let mut errors = Vec::new();
    for r in runs.iter().filter(|r| r.state == RunState::Failed).take(5) {
        for (_, kind, detail) in store.run_events(&r.id)? {
            if crate::RunEventKind::from_name(&kind).is_some_and(crate::RunEventKind::is_failure) {
                errors.push((r.id.clone(), detail));
            }
        }
    }
    Ok(Some(CampaignStatus {
        name: name.to_string(),
        paused: row.paused,
        runs: store.run_counts(name)?.into_iter().collect(),
        last: runs.iter().find(|r| r.state != RunState::Missed).map(line),
        next_ns,
        missed: runs
            .iter()
            .filter(|r| r.state == RunState::Missed)
            .take(10)
            .map(line)
            .collect(),
        partial: runs
            .iter()
            .filter(|r| r.state == RunState::Partial)
            .take(10)
            .map(line)
            .collect(),
        errors,
        overrides: (!over.is_empty()).then(|| over.describe()),
        plan_error,
    }))
}
