//! Running a TCP spec against a sonde or an iperf3 server.

use crate::iperf3_tcp::run_iperf3_tcp;
use crate::live::TcpLive;
use crate::native_tcp::run_tcp;
use crate::{Events, RunError, Stop};
use sonde_engine::{EngineError, TestEvent};
use sonde_model::{Event, OpenStream, PeerKind, StreamLayout, TcpSpec, TestResult, Warning};

/// The engine's events of a run against a `peer` server, as the model's.
fn relay<'a>(
    spec: &'a TcpSpec,
    peer: PeerKind,
    events: &'a Events,
) -> impl FnMut(TestEvent<'_>) + 'a {
    let mut live = TcpLive::default();
    move |e| match e {
        TestEvent::Accepted { server, env } => events.emit(Event::Connected {
            server,
            peer,
            env: env.clone(),
        }),
        TestEvent::Started { streams } => events.emit(Event::StreamsOpen(
            streams
                .iter()
                .map(|&(stream, role, local, remote)| OpenStream {
                    stream,
                    direction: spec.stream_direction(usize::from(stream)),
                    role,
                    local,
                    remote,
                })
                .collect(),
        )),
        TestEvent::Interval(i) => events.emit(Event::Interval(live.interval(spec, i))),
    }
}

/// Runs `spec` against the server its `peer` names (finding out, for
/// `auto`, whether it is iperf3).
pub fn run(spec: &TcpSpec, stop: &Stop, events: &Events) -> Result<TestResult, RunError> {
    let flag = stop.flag();
    let iperf3 = || run_iperf3_tcp(spec, flag, &mut relay(spec, PeerKind::Iperf3, events));
    let outcome = match spec.peer {
        PeerKind::Iperf3 => iperf3(),
        PeerKind::Sonde => run_tcp(spec, flag, &mut relay(spec, PeerKind::Sonde, events)),
        PeerKind::Auto => match run_tcp(spec, flag, &mut relay(spec, PeerKind::Sonde, events)) {
            Err(EngineError::PeerIsIperf3) => {
                events.emit(Event::Warning(Warning::PeerIsIperf3 {
                    host: spec.host.clone(),
                    port: spec.port,
                }));
                iperf3()
            }
            other => other,
        },
    };
    Ok(outcome?)
}
