//! iperf3 clients on sonde's port: a test an iperf3 client asks for, run
//! with sonde's data loops and limits, answered in iperf3's protocol
//! (docs/iperf3-protocol.md). A connection whose first bytes are not
//! sonde's preamble is iperf3's: a cookie that names a test waiting for
//! data connections makes it one, any other starts a test.

use crate::limits::{check_client, check_tcp};
use crate::registry::Delivered;
use crate::server::Shared;
use crate::session::{Slot, STREAMS_TIMEOUT};
use sonde_engine::host_env::host_env;
use sonde_engine::iperf3::control::Iperf3Control;
use sonde_engine::iperf3::{hold_open, results_of, sonde_direction};
use sonde_engine::sockopt::{apply_accepted, StreamOptions};
use sonde_engine::tcp::client::{client_role, side_plan};
use sonde_engine::tcp::side::{run_side, DataStream};
use sonde_engine::EngineError;
use sonde_model::{ByteSize, Dscp, Rate, StreamLayout, StreamRole, TcpSpec};
use sonde_wire::iperf3::{Cookie, Params, Protocol, State};
use sonde_wire::TestId;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the client has for each step of the handshake and results.
pub(crate) const STEP_WAIT: Duration = Duration::from_secs(10);

/// The test id a cookie stands for in the registry.
pub(crate) fn cookie_id(cookie: &Cookie) -> TestId {
    let mut id = [0u8; 16];
    for (i, b) in cookie.as_bytes().iter().enumerate() {
        id[i % 16] ^= b.rotate_left((i / 16) as u32);
    }
    TestId(id)
}

/// A connection that opened with a cookie: a data connection of a test
/// being set up, or a new test.
pub(crate) fn handle(
    stream: TcpStream,
    peer: SocketAddr,
    shared: &Arc<Shared>,
    hello_wait: Duration,
    accepted: u64,
) -> Result<(), EngineError> {
    let mut control = Iperf3Control::new(stream);
    let cookie = control.recv_cookie(hello_wait)?;
    let id = cookie_id(&cookie);
    if shared.registry.is_open(id) {
        let stream = control.into_stream();
        shared
            .registry
            .deliver_accepted(id, accepted, peer.ip(), stream);
        return Ok(());
    }
    run_test(control, peer, id, shared)
}

/// The sonde spec of an iperf3 client's parameters.
fn tcp_spec(p: &Params, peer: SocketAddr) -> Result<TcpSpec, String> {
    if p.protocol != Protocol::Tcp {
        return Err(format!(
            "{} tests are not served to iperf3 clients yet",
            p.protocol.key()
        ));
    }
    let nonzero = |v: u64| (v > 0).then_some(v);
    Ok(TcpSpec {
        host: peer.ip().to_string(),
        port: peer.port(),
        time: Duration::from_secs(u64::from(p.time)),
        omit: Duration::from_secs(u64::from(p.omit)),
        interval: Duration::ZERO,
        parallel: u16::try_from(p.parallel.max(1))
            .map_err(|_| format!("{} streams", p.parallel))?,
        direction: sonde_direction(p.direction()),
        length: nonzero(u64::from(p.len)).map_or(TcpSpec::default().length, ByteSize::from_bytes),
        bitrate: nonzero(p.bandwidth).map(Rate::from_bps),
        window: nonzero(u64::from(p.window)).map(ByteSize::from_bytes),
        mss: (p.mss > 0).then_some(p.mss),
        dscp: Dscp::new(p.tos >> 2).filter(|d| d.value() > 0),
        congestion: p.congestion.clone(),
        flowlabel: (p.flowlabel > 0).then_some(p.flowlabel),
        title: p.title.clone(),
        ..TcpSpec::default()
    })
}

fn run_test(
    mut control: Iperf3Control,
    peer: SocketAddr,
    id: TestId,
    shared: &Arc<Shared>,
) -> Result<(), EngineError> {
    let limits = &shared.config.limits;
    if let Err(refusal) = check_client(limits, peer.ip()) {
        tracing::warn!(%peer, %refusal, "iperf3 client refused");
        return control.send_state(State::AccessDenied);
    }
    control.send_state(State::ParamExchange)?;
    let params = control.recv_params(STEP_WAIT)?;
    if params.protocol == Protocol::Udp {
        return crate::iperf3_udp_session::run(control, peer, &params, shared);
    }
    let spec = match tcp_spec(&params, peer) {
        Ok(s) => s,
        Err(reason) => {
            tracing::warn!(%peer, %reason, "iperf3 test refused");
            return control.send_state(State::AccessDenied);
        }
    };
    if let Err(refusal) = spec
        .validate()
        .map_err(|e| e.reason)
        .and_then(|()| check_tcp(limits, &spec).map_err(|r| r.to_string()))
    {
        tracing::warn!(%peer, %refusal, "iperf3 test refused");
        return control.send_state(State::AccessDenied);
    }
    let Some(slot) = Slot::claim(shared) else {
        tracing::warn!(%peer, "iperf3 test refused: server busy");
        return control.send_state(State::AccessDenied);
    };
    tracing::info!(%peer, test = %id, streams = spec.stream_count(), direction = ?spec.direction,
        time = ?spec.time, client = %params.client_version.as_deref().unwrap_or("?"), "iperf3 test accepted");
    let rx = shared.registry.open(id, peer.ip(), spec.stream_count());
    let outcome = serve(&mut control, peer, &spec, &rx);
    shared.registry.close(id);
    drop(slot);
    outcome
}

fn serve(
    control: &mut Iperf3Control,
    peer: SocketAddr,
    spec: &TcpSpec,
    rx: &std::sync::mpsc::Receiver<Delivered>,
) -> Result<(), EngineError> {
    control.send_state(State::CreateStreams)?;
    let opts = StreamOptions::from(spec);
    let mut arrived = Vec::with_capacity(spec.stream_count());
    let deadline = Instant::now() + STREAMS_TIMEOUT;
    while arrived.len() < spec.stream_count() {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(delivered) = rx.recv_timeout(left) else {
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
        let role = match client_role(spec, i) {
            StreamRole::Sender => StreamRole::Receiver,
            StreamRole::Receiver => StreamRole::Sender,
        };
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
    // streams (receivers read until then, however late it comes).
    plan.receive_grace = STEP_WAIT;
    let held = hold_open(&streams);
    let side_stop = Arc::clone(&stop);
    let side = std::thread::spawn(move || {
        run_side(plan, streams, host_env(), start, &side_stop, &mut |_| {})
    });
    let wait = STEP_WAIT + spec.omit + spec.time;
    let end = control.recv_state(wait);
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
    control.send_state(State::ExchangeResults)?;
    let theirs = control.recv_results(STEP_WAIT)?;
    control.send_results(&results_of(&mine))?;
    control.send_state(State::DisplayResults)?;
    // The client answers IPERF_DONE, or just closes.
    let _ = control.recv_state(STEP_WAIT);
    drop(held);
    let moved: u64 = mine.streams.iter().map(|s| s.total_bytes).sum();
    let theirs_moved: u64 = theirs.streams.iter().map(|s| s.bytes).sum();
    tracing::info!(%peer, bytes = moved, client_bytes = theirs_moved, "iperf3 test done");
    Ok(())
}
