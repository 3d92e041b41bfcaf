//! Running a UDP spec against a sonde or an iperf3 server.

use crate::iperf3_udp::run_iperf3_udp;
use crate::live::UdpLiveState;
use crate::native_udp::{run_udp, UdpEvent};
use crate::{Events, RunError, Stop};
use sonde_engine::EngineError;
use sonde_model::{Event, PeerKind, TestResult, UdpSpec, Warning};

/// Against iperf3: its server reports totals only, so no live intervals.
fn iperf3(spec: &UdpSpec, stop: &Stop, events: &Events) -> Result<TestResult, EngineError> {
    events.emit(Event::Warning(Warning::NoLiveIntervals));
    run_iperf3_udp(spec, stop.flag())
}

fn native(spec: &UdpSpec, stop: &Stop, events: &Events) -> Result<TestResult, EngineError> {
    let mut live = UdpLiveState::default();
    run_udp(spec, stop.flag(), &mut |e| match e {
        UdpEvent::Accepted { server, env } => events.emit(Event::Connected {
            server,
            peer: PeerKind::Sonde,
            env: env.clone(),
        }),
        UdpEvent::Interval { live: i, received } => {
            let (interval, remarked) = live.interval(spec, i, received);
            events.emit(Event::Interval(interval));
            remarked.into_iter().for_each(|r| events.emit(r));
        }
    })
}

/// Runs `spec` against the server its `peer` names (finding out, for
/// `auto`, whether it is iperf3).
pub fn run(spec: &UdpSpec, stop: &Stop, events: &Events) -> Result<TestResult, RunError> {
    let outcome = match spec.peer {
        PeerKind::Iperf3 => iperf3(spec, stop, events),
        PeerKind::Sonde => native(spec, stop, events),
        PeerKind::Auto => match native(spec, stop, events) {
            Err(EngineError::PeerIsIperf3) => {
                events.emit(Event::Warning(Warning::PeerIsIperf3 {
                    host: spec.host.clone(),
                    port: spec.port,
                }));
                iperf3(spec, stop, events)
            }
            other => other,
        },
    };
    Ok(outcome?)
}
