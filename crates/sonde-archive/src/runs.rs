//! The scheduler's state, kept in the archive so that it outlives the
//! process: campaigns and their plans, runs (claimed once, by a unique
//! key on the campaign and the scheduled time), the events of each run,
//! and leases on paths that keep throughput tests from overlapping even
//! between two processes sharing one archive.

use crate::sql::Value;
use crate::{ArchiveError, Store};

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunState {
    /// Started, not yet ended (or its process died: see `owner`).
    Running,
    /// Every step ran and kept its result (complete).
    Done,
    /// Every step ended, and one or more has no result because nobody
    /// claimed it in time or its path stayed busy (its step says why).
    Partial,
    /// It ran, and at least one step failed (the events say which).
    Failed,
    /// Stopped part-way: by a signal, or found unfinished after a crash.
    Interrupted,
    /// Never started: it could not start within its slip (`reason`).
    Missed,
}

impl RunState {
    pub fn name(self) -> &'static str {
        match self {
            RunState::Running => "running",
            RunState::Done => "done",
            RunState::Partial => "partial",
            RunState::Failed => "failed",
            RunState::Interrupted => "interrupted",
            RunState::Missed => "missed",
        }
    }

    pub fn parse(s: &str) -> Option<RunState> {
        [
            RunState::Running,
            RunState::Done,
            RunState::Partial,
            RunState::Failed,
            RunState::Interrupted,
            RunState::Missed,
        ]
        .into_iter()
        .find(|r| r.name() == s)
    }
}

/// A campaign as the archive keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CampaignRow {
    pub name: String,
    /// The plan's text, as it was last loaded.
    pub plan: String,
    pub created_ns: i64,
    pub paused: bool,
    /// The command line's overrides of the plan (`--scale`, `--repeat`,
    /// …) as JSON, kept beside its text rather than written into it.
    pub overrides: Option<String>,
}

/// One run of a campaign.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRow {
    pub id: String,
    pub campaign: String,
    /// When the schedule wanted it.
    pub scheduled_ns: i64,
    pub started_ns: Option<i64>,
    pub ended_ns: Option<i64>,
    pub state: RunState,
    pub reason: Option<String>,
    /// Which process runs it (`host:pid`).
    pub owner: Option<String>,
    /// When its owner last said it was alive.
    pub heartbeat_ns: Option<i64>,
}

/// A path held for a throughput test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub path: String,
    pub holder: String,
    pub expires_ns: i64,
}

fn text(s: &str) -> Value {
    Value::Text(Some(s.to_string()))
}

fn int(i: i64) -> Value {
    Value::Int(Some(i))
}

const RUN_COLUMNS: &str =
    "id, campaign, scheduled_ns, started_ns, ended_ns, state, reason, owner, heartbeat_ns";

fn run_row(r: &[Value]) -> Option<RunRow> {
    Some(RunRow {
        id: r.first()?.text()?.to_string(),
        campaign: r.get(1)?.text()?.to_string(),
        scheduled_ns: r.get(2)?.int()?,
        started_ns: r.get(3)?.int(),
        ended_ns: r.get(4)?.int(),
        state: RunState::parse(r.get(5)?.text()?)?,
        reason: r.get(6)?.text().map(str::to_string),
        owner: r.get(7)?.text().map(str::to_string),
        heartbeat_ns: r.get(8)?.int(),
    })
}

impl Store {
    /// Keeps campaign `name` with its plan's text and the overrides it
    /// runs with (replacing older ones; its runs stay).
    pub fn put_campaign(
        &mut self,
        name: &str,
        plan: &str,
        overrides: Option<&str>,
        now_ns: i64,
    ) -> Result<(), ArchiveError> {
        self.backend.sql().execute(
            "INSERT INTO campaigns (name, plan, created_ns, paused, overrides) VALUES ($1, $2, \
             $3, FALSE, $4) ON CONFLICT (name) DO UPDATE SET plan = excluded.plan, overrides = \
             excluded.overrides",
            &[
                text(name),
                text(plan),
                int(now_ns),
                Value::Text(overrides.map(str::to_string)),
            ],
        )?;
        Ok(())
    }

    /// Pauses or resumes campaign `name`: a paused campaign's schedulers
    /// record its runs as missed. False when there is no such campaign.
    pub fn set_paused(&mut self, name: &str, paused: bool) -> Result<bool, ArchiveError> {
        let n = self.backend.sql().execute(
            "UPDATE campaigns SET paused = $2 WHERE name = $1",
            &[text(name), Value::Bool(paused)],
        )?;
        Ok(n > 0)
    }

    /// Whether campaign `name` is paused (false when unknown).
    pub fn is_paused(&mut self, name: &str) -> Result<bool, ArchiveError> {
        let rows = self.backend.sql().rows(
            "SELECT paused FROM campaigns WHERE name = $1",
            &[text(name)],
        )?;
        Ok(rows
            .first()
            .and_then(|r| r.first()?.int())
            .is_some_and(|p| p != 0))
    }

    /// Every campaign, by name.
    pub fn campaigns(&mut self) -> Result<Vec<CampaignRow>, ArchiveError> {
        let rows = self.backend.sql().rows(
            "SELECT name, plan, created_ns, paused, overrides FROM campaigns ORDER BY name",
            &[],
        )?;
        Ok(rows
            .iter()
            .filter_map(|r| {
                Some(CampaignRow {
                    name: r.first()?.text()?.to_string(),
                    plan: r.get(1)?.text()?.to_string(),
                    created_ns: r.get(2)?.int()?,
                    paused: r.get(3)?.int()? != 0,
                    overrides: r.get(4)?.text().map(str::to_string),
                })
            })
            .collect())
    }

    /// Claims the run of `campaign` scheduled at `scheduled_ns` for
    /// `owner`, as running. False when that run exists already (started
    /// or recorded by anyone): a run is never started twice.
    pub fn claim_run(
        &mut self,
        id: &str,
        campaign: &str,
        scheduled_ns: i64,
        now_ns: i64,
        owner: &str,
    ) -> Result<bool, ArchiveError> {
        let n = self.backend.sql().execute(
            "INSERT INTO runs (id, campaign, scheduled_ns, started_ns, state, owner, heartbeat_ns) \
             VALUES ($1, $2, $3, $4, 'running', $5, $4) ON CONFLICT DO NOTHING",
            &[
                text(id),
                text(campaign),
                int(scheduled_ns),
                int(now_ns),
                text(owner),
            ],
        )?;
        Ok(n > 0)
    }

    /// Records that the run of `campaign` scheduled at `scheduled_ns`
    /// never started, and why. False when that run exists already.
    pub fn record_missed(
        &mut self,
        id: &str,
        campaign: &str,
        scheduled_ns: i64,
        reason: &str,
    ) -> Result<bool, ArchiveError> {
        let n = self.backend.sql().execute(
            "INSERT INTO runs (id, campaign, scheduled_ns, state, reason) VALUES ($1, $2, $3, \
             'missed', $4) ON CONFLICT DO NOTHING",
            &[text(id), text(campaign), int(scheduled_ns), text(reason)],
        )?;
        Ok(n > 0)
    }

    /// Ends run `id` as `state` (with why, if not done).
    pub fn finish_run(
        &mut self,
        id: &str,
        state: RunState,
        reason: Option<&str>,
        now_ns: i64,
    ) -> Result<(), ArchiveError> {
        self.backend.sql().execute(
            "UPDATE runs SET state = $2, reason = $3, ended_ns = $4 WHERE id = $1",
            &[
                text(id),
                text(state.name()),
                Value::Text(reason.map(str::to_string)),
                int(now_ns),
            ],
        )?;
        Ok(())
    }

    /// Notes that run `id`'s owner is alive at `now_ns`.
    pub fn heartbeat(&mut self, id: &str, now_ns: i64) -> Result<(), ArchiveError> {
        self.backend.sql().execute(
            "UPDATE runs SET heartbeat_ns = $2 WHERE id = $1",
            &[text(id), int(now_ns)],
        )?;
        Ok(())
    }

    /// Adds an event to run `id`'s story.
    pub fn run_event(
        &mut self,
        run_id: &str,
        at_ns: i64,
        kind: &str,
        detail: &str,
    ) -> Result<(), ArchiveError> {
        self.backend.sql().execute(
            "INSERT INTO run_events (run_id, at_ns, kind, detail) VALUES ($1, $2, $3, $4)",
            &[text(run_id), int(at_ns), text(kind), text(detail)],
        )?;
        Ok(())
    }

    /// Run `id`'s events, oldest first: (time, kind, detail).
    pub fn run_events(&mut self, run_id: &str) -> Result<Vec<(i64, String, String)>, ArchiveError> {
        self.run_events_upto(run_id, i64::MAX)
    }

    /// The first `limit` of the run's events, in the order they happened.
    pub fn run_events_upto(
        &mut self,
        run_id: &str,
        limit: i64,
    ) -> Result<Vec<(i64, String, String)>, ArchiveError> {
        let rows = self.backend.sql().rows(
            "SELECT at_ns, kind, detail FROM run_events WHERE run_id = $1 ORDER BY at_ns LIMIT $2",
            &[text(run_id), int(limit.max(1))],
        )?;
        Ok(rows
            .iter()
            .filter_map(|r| {
                Some((
                    r.first()?.int()?,
                    r.get(1)?.text()?.to_string(),
                    r.get(2)?.text().unwrap_or("").to_string(),
                ))
            })
            .collect())
    }

    /// `campaign`'s runs, latest scheduled first, at most `limit`.
    pub fn runs(&mut self, campaign: &str, limit: i64) -> Result<Vec<RunRow>, ArchiveError> {
        let rows = self.backend.sql().rows(
            &format!(
                "SELECT {RUN_COLUMNS} FROM runs WHERE campaign = $1 ORDER BY scheduled_ns DESC \
                 LIMIT $2"
            ),
            &[text(campaign), int(limit.max(1))],
        )?;
        Ok(rows.iter().filter_map(|r| run_row(r)).collect())
    }

    /// The run of `campaign` scheduled at `scheduled_ns`, if anyone has
    /// claimed or recorded it.
    pub fn run_at(
        &mut self,
        campaign: &str,
        scheduled_ns: i64,
    ) -> Result<Option<RunRow>, ArchiveError> {
        let rows = self.backend.sql().rows(
            &format!("SELECT {RUN_COLUMNS} FROM runs WHERE campaign = $1 AND scheduled_ns = $2"),
            &[text(campaign), int(scheduled_ns)],
        )?;
        Ok(rows.first().and_then(|r| run_row(r)))
    }

    /// `campaign`'s runs still marked running.
    pub fn running_runs(&mut self, campaign: &str) -> Result<Vec<RunRow>, ArchiveError> {
        let rows = self.backend.sql().rows(
            &format!(
                "SELECT {RUN_COLUMNS} FROM runs WHERE campaign = $1 AND state = 'running' ORDER \
                 BY scheduled_ns"
            ),
            &[text(campaign)],
        )?;
        Ok(rows.iter().filter_map(|r| run_row(r)).collect())
    }

    /// How many runs of `campaign` are in each state: (state, count).
    pub fn run_counts(&mut self, campaign: &str) -> Result<Vec<(String, i64)>, ArchiveError> {
        let rows = self.backend.sql().rows(
            "SELECT state, COUNT(*) FROM runs WHERE campaign = $1 GROUP BY state ORDER BY state",
            &[text(campaign)],
        )?;
        Ok(rows
            .iter()
            .filter_map(|r| Some((r.first()?.text()?.to_string(), r.get(1)?.int()?)))
            .collect())
    }

    /// Takes `path` for `holder` until `expires_ns`, if nobody else holds
    /// it (a lease past its expiry is nobody's). True when taken (or
    /// renewed).
    pub fn acquire_lease(
        &mut self,
        path: &str,
        holder: &str,
        now_ns: i64,
        expires_ns: i64,
    ) -> Result<bool, ArchiveError> {
        let mut taken = false;
        self.backend.transaction(&mut |tx| {
            tx.execute(
                "DELETE FROM path_leases WHERE path = $1 AND (expires_ns < $2 OR holder = $3)",
                &[text(path), int(now_ns), text(holder)],
            )?;
            taken = tx.execute(
                "INSERT INTO path_leases (path, holder, expires_ns) VALUES ($1, $2, $3) ON \
                 CONFLICT (path) DO NOTHING",
                &[text(path), text(holder), int(expires_ns)],
            )? > 0;
            Ok(())
        })?;
        Ok(taken)
    }

    /// Gives `path` back, if `holder` holds it.
    pub fn release_lease(&mut self, path: &str, holder: &str) -> Result<(), ArchiveError> {
        self.backend.sql().execute(
            "DELETE FROM path_leases WHERE path = $1 AND holder = $2",
            &[text(path), text(holder)],
        )?;
        Ok(())
    }

    /// Drops every lease of process `owner` (found dead): those it holds
    /// as `owner` or as `owner#…`.
    pub fn drop_leases(&mut self, owner: &str) -> Result<(), ArchiveError> {
        self.backend.sql().execute(
            "DELETE FROM path_leases WHERE holder = $1 OR holder LIKE $2",
            &[text(owner), text(&format!("{owner}#%"))],
        )?;
        Ok(())
    }

    /// Who holds `path`, if anyone does now.
    pub fn lease(&mut self, path: &str, now_ns: i64) -> Result<Option<Lease>, ArchiveError> {
        let rows = self.backend.sql().rows(
            "SELECT path, holder, expires_ns FROM path_leases WHERE path = $1 AND expires_ns >= $2",
            &[text(path), int(now_ns)],
        )?;
        Ok(rows.first().and_then(|r| {
            Some(Lease {
                path: r.first()?.text()?.to_string(),
                holder: r.get(1)?.text()?.to_string(),
                expires_ns: r.get(2)?.int()?,
            })
        }))
    }
}
