//! [`GatedRunner`]: every test a request runs — a method's every trial, a
//! campaign step's test — checked by the gate as it will run, whatever
//! the spec said when it was admitted, and stopped at its bound plus
//! [`super::GRACE`].

use super::{Gate, Origin};
use sonde_model::{IpFamily, TestResult, TestSpec};
use sonde_run::{BoundedStop, Events, RunError, Runner, Stop};
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
            tracing::warn!(name: "request_refused", origin = self.origin.name(), reason = %refused.rule(), "a test refused: {refused}");
            let e = RunError::Gate(refused.to_string());
            events.emit(sonde_model::Event::Failed {
                reason: e.to_string(),
            });
            return Err(e);
        }
        // A test stops at its bound plus the grace, whatever it does.
        let bound = self
            .origin
            .is_remote()
            .then(|| spec.work().duration.map(|d| d + super::GRACE))
            .flatten();
        let bounded = BoundedStop::new(stop, bound);
        // A key by name: the operator's file, read by the test; the
        // result keeps the spec as asked.
        let keyed = match spec {
            TestSpec::Ping(p) if p.key_file.is_none() => p
                .key
                .as_deref()
                .and_then(|k| self.gate.key_file(k))
                .map(|path| {
                    TestSpec::Ping(sonde_model::PingSpec {
                        key_file: Some(path.clone()),
                        key: None,
                        ..p.clone()
                    })
                }),
            _ => None,
        };
        let outcome = match &keyed {
            Some(with_file) => self
                .inner
                .run(with_file, bounded.flag(), events)
                .map(|mut r| {
                    r.spec = spec.clone();
                    r
                }),
            None => self.inner.run(spec, bounded.flag(), events),
        };
        if bounded.hit_bound() {
            tracing::warn!(
                name: "bound_reached",
                origin = self.origin.name(),
                kind = spec.kind().name(),
                "a test stopped at its admitted bound"
            );
        }
        outcome
    }

    fn resolve(&self, host: &str, family: IpFamily) -> Result<Vec<IpAddr>, RunError> {
        self.inner.resolve(host, family)
    }
}
