//! Latency under load around a test: ICMP pings to the server idle, then
//! all through the test; the figure goes into the result's summary.

use crate::{Events, RunError};
use sonde_engine::ping::latency::measure_idle;
use sonde_model::{Event, IpFamily, TestResult, Warning};

/// Runs `load`, with latency pings around it when `wanted`.
pub fn around(
    wanted: bool,
    host: &str,
    family: IpFamily,
    events: &Events,
    load: impl FnOnce() -> Result<TestResult, RunError>,
) -> Result<TestResult, RunError> {
    if !wanted {
        return load();
    }
    let idle = measure_idle(host, family).map_err(latency_error)?;
    events.emit(Event::LatencyIdle(idle.figures().clone()));
    let loaded = idle.start_loaded();
    // The loaded pings stop whatever the load's outcome: a failed test
    // must not leave a pinger running in a daemon.
    let outcome = load();
    let latency = loaded.finish();
    let mut result = outcome?;
    // A finished test is kept when only its latency probe failed.
    match latency {
        Ok(l) => result.summary.latency = Some(l),
        Err(e) => events.emit(Event::Warning(Warning::LatencyLost {
            reason: latency_error(e).to_string(),
        })),
    }
    Ok(result)
}

/// A ping that cannot run says so as the latency probe's failure.
fn latency_error(e: sonde_engine::EngineError) -> RunError {
    match RunError::from(e) {
        RunError::Protocol(e) => RunError::Unsupported(format!("--latency: {e}")),
        RunError::Unsupported(what) => RunError::Unsupported(format!("--latency: {what}")),
        other => other,
    }
}
