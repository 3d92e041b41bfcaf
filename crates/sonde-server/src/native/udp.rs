//! An admitted native UDP test on the server: open a UDP socket per
//! stream, learn each client address from its hello, run the server's
//! end, swap reports.

use super::watcher::{answer_report, spawn_watcher};
use crate::gone::client_gone;
use crate::limits::REPORT_GRACE;
use sonde_engine::connect::{size_udp_buffers, udp_finish};
use sonde_engine::control::Control;
use sonde_engine::host_env::host_env;
use sonde_engine::sockopt::udp_in_force;
use sonde_engine::udp::flow::Credits;
use sonde_engine::udp::protocol::{udp_client_role, udp_report_cap, udp_side_plan};
use sonde_engine::udp::side::{run_udp_side, UdpDataStream, UdpFlow, UdpLive};
use sonde_engine::EngineError;
use sonde_model::{StreamLayout, UdpSpec, UdpTally};
use sonde_wire::{ReceivedInterval, ServerMessage, StreamAck, StreamReceived, TestId, UdpHello};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn bind_near(control: &Control) -> Result<UdpSocket, EngineError> {
    let local = control
        .stream()
        .local_addr()
        .map_err(EngineError::io("control address"))?;
    let sock = UdpSocket::bind(SocketAddr::new(local.ip(), 0))
        .map_err(EngineError::io("binding a UDP socket"))?;
    size_udp_buffers(&sock);
    Ok(sock)
}

/// Waits for a valid hello on `sock` from the client's address and
/// returns where it came from.
fn await_hello(
    sock: &UdpSocket,
    id: TestId,
    stream: u16,
    client: &SocketAddr,
    deadline: Instant,
    control: &Control,
) -> Result<SocketAddr, EngineError> {
    let mut buf = [0u8; 64];
    loop {
        // A client that closed its control connection frees the slot now.
        if client_gone(control.stream()) {
            return Err(EngineError::Closed {
                during: "the wait for the UDP hellos",
            });
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(EngineError::Timeout {
                what: "the UDP hello of every stream",
            });
        }
        sock.set_read_timeout(Some(left.min(Duration::from_millis(100))))
            .map_err(EngineError::io("UDP read timeout"))?;
        let Ok((n, from)) = sock.recv_from(&mut buf) else {
            continue;
        };
        let ok = UdpHello::decode(&buf[..n])
            .is_some_and(|h| h.test_id == id.0 && h.stream == stream)
            && from.ip().to_canonical() == client.ip().to_canonical();
        if ok {
            return Ok(from);
        }
        tracing::debug!(%from, "stray datagram before the test started");
    }
}

/// The server's receivers of one interval, as a client that asked for
/// live intervals gets them (`None`: this end receives no stream).
fn received(index: u32, live: &UdpLive) -> Option<ServerMessage> {
    let streams: Vec<StreamReceived> = live
        .streams
        .iter()
        .filter_map(|(stream, t)| match t {
            UdpTally::Received(rx) => Some(StreamReceived {
                stream: *stream,
                tally: rx.clone(),
            }),
            UdpTally::Sent(_) => None,
        })
        .collect();
    (!streams.is_empty()).then_some(ServerMessage::UdpInterval(ReceivedInterval {
        index,
        streams,
    }))
}

/// Runs test `id`; with `live_intervals`, the client gets what the
/// server received in each interval as it ends.
pub(super) fn run(
    mut control: Control,
    peer: SocketAddr,
    spec: &UdpSpec,
    id: TestId,
    live_intervals: bool,
    handshake_deadline: Instant,
    terms: &super::Terms,
) -> Result<(), EngineError> {
    let sockets = (0..spec.stream_count())
        .map(|_| bind_near(&control))
        .collect::<Result<Vec<_>, _>>()?;
    let ports = sockets
        .iter()
        .map(|s| s.local_addr().map(|a| a.port()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(EngineError::io("UDP port"))?;
    let (cuts, cut_spec) = terms.told(|| sonde_model::TestSpec::Udp(spec.clone()));
    control.send_preamble()?;
    control.send(&ServerMessage::Accepted {
        test_id: id,
        env: host_env(),
        udp_ports: ports,
        cuts,
        spec: cut_spec,
    })?;
    tracing::info!(name: "test_started", %peer, test = %id, streams = spec.stream_count(), rate = %spec.stream_rate(), "UDP test accepted");
    let deadline = crate::handshake::connect_deadline(handshake_deadline);
    let mut streams = Vec::with_capacity(sockets.len());
    for (i, socket) in sockets.into_iter().enumerate() {
        let index = u16::try_from(i).unwrap_or(u16::MAX);
        let from = match await_hello(&socket, id, index, &peer, deadline, &control) {
            Ok(f) => f,
            Err(e) => {
                terms.release_slot();
                control.send(&ServerMessage::Abort {
                    reason: e.to_string(),
                })?;
                return Err(e);
            }
        };
        udp_finish(&socket, from, spec.dscp, None)?;
        let role = udp_client_role(spec, i).opposite();
        streams.push(UdpDataStream {
            index,
            role,
            info: udp_in_force(&socket, None),
            socket,
            dscp: spec.dscp.map_or(0, sonde_model::Dscp::value),
        });
    }
    control.send(&ServerMessage::Start)?;
    let start = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    // The test ends at its time (never over max_duration); REPORT_GRACE
    // later the server stops waiting for the client's report.
    let wait = spec.send_duration() + REPORT_GRACE;
    // Unpaced: the client's progress reports arrive through the watcher,
    // ours go out on a clone of the control connection, which live
    // intervals share (one writer: frames never interleave).
    let unpaced = spec.pace().is_none();
    let writer = Arc::new(Mutex::new(control.try_clone()?));
    let credits = Credits::new(spec.stream_count());
    let watcher = spawn_watcher(
        &control,
        udp_report_cap(spec),
        wait,
        &stop,
        unpaced.then(|| Arc::clone(&credits)),
    )?;
    let send =
        move |w: &Mutex<Control>, m: &ServerMessage| w.lock().is_ok_and(|mut w| w.send(m).is_ok());
    let flow = unpaced.then(|| {
        let w = Arc::clone(&writer);
        UdpFlow {
            credits,
            publish: Box::new(move |acks: &[StreamAck]| {
                send(
                    &w,
                    &ServerMessage::Progress {
                        acks: acks.to_vec(),
                    },
                )
            }),
        }
    });
    let (mut index, mut live) = (0u32, live_intervals);
    let report = run_udp_side(
        udp_side_plan(spec),
        streams,
        host_env(),
        start,
        &stop,
        flow,
        &mut |l| {
            if let Some(m) = received(index, l).filter(|_| live) {
                // A client that is gone gets no more.
                live = send(&writer, &m);
            }
            index += 1;
        },
    );
    // The traffic is over: the slot goes back before the reports cross.
    terms.release_slot();
    answer_report(
        watcher,
        &mut control,
        ServerMessage::UdpReport { report },
        peer,
        id,
    )
}
