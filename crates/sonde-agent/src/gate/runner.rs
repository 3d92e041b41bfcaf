//! [`GatedRunner`]: every test a request runs — a method's every trial, a
//! campaign step's test — checked by the gate as it will run, whatever
//! the spec said when it was admitted.

use super::{Gate, Origin};
use sonde_model::{IpFamily, TestResult, TestSpec};
use sonde_run::{Events, RunError, Runner, Stop};
use std::net::IpAddr;
use std::sync::Arc;

/// A runner whose every test passes [`Gate::check_trial`] first.
pub struct GatedRunner {
    pub inner: Box<dyn Runner>,
    pub gate: Arc<Gate>,
    pub origin: Origin,
}

impl Runner for GatedRunner {
    fn run(&self, spec: &TestSpec, stop: &Stop, events: &Events) -> Result<TestResult, RunError> {
        if let Err(refused) = self.gate.check_trial(&self.origin, spec) {
            tracing::warn!(origin = self.origin.name(), rule = %refused.rule(), "a test refused: {refused}");
            let e = RunError::Gate(refused.to_string());
            events.emit(sonde_model::Event::Failed {
                reason: e.to_string(),
            });
            return Err(e);
        }
        self.inner.run(spec, stop, events)
    }

    fn resolve(&self, host: &str, family: IpFamily) -> Result<Vec<IpAddr>, RunError> {
        self.inner.resolve(host, family)
    }
}
