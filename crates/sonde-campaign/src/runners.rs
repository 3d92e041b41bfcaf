//! What a scheduler needs from the host it runs on: where its steps'
//! tests run ([`Runners`]), and whom it tells what it does ([`Progress`]).

use sonde_archive::RunState;
use sonde_model::host_port::HostPortError;
use sonde_run::Runner;

/// Where a campaign's tests run from.
pub trait Runners: Send + Sync {
    /// This host.
    fn local(&self) -> Box<dyn Runner>;
    /// Another agent (`HOST[:PORT]`), as third-party tests.
    fn agent(&self, agent: &str) -> Result<Box<dyn Runner>, HostPortError>;
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
        /// Runs this scheduler has taken part in, this one included.
        number: u64,
        /// Another host made the run; this one joined it.
        joined: bool,
        /// How many of its steps this host claimed.
        steps: usize,
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
    /// This host's steps of a run ended.
    RunEnded {
        run_id: String,
        /// The run's state, if this host settled it (none: another
        /// host's steps are still going, or another host settled it).
        state: Option<RunState>,
        /// How this host's own steps went.
        mine: RunState,
        kept: usize,
        /// Steps still going on other hosts.
        pending: Vec<String>,
    },
    /// A run whose last step another host ended, or nobody claimed, was
    /// settled by this scheduler.
    Settled {
        run_id: String,
        scheduled_ns: i64,
        state: RunState,
        reason: Option<String>,
    },
    /// The schedule has no occurrence left.
    Finished,
}
