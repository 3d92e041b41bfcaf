//! sonde's campaigns: a battery of tests and methods on a schedule,
//! unattended and crash-safe (docs/campaigns.md).
//!
//! - [`plan`]: the TOML plan: endpoints, steps, labels, schedule;
//!   [`WrittenPlan`]: its keys as written, for whoever writes one again.
//! - [`schedule`]: when runs are due (ISO 8601 `repeat` or `cron`, with
//!   slip and spread).
//! - [`resource`]: resource classes, so throughput tests on one path
//!   never overlap.
//! - [`scheduler`]: the loop that makes or joins due runs in the archive
//!   (a run is never started twice, a step never run twice, however many
//!   hosts share the plan), records missed runs with their reason, runs
//!   the steps this host leads and keeps every result as it finishes.
//! - [`Overrides`]: what the command line changes of a plan, kept beside
//!   it.
//! - [`status`]: what `sonde campaign status` shows.
//!
//! The scheduler's state lives in the archive, not in memory: killed and
//! restarted, it finds the run it was in and marks it interrupted, and
//! goes on from now. This crate opens no socket: tests go through a
//! [`Runner`](sonde_run::Runner).

mod overrides;
pub mod plan;
mod plan_file;
mod plan_where;
pub mod resource;
mod run;
pub mod run_event;
pub mod runners;
pub mod schedule;
pub mod scheduler;
mod shared_run;
pub mod status;
mod written;

pub use overrides::{Overrides, Quick};
pub use plan::{Endpoint, Plan, Step, StepBody};
pub use plan_file::{read_plan, which_endpoint, HostRunners, PlanFileError};
pub use plan_where::PlanPlace;
pub use resource::ResourceClass;
pub use run_event::RunEventKind;
pub use runners::{Progress, Runners};
pub use schedule::Schedule;
pub use scheduler::{Control, Scheduler};
pub use sonde_model::clock::{now_ns, rfc3339};
pub use status::{campaign_status, CampaignStatus};
pub use written::{WrittenPlan, WrittenStep};

/// Why a campaign could not be read or run.
#[derive(Debug, thiserror::Error)]
pub enum CampaignError {
    /// The plan breaks a rule: what it is about (`place`: a step, an
    /// endpoint, the schedule, the plan), its line in the text once
    /// found, and what is wrong.
    #[error("plan: {}{place}{message}", line.map(|n| format!("line {n}: ")).unwrap_or_default())]
    Plan {
        place: PlanPlace,
        line: Option<usize>,
        message: String,
    },
    #[error(transparent)]
    Archive(#[from] sonde_archive::ArchiveError),
}

/// The first line of every plan written through the HTTP API: the agent
/// runs such a plan as a request from the API (no files, its limits, only
/// consented targets), whatever else its text says.
pub const API_MARK: &str = "# api-campaign ";
