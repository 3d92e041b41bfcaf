//! A run's steps as the archive keeps them: one row per step of the plan,
//! made when a host claims the step (unique by run and step, so no step
//! runs twice however many hosts share the campaign), ended with its
//! outcome, or made `missed` with why when nobody claimed it in time.
//! A run ends when every step has ended; its state follows from theirs.

use crate::sql::Value;
use crate::{ArchiveError, Store};

/// Where one step of a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StepState {
    /// Claimed by a host that has not yet started it.
    Claimed,
    Running,
    /// Its result was kept.
    Done,
    /// It ran and gave no result.
    Failed,
    /// The agent's gate did not admit it.
    Refused,
    /// Its path stayed busy for longer than the run could wait.
    Skipped,
    /// Nobody claimed it in time (`detail` says why).
    Missed,
    /// Stopped, or its host's process ended before it did.
    Interrupted,
}

impl StepState {
    pub const ALL: [StepState; 8] = [
        StepState::Claimed,
        StepState::Running,
        StepState::Done,
        StepState::Failed,
        StepState::Refused,
        StepState::Skipped,
        StepState::Missed,
        StepState::Interrupted,
    ];

    pub fn name(self) -> &'static str {
        match self {
            StepState::Claimed => "claimed",
            StepState::Running => "running",
            StepState::Done => "done",
            StepState::Failed => "failed",
            StepState::Refused => "refused",
            StepState::Skipped => "skipped",
            StepState::Missed => "missed",
            StepState::Interrupted => "interrupted",
        }
    }

    pub fn parse(s: &str) -> Option<StepState> {
        StepState::ALL.into_iter().find(|k| k.name() == s)
    }

    /// Whether the step has ended (it will not change again).
    pub fn ended(self) -> bool {
        !matches!(self, StepState::Claimed | StepState::Running)
    }
}

/// One step of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepRow {
    pub run_id: String,
    /// Its place in the plan, from 0.
    pub step: i64,
    pub name: String,
    /// The endpoint it runs from.
    pub endpoint: String,
    /// The process that claimed it (`host:pid`); none when missed.
    pub holder: Option<String>,
    pub state: StepState,
    pub detail: Option<String>,
    pub heartbeat_ns: Option<i64>,
    pub ended_ns: Option<i64>,
}

fn text(s: &str) -> Value {
    Value::Text(Some(s.to_string()))
}

fn int(i: i64) -> Value {
    Value::Int(Some(i))
}

fn step_row(r: &[Value]) -> Option<StepRow> {
    Some(StepRow {
        run_id: r.first()?.text()?.to_string(),
        step: r.get(1)?.int()?,
        name: r.get(2)?.text()?.to_string(),
        endpoint: r.get(3)?.text()?.to_string(),
        holder: r.get(4)?.text().map(str::to_string),
        state: StepState::parse(r.get(5)?.text()?)?,
        detail: r.get(6)?.text().map(str::to_string),
        heartbeat_ns: r.get(7)?.int(),
        ended_ns: r.get(8)?.int(),
    })
}

/// A step as a host claims it or records it missed.
#[derive(Debug, Clone, Copy)]
pub struct StepKey<'a> {
    pub run_id: &'a str,
    pub step: i64,
    pub name: &'a str,
    pub endpoint: &'a str,
}

impl Store {
    /// Claims step `key` for `holder`. False when it has a row already
    /// (claimed by another host, or missed): a step never runs twice.
    pub fn claim_step(
        &mut self,
        key: StepKey<'_>,
        holder: &str,
        now_ns: i64,
    ) -> Result<bool, ArchiveError> {
        let n = self.backend.sql().execute(
            "INSERT INTO run_steps (run_id, step, name, endpoint, holder, state, heartbeat_ns) \
             VALUES ($1, $2, $3, $4, $5, 'claimed', $6) ON CONFLICT DO NOTHING",
            &[
                text(key.run_id),
                int(key.step),
                text(key.name),
                text(key.endpoint),
                text(holder),
                int(now_ns),
            ],
        )?;
        Ok(n > 0)
    }

    /// Records step `key` missed, and why, unless somebody has claimed it.
    /// True when it was recorded.
    pub fn miss_step(
        &mut self,
        key: StepKey<'_>,
        reason: &str,
        now_ns: i64,
    ) -> Result<bool, ArchiveError> {
        let n = self.backend.sql().execute(
            "INSERT INTO run_steps (run_id, step, name, endpoint, state, detail, ended_ns) \
             VALUES ($1, $2, $3, $4, 'missed', $5, $6) ON CONFLICT DO NOTHING",
            &[
                text(key.run_id),
                int(key.step),
                text(key.name),
                text(key.endpoint),
                text(reason),
                int(now_ns),
            ],
        )?;
        Ok(n > 0)
    }

    /// Moves step `step` of run `run_id` to `state` (with what it gave or
    /// why), if it has not ended already.
    pub fn set_step(
        &mut self,
        run_id: &str,
        step: i64,
        state: StepState,
        detail: Option<&str>,
        now_ns: i64,
    ) -> Result<(), ArchiveError> {
        let ended = state.ended().then_some(now_ns);
        self.backend.sql().execute(
            "UPDATE run_steps SET state = $3, detail = COALESCE($4, detail), ended_ns = $5, \
             heartbeat_ns = $6 WHERE run_id = $1 AND step = $2 AND state IN ('claimed', \
             'running')",
            &[
                text(run_id),
                int(step),
                text(state.name()),
                Value::Text(detail.map(str::to_string)),
                Value::Int(ended),
                int(now_ns),
            ],
        )?;
        Ok(())
    }

    /// Notes that `holder`, which holds steps of run `run_id`, is alive.
    pub fn step_heartbeat(
        &mut self,
        run_id: &str,
        holder: &str,
        now_ns: i64,
    ) -> Result<(), ArchiveError> {
        self.backend.sql().execute(
            "UPDATE run_steps SET heartbeat_ns = $3 WHERE run_id = $1 AND holder = $2 AND state \
             IN ('claimed', 'running')",
            &[text(run_id), text(holder), int(now_ns)],
        )?;
        Ok(())
    }

    /// Run `run_id`'s steps that have a row, in the plan's order.
    pub fn run_steps(&mut self, run_id: &str) -> Result<Vec<StepRow>, ArchiveError> {
        let rows = self.backend.sql().rows(
            "SELECT run_id, step, name, endpoint, holder, state, detail, heartbeat_ns, ended_ns \
             FROM run_steps WHERE run_id = $1 ORDER BY step",
            &[text(run_id)],
        )?;
        Ok(rows.iter().filter_map(|r| step_row(r)).collect())
    }

    /// Ends run `id` as `state` (with why), if it is still running: the
    /// first host to see all its steps ended settles it. True when this
    /// call did.
    pub fn settle_run(
        &mut self,
        id: &str,
        state: crate::RunState,
        reason: Option<&str>,
        now_ns: i64,
    ) -> Result<bool, ArchiveError> {
        let n = self.backend.sql().execute(
            "UPDATE runs SET state = $2, reason = $3, ended_ns = $4 WHERE id = $1 AND state = \
             'running'",
            &[
                text(id),
                text(state.name()),
                Value::Text(reason.map(str::to_string)),
                int(now_ns),
            ],
        )?;
        Ok(n > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_reads_back_from_its_name() {
        for s in StepState::ALL {
            assert_eq!(StepState::parse(s.name()), Some(s));
        }
        assert_eq!(StepState::parse("exploded"), None);
        assert!(!StepState::Claimed.ended() && StepState::Missed.ended());
    }
}
