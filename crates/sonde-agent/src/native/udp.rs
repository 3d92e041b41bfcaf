//! An admitted native UDP test on the server: open a UDP socket per
//! stream, learn each client address from its hello, run the server's
//! end, swap reports.

use super::watcher::{answer_report, spawn_watcher};
use sonde_engine::connect::{size_udp_buffers, udp_finish};
use sonde_engine::control::Control;
use sonde_engine::host_env::host_env;
use sonde_engine::sockopt::udp_in_force;
use sonde_engine::tcp::client::HANDSHAKE_TIMEOUT;
use sonde_engine::udp::client::{udp_client_role, udp_report_cap, udp_side_plan};
use sonde_engine::udp::flow::Credits;
use sonde_engine::udp::side::{run_udp_side, UdpDataStream, UdpFlow, UDP_RX_GRACE};
use sonde_engine::EngineError;
use sonde_model::StreamLayout;
use sonde_model::UdpSpec;
use sonde_wire::{ServerMessage, TestId, UdpHello};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
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
) -> Result<SocketAddr, EngineError> {
    let mut buf = [0u8; 64];
    loop {
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

/// Runs test `id`.
pub(super) fn run(
    mut control: Control,
    peer: SocketAddr,
    spec: &UdpSpec,
    id: TestId,
) -> Result<(), EngineError> {
    let sockets = (0..spec.stream_count())
        .map(|_| bind_near(&control))
        .collect::<Result<Vec<_>, _>>()?;
    let ports = sockets
        .iter()
        .map(|s| s.local_addr().map(|a| a.port()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(EngineError::io("UDP port"))?;
    control.send_preamble()?;
    control.send(&ServerMessage::Accepted {
        test_id: id,
        env: host_env(),
        udp_ports: ports,
    })?;
    tracing::info!(%peer, test = %id, streams = spec.stream_count(), rate = %spec.stream_rate(), "UDP test accepted");
    let deadline = Instant::now() + HANDSHAKE_TIMEOUT;
    let mut streams = Vec::with_capacity(sockets.len());
    for (i, socket) in sockets.into_iter().enumerate() {
        let index = u16::try_from(i).unwrap_or(u16::MAX);
        let from = match await_hello(&socket, id, index, &peer, deadline) {
            Ok(f) => f,
            Err(e) => {
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
    let wait = spec.send_duration() + UDP_RX_GRACE + Duration::from_secs(15);
    // Unpaced: the client's progress reports arrive through the watcher,
    // ours go out on a clone of the control connection.
    let unpaced = spec.stream_rate().bps() == 0;
    let credits = Credits::new(spec.stream_count());
    let watcher = spawn_watcher(
        &control,
        udp_report_cap(spec),
        wait,
        &stop,
        unpaced.then(|| Arc::clone(&credits)),
    )?;
    let flow = if unpaced {
        Some(UdpFlow::over_control(&control, credits, |acks| {
            ServerMessage::Progress { acks }
        })?)
    } else {
        None
    };
    let report = run_udp_side(
        udp_side_plan(spec),
        streams,
        host_env(),
        start,
        &stop,
        flow,
        &mut |_| {},
    );
    answer_report(
        watcher,
        &mut control,
        ServerMessage::UdpReport { report },
        peer,
        id,
    )
}
