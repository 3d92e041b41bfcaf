//! The requests the API started and that still run, each with its stop
//! (`DELETE /api/v1/runs/ID` stops one).

use sonde_run::Stop;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// The requests the API started and that still run: each one's stop.
#[derive(Debug, Default)]
pub struct RunningRequests(Mutex<BTreeMap<String, Stop>>);

impl RunningRequests {
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Stop>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}
