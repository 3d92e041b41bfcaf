//! [`run`] and the [`Runner`] trait.

use crate::{latency, ping, tcp, udp, Events, RunError, Stop};
use sonde_model::{Event, TestResult, TestSpec};
use std::sync::Arc;

/// Something that runs tests: the real [`LocalRunner`], or a scripted
/// fake in the tests of methods and schedulers.
pub trait Runner: Send + Sync {
    fn run(&self, spec: &TestSpec, stop: &Stop, events: &Events) -> Result<TestResult, RunError>;
}

/// Runs tests from this host with [`run`].
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalRunner;

impl Runner for LocalRunner {
    fn run(&self, spec: &TestSpec, stop: &Stop, events: &Events) -> Result<TestResult, RunError> {
        run(spec, stop, events)
    }
}

/// Runs `spec` from this host: validates it, measures, and returns the
/// result, which it also sends as [`Event::Finished`]. Setting `stop`
/// ends the test early; the result then covers the time that ran and
/// says it was interrupted.
pub fn run(spec: &TestSpec, stop: &Stop, events: &Events) -> Result<TestResult, RunError> {
    spec.validate()?;
    let outcome = match spec {
        TestSpec::Tcp(s) => latency::around(s.latency, &s.host, s.family, events, || {
            tcp::run(s, stop, events)
        }),
        TestSpec::Udp(s) => latency::around(s.latency, &s.host, s.family, events, || {
            udp::run(s, stop, events)
        }),
        TestSpec::Ping(s) => ping::run(s, stop, events),
    };
    let result = match outcome {
        Ok(r) => r,
        // A stop during set-up is an interruption, whatever the socket said.
        Err(e) if stop.is_stopped() && !e.is_usage() => return Err(RunError::Interrupted),
        Err(e) => return Err(e),
    };
    events.emit(Event::Finished(Arc::new(result.clone())));
    Ok(result)
}
