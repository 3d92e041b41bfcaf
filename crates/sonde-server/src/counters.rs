//! What the agent has done since it started, for `/metrics`: tests run,
//! tests refused (by the limit or rule that refused them), archive write
//! errors, and results waiting to be written. Shared by the control
//! port, the HTTP API and the campaign schedulers.

use sonde_wire::Refusal;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

#[derive(Debug, Default)]
pub struct AgentCounters {
    tests_run: AtomicU64,
    refused: Mutex<BTreeMap<String, u64>>,
    archive_errors: AtomicU64,
    backlog: AtomicU64,
}

/// The counters at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CountersNow {
    pub tests_run: u64,
    /// Refusals by reason: a limit's name (`max_duration`), or the rule
    /// (`not_allowed`, `invalid_spec`, …).
    pub refused: BTreeMap<String, u64>,
    pub archive_errors: u64,
    pub backlog: u64,
}

/// The name a refusal is counted under.
pub fn refusal_reason(r: &Refusal) -> String {
    match r {
        Refusal::LimitExceeded { limit, .. } => limit.name().to_string(),
        Refusal::Busy { .. } => "max_concurrent_tests".into(),
        Refusal::NotAllowed { .. } => "not_allowed".into(),
        Refusal::UnsupportedVersion { .. } => "unsupported_version".into(),
        Refusal::InvalidSpec { .. } => "invalid_spec".into(),
        Refusal::Unavailable { .. } => "unavailable".into(),
        Refusal::ThirdPartyNotAllowed { .. } => "third_party_not_allowed".into(),
        Refusal::AuthFailed => "auth_failed".into(),
        Refusal::AuthRequired => "auth_required".into(),
    }
}

impl AgentCounters {
    /// A test ran (and ended, whatever its outcome).
    pub fn test_run(&self) {
        self.tests_run.fetch_add(1, Ordering::Relaxed);
    }

    pub fn refused(&self, refusal: &Refusal) {
        let mut m = self.refused.lock().unwrap_or_else(|e| e.into_inner());
        *m.entry(refusal_reason(refusal)).or_default() += 1;
    }

    pub fn archive_error(&self) {
        self.archive_errors.fetch_add(1, Ordering::Relaxed);
    }

    pub fn backlog_add(&self, n: i64) {
        if n >= 0 {
            self.backlog.fetch_add(n as u64, Ordering::Relaxed);
        } else {
            let _ = self
                .backlog
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
                    Some(b.saturating_sub(n.unsigned_abs()))
                });
        }
    }

    pub fn now(&self) -> CountersNow {
        CountersNow {
            tests_run: self.tests_run.load(Ordering::Relaxed),
            refused: self
                .refused
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
            archive_errors: self.archive_errors.load(Ordering::Relaxed),
            backlog: self.backlog.load(Ordering::Relaxed),
        }
    }
}
