//! An admitted iperf3 TCP test on the server: its data connections
//! gathered through the registry in the order the client opened them,
//! sonde's stream loops, iperf3's results.

use super::exchange::{add_server_output, await_test_end, swap_results};
use crate::gone::{client_gone, GONE_POLL};
use crate::handshake::connect_deadline;
use crate::limits::END_GRACE;
use crate::state::{Delivered, Shared};
use sonde_engine::host_env::host_env;
use sonde_engine::iperf3::control::Iperf3Control;
use sonde_engine::iperf3::hold_open;
use sonde_engine::sockopt::{apply_accepted, StreamOptions};
use sonde_engine::tcp::protocol::{client_role, side_plan};
use sonde_engine::tcp::side::{run_side, DataStream};
use sonde_engine::EngineError;
use sonde_model::{StreamLayout, StreamRole, TcpSpec};
use sonde_wire::iperf3::{Params, State};
use sonde_wire::TestId;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Runs test `id` (the client's cookie), open in the registry while it
/// waits for its data connections.
pub(super) fn run(
    control: &mut Iperf3Control,
    peer: SocketAddr,
    spec: &TcpSpec,
    params: &Params,
    id: TestId,
    shared: &Shared,
    deadline: Instant,
) -> Result<(), EngineError> {
    tracing::info!(name: "test_started", %peer, test = %id, streams = spec.stream_count(), direction = ?spec.direction,
        time = ?spec.time, client = %params.client_version.as_deref().unwrap_or("?"), "iperf3 test accepted");
    let rx = shared.registry().open(id, peer.ip(), spec.stream_count());
    let outcome = serve(control, peer, spec, params, &rx, deadline);
    shared.registry().close(id);
    outcome
}

fn serve(
    control: &mut Iperf3Control,
    peer: SocketAddr,
    spec: &TcpSpec,
    params: &Params,
    rx: &Receiver<Delivered>,
    deadline: Instant,
) -> Result<(), EngineError> {
    control.send_state(State::CreateStreams)?;
    let opts = StreamOptions::from(spec);
    let mut arrived = Vec::with_capacity(spec.stream_count());
    let deadline = connect_deadline(deadline);
    while arrived.len() < spec.stream_count() {
        // A client that closed its control connection frees the slot now.
        if client_gone(control.stream()) {
            return Err(EngineError::Closed {
                during: "the wait for the iperf3 data connections",
            });
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let got = rx.recv_timeout(left.min(GONE_POLL));
        if matches!(got, Err(RecvTimeoutError::Timeout)) && !left.is_zero() {
            continue;
        }
        let Ok(delivered) = got else {
            let _ = control.send_state(State::ServerTerminate);
            return Err(EngineError::Aborted(
                "not every iperf3 data connection arrived in time".into(),
            ));
        };
        arrived.push(delivered);
    }
    // Their order is the order the client opened them, which is what
    // says each one's direction (and iperf3 id).
    arrived.sort_by_key(|(accepted, _)| *accepted);
    let mut streams = Vec::with_capacity(arrived.len());
    for (i, (_, conn)) in arrived.into_iter().enumerate() {
        apply_accepted(&conn, &opts)?;
        let role = client_role(spec, i).opposite();
        streams.push(DataStream {
            index: u16::try_from(i).unwrap_or(u16::MAX),
            role,
            stream: conn,
            flowlabel: None,
        });
    }
    control.send_state(State::TestStart)?;
    control.send_state(State::TestRunning)?;
    let start = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let mut plan = side_plan(spec);
    // The client's clock ends the test: its TEST_END stops this end's
    // streams (receivers read until then, at most END_GRACE after the
    // test's time, when the server ends it).
    plan.receive_grace = END_GRACE;
    let held = hold_open(&streams);
    let to_drain: Vec<(usize, TcpStream)> = streams
        .iter()
        .enumerate()
        .filter(|(_, d)| d.role == StreamRole::Receiver)
        .filter_map(|(i, d)| Some((i, d.stream.try_clone().ok()?)))
        .collect();
    let side_stop = Arc::clone(&stop);
    let side = std::thread::spawn(move || {
        run_side(plan, streams, host_env(), start, &side_stop, &mut |_| {})
    });
    let end = await_test_end(control, spec.omit + spec.time);
    let ran = start.elapsed().saturating_sub(spec.omit).as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let mine = side
        .join()
        .map_err(|_| EngineError::Aborted("a data stream thread failed".into()))?;
    match end? {
        State::TestEnd => {}
        State::ClientTerminate => {
            return Err(EngineError::Aborted(
                "the iperf3 client ended the test".into(),
            ))
        }
        other => {
            return Err(EngineError::Unexpected {
                expected: "TEST_END",
                got: format!("{other:?}"),
            })
        }
    }
    let mut mine = mine;
    let (indices, conns): (Vec<usize>, Vec<TcpStream>) = to_drain.into_iter().unzip();
    for (i, left) in indices.into_iter().zip(drain(&conns)) {
        if let Some(s) = mine.streams.get_mut(i) {
            s.total_bytes += left;
            s.measured_bytes += left;
        }
    }
    let mut ours = super::results::tcp(&mine, ran);
    let sending: Vec<bool> = mine
        .streams
        .iter()
        .map(|s| s.role == StreamRole::Sender)
        .collect();
    add_server_output(&mut ours, params, peer, &sending, false);
    let theirs = swap_results(control, &ours)?;
    drop(held);
    let moved: u64 = mine.streams.iter().map(|s| s.total_bytes).sum();
    let theirs_moved: u64 = theirs.streams.iter().map(|s| s.bytes).sum();
    tracing::info!(name: "test_finished", %peer, bytes = moved, client_bytes = theirs_moved, "iperf3 test done");
    Ok(())
}

/// Reads what the client sent before its TEST_END but this end's stream
/// loops left unread (a receiver waits for a batch of bytes, and stops at
/// TEST_END), so those bytes count as received, as the client counted
/// them as sent: per connection, the bytes read. Reads until nothing more
/// comes on any of them for [`DRAIN_QUIET`], for at most [`DRAIN_MAX`].
fn drain(conns: &[TcpStream]) -> Vec<u64> {
    use std::io::Read;
    let mut got = vec![0u64; conns.len()];
    let mut open: Vec<bool> = conns
        .iter()
        .map(|c| c.set_nonblocking(true).is_ok())
        .collect();
    let mut buf = vec![0u8; 256 * 1024];
    let (start, mut quiet_since) = (Instant::now(), Instant::now());
    while start.elapsed() < DRAIN_MAX && quiet_since.elapsed() < DRAIN_QUIET {
        let mut any = false;
        for (i, mut conn) in conns.iter().enumerate() {
            if !open[i] {
                continue;
            }
            match conn.read(&mut buf) {
                Ok(0) => open[i] = false,
                Ok(n) => {
                    got[i] += n as u64;
                    any = true;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => open[i] = false,
            }
        }
        if any {
            quiet_since = Instant::now();
        } else {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    got
}

/// How long a drained connection stays quiet before it counts as empty.
const DRAIN_QUIET: Duration = Duration::from_millis(100);
/// The longest a drain takes.
const DRAIN_MAX: Duration = Duration::from_secs(2);
