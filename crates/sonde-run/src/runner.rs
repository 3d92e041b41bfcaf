//! [`run`] and the [`Runner`] trait.

use crate::{http, latency, ping, tcp, trace, udp, Events, RunError, Stop};
use sonde_model::{Event, IpFamily, TestResult, TestSpec};
use std::net::IpAddr;
use std::sync::Arc;

/// Something that runs tests: the real [`LocalRunner`], or a scripted
/// fake in the tests of methods and schedulers.
pub trait Runner: Send + Sync {
    fn run(&self, spec: &TestSpec, stop: &Stop, events: &Events) -> Result<TestResult, RunError>;

    /// The addresses `host` has for the tests this runner runs, IPv6
    /// first (or only `family`'s), as a test would connect: a method that
    /// must know the family before its first test asks here (a DNS
    /// lookup, no socket). Empty: this runner cannot tell from here (its
    /// tests start on another host). By default, this host's resolver.
    fn resolve(&self, host: &str, family: IpFamily) -> Result<Vec<IpAddr>, RunError> {
        sonde_engine::connect::resolve(host, 0, family)
            .map(|addrs| addrs.into_iter().map(|a| a.ip()).collect())
            .map_err(RunError::Unreachable)
    }
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
    if let Err(e) = spec.validate() {
        let e = RunError::from(e);
        events.emit(Event::Failed {
            reason: e.to_string(),
        });
        return Err(e);
    }
    let outcome = match spec {
        TestSpec::Tcp(s) => latency::around(s.latency, &s.host, s.family, events, || {
            tcp::run(s, stop, events)
        }),
        TestSpec::Udp(s) => latency::around(s.latency, &s.host, s.family, events, || {
            udp::run(s, stop, events)
        }),
        TestSpec::Ping(s) => ping::run(s, stop, events),
        TestSpec::Http(s) => http::run(s, stop, events),
        TestSpec::Trace(s) => trace::run(s, stop, events),
    };
    let outcome = match outcome {
        // A stop during set-up is an interruption, whatever the socket said.
        Err(e) if stop.is_stopped() && !e.is_usage() => Err(RunError::Interrupted),
        Ok(mut result) => {
            fill_ends(&mut result, spec);
            Ok(result)
        }
        other => other,
    };
    events.emit(match &outcome {
        Ok(result) => Event::Finished(Arc::new(result.clone())),
        Err(e) => Event::Failed {
            reason: e.to_string(),
        },
    });
    outcome
}

/// Fills the path's two ends where the test did not record them (an
/// iperf3 peer, http): the first address its host resolves to, the one a
/// test connects to first, and this host's address toward it.
fn fill_ends(result: &mut TestResult, spec: &TestSpec) {
    let env = &mut result.env;
    if env.target.is_none() {
        env.target = sonde_engine::connect::resolve(spec.host(), 0, spec.family())
            .ok()
            .and_then(|a| a.first().map(|a| a.ip()));
    }
    if env.source.is_none() {
        let bind = match spec {
            TestSpec::Tcp(s) => s.bind,
            TestSpec::Udp(s) => s.bind,
            _ => None,
        };
        env.source = env
            .target
            .and_then(|t| sonde_engine::connect::source_toward(t, bind));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_model::TcpSpec;

    #[test]
    fn a_run_that_gives_no_result_says_so_last() {
        let events = Events::new();
        let rx = events.subscribe();
        let spec = TestSpec::Tcp(TcpSpec {
            host: "::1".into(),
            parallel: 0,
            ..TcpSpec::default()
        });
        let e = run(&spec, &Stop::new(), &events).unwrap_err();
        assert!(
            matches!(&e, RunError::Invalid(s) if s.field == "parallel"),
            "{e:?}"
        );
        events.close();
        let seen: Vec<Event> = rx.iter().collect();
        assert!(
            matches!(seen.last(), Some(Event::Failed { reason }) if reason.contains("parallel")),
            "{seen:?}"
        );
    }
}
