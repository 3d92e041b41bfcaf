//! QoS on a DiffServ path (seed 004 §4): the checks of a premium class
//! ([`checks`]) and scenarios of a foreground against a background mix
//! sent from a third host ([`scenario`]). Background goes through its own
//! [`Runner`]: a third-party agent on the command line, so it comes from
//! another host, as 004's background PC.

pub mod checks;
mod concurrent;
pub mod scenario;
pub mod verdicts;

#[cfg(test)]
mod tests;

use crate::MethodError;
use sonde_model::{Dscp, MethodResult, Rate, TcpSpec, TestResult, TestSpec, UdpSpec};
use sonde_run::{Events, RunError, Runner, Stop};
use std::time::Duration;

pub use checks::{run_qos_checks, Senders};
pub use scenario::run_qos_scenario;

/// The trials of a QoS method, kept in its result as they finish.
pub(crate) struct Trials<'a> {
    result: MethodResult,
    stop: &'a Stop,
    events: &'a Events,
    count: usize,
}

impl<'a> Trials<'a> {
    fn new(result: MethodResult, stop: &'a Stop, events: &'a Events) -> Self {
        Self {
            result,
            stop,
            events,
            count: 0,
        }
    }

    /// Keeps a trial's result, or ends the method with its error.
    fn keep(&mut self, outcome: Result<TestResult, RunError>) -> Result<TestResult, MethodError> {
        self.count += 1;
        match outcome {
            Ok(r) => {
                self.result.trials.push(r.clone());
                Ok(r)
            }
            Err(source) => Err(MethodError::Trial {
                trial: self.count,
                source,
            }),
        }
    }

    /// Runs one test; `None` once stopped (the result says interrupted).
    fn run(
        &mut self,
        runner: &dyn Runner,
        spec: TestSpec,
    ) -> Result<Option<TestResult>, MethodError> {
        if self.stop.is_stopped() {
            self.result.interrupted = true;
            return Ok(None);
        }
        let r = self.keep(runner.run(&spec, self.stop, self.events))?;
        if r.interrupted {
            self.result.interrupted = true;
            return Ok(None);
        }
        crate::step::idle(gap_of(&self.result), self.stop);
        Ok(Some(r))
    }

    fn finish(self) -> MethodResult {
        self.result
    }
}

fn gap_of(r: &MethodResult) -> Duration {
    match &r.spec {
        sonde_model::MethodSpec::QosCheck(s) => s.gap,
        sonde_model::MethodSpec::QosScenario(s) => s.gap,
        _ => Duration::ZERO,
    }
}

/// A best-effort UDP background toward `toward`'s server: `rate_bps` of
/// `length`-byte payloads for `time`, unmarked.
pub fn background_udp(toward: &UdpSpec, rate_bps: u64, length: u32, time: Duration) -> UdpSpec {
    UdpSpec {
        host: toward.host.clone(),
        port: toward.port,
        family: toward.family,
        bitrate: Rate::from_bps(rate_bps),
        length,
        time,
        dscp: Some(Dscp::default()),
        parallel: 1,
        title: Some("background".into()),
        ..UdpSpec::default()
    }
}

/// A best-effort TCP background: one stream paced to `rate_bps`.
pub fn background_tcp(toward: &UdpSpec, rate_bps: u64, time: Duration) -> TcpSpec {
    TcpSpec {
        host: toward.host.clone(),
        port: toward.port,
        family: toward.family,
        bitrate: Some(Rate::from_bps(rate_bps)),
        time,
        dscp: Some(Dscp::default()),
        parallel: 1,
        title: Some("background".into()),
        ..TcpSpec::default()
    }
}
