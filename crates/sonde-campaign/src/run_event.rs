//! [`RunEventKind`]: what a campaign run records as it goes, one kind per
//! thing that happens. The archive keeps each as its name (`step_done`);
//! everything else speaks the type.

use std::fmt;

/// The kind of one run event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunEventKind {
    /// A host began or joined the run (detail: when it was due, as which
    /// endpoint, the steps it leads).
    Started,
    StepStarted,
    /// The step's result was kept.
    StepDone,
    /// The step ran and gave no result.
    StepFailed,
    /// Its path stayed busy for longer than the run could wait.
    StepSkipped,
    /// Nobody claimed the step within the run's slip (detail: who should
    /// have, and why it did not).
    StepMissed,
    /// The agent's gate did not admit the step (detail: the rule).
    StepRefused,
    /// The step waits for its path.
    Waiting,
    /// The run was stopped, or found unfinished.
    Interrupted,
}

impl RunEventKind {
    pub const ALL: [RunEventKind; 9] = [
        RunEventKind::Started,
        RunEventKind::StepStarted,
        RunEventKind::StepDone,
        RunEventKind::StepFailed,
        RunEventKind::StepSkipped,
        RunEventKind::StepMissed,
        RunEventKind::StepRefused,
        RunEventKind::Waiting,
        RunEventKind::Interrupted,
    ];

    /// Its name in the archive and the API.
    pub fn name(self) -> &'static str {
        match self {
            RunEventKind::Started => "started",
            RunEventKind::StepStarted => "step_started",
            RunEventKind::StepDone => "step_done",
            RunEventKind::StepFailed => "step_failed",
            RunEventKind::StepSkipped => "step_skipped",
            RunEventKind::StepMissed => "step_missed",
            RunEventKind::StepRefused => "step_refused",
            RunEventKind::Waiting => "waiting",
            RunEventKind::Interrupted => "interrupted",
        }
    }

    /// The kind named `name`, as the archive keeps it.
    pub fn from_name(name: &str) -> Option<RunEventKind> {
        RunEventKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether a step of this kind counts against the run (it ends
    /// failed).
    pub fn is_failure(self) -> bool {
        matches!(self, RunEventKind::StepFailed | RunEventKind::StepRefused)
    }
}

impl fmt::Display for RunEventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_reads_back_from_its_name() {
        for k in RunEventKind::ALL {
            assert_eq!(RunEventKind::from_name(k.name()), Some(k));
        }
        assert_eq!(RunEventKind::from_name("step_exploded"), None);
    }
}
