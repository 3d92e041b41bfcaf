//! The client end of a native TCP test: ask the server, open the streams,
//! run this end, swap reports, assemble the result. What both ends agree
//! on is the engine's (`sonde_engine::tcp::protocol`); the streams' data
//! loops are the engine's too.

use sonde_engine::connect::{connect, connect_any, resolve_from};
use sonde_engine::control::Control;
use sonde_engine::host_env::{available_congestion, host_env};
use sonde_engine::sockopt::StreamOptions;
use sonde_engine::tcp::protocol::{
    client_role, opened, report_frame_cap, side_plan, TestEvent, HANDSHAKE_TIMEOUT, REPORT_WAIT,
};
use sonde_engine::tcp::side::{run_side, DataStream};
use sonde_engine::EngineError;
use sonde_model::assemble::tcp_result;
use sonde_model::StreamLayout;
use sonde_model::{
    HostEnv, IpFamily, PeerKind, SideReport, TcpSpec, TestResult, TestSpec, Timestamp,
};
use sonde_wire::{
    ClientMessage, Cut, Preamble, ServerMessage, TestId, HANDSHAKE_FRAME_MAX, PROTOCOL_VERSION,
};
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Turns a refusal or an abort into its error; passes anything else on.
fn expect_server(msg: ServerMessage) -> Result<ServerMessage, EngineError> {
    match msg {
        ServerMessage::Refused { refusal } => Err(EngineError::Refused(refusal)),
        ServerMessage::Abort { reason } => Err(EngineError::Aborted(reason)),
        other => Ok(other),
    }
}

fn unexpected(expected: &'static str, got: &ServerMessage) -> EngineError {
    EngineError::Unexpected {
        expected,
        got: format!("{got:?}").chars().take(80).collect(),
    }
}

/// What the server said when it accepted a test.
#[derive(Debug)]
pub struct Accepted {
    pub server: SocketAddr,
    pub test_id: TestId,
    pub env: HostEnv,
    pub udp_ports: Vec<u16>,
    /// The limits the server cut the test down to; empty: as asked.
    pub cuts: Vec<Cut>,
    /// With `cuts`: the test as the server runs it.
    pub spec: Option<TestSpec>,
}

/// Says each cut on stderr (the log's warnings) and checks the server
/// only cut: the test it runs may be no longer, wider or faster.
pub fn check_cuts(cuts: &[Cut], time: Duration, asked: Duration) -> Result<(), EngineError> {
    for c in cuts {
        tracing::warn!("{c}");
    }
    if time > asked {
        return Err(EngineError::Unexpected {
            expected: "a test no longer than asked",
            got: format!("{time:?} for {asked:?}"),
        });
    }
    Ok(())
}

/// Connects to the server, asks for `request`, and returns the control
/// channel once the server has accepted (refusals become errors).
pub fn handshake(
    host: &str,
    port: u16,
    family: IpFamily,
    request: TestSpec,
    source: &StreamOptions,
) -> Result<(Control, Accepted), EngineError> {
    let addrs = resolve_from(host, port, family, source.bind)?;
    let mut control = Control::new(connect_any(&addrs, source)?);
    let server = control
        .stream()
        .peer_addr()
        .map_err(EngineError::io("server address"))?;
    control.send_preamble()?;
    let token = match &request {
        TestSpec::Tcp(s) => s.token.clone(),
        TestSpec::Udp(s) => s.token.clone(),
        _ => None,
    };
    if let Some(token) = &token {
        let class = sonde_engine::auth::authenticate(&mut control, token, HANDSHAKE_TIMEOUT)?;
        tracing::info!(token = token.name(), %class, "authenticated");
    }
    control.send(&ClientMessage::TestRequest {
        // A UDP client reads the server's intervals as they end.
        live_intervals: matches!(request, TestSpec::Udp(_)),
        accepts_cuts: true,
        request,
        env: host_env(),
    })?;
    let theirs = if token.is_some() {
        // Read before the proof; the answer follows without another.
        Preamble::CURRENT
    } else {
        // An iperf3 server takes sonde's first bytes for its cookie and
        // asks for parameters (state 9) or says it is busy (state -1).
        if matches!(control.peek_byte(HANDSHAKE_TIMEOUT)?, 9 | 0xff) {
            return Err(EngineError::PeerIsIperf3);
        }
        control.recv_preamble(HANDSHAKE_TIMEOUT)?
    };
    let reply = control.recv(
        HANDSHAKE_FRAME_MAX,
        HANDSHAKE_TIMEOUT,
        "the server's answer",
    )?;
    let accepted = match expect_server(reply)? {
        ServerMessage::Accepted {
            test_id,
            env,
            udp_ports,
            cuts,
            spec,
        } => Accepted {
            server,
            test_id,
            env,
            udp_ports,
            cuts,
            spec,
        },
        other => return Err(unexpected("accepted", &other)),
    };
    if theirs.version != PROTOCOL_VERSION {
        tracing::debug!(
            server = theirs.version,
            "server speaks another protocol version"
        );
    }
    Ok((control, accepted))
}

/// Runs `spec` against a sonde server and returns the joined result.
/// Setting `stop` ends the data early (Ctrl-C); the result then covers
/// the time that ran and says it was interrupted.
pub fn run_tcp(
    spec: &TcpSpec,
    stop: &Arc<AtomicBool>,
    on_event: &mut dyn FnMut(TestEvent<'_>),
) -> Result<TestResult, EngineError> {
    if let Some(cc) = &spec.congestion {
        let available = available_congestion();
        if !available.is_empty() && !available.iter().any(|a| a == cc) {
            return Err(EngineError::Unavailable(format!(
                "congestion control '{cc}' is not available here (available: {})",
                available.join(", ")
            )));
        }
    }
    let (mut control, accepted) = handshake(
        &spec.host,
        spec.port,
        spec.family,
        TestSpec::Tcp(spec.clone()),
        &StreamOptions::from(spec),
    )?;
    let cut;
    let spec = match &accepted.spec {
        Some(TestSpec::Tcp(s)) if !accepted.cuts.is_empty() => {
            check_cuts(&accepted.cuts, s.send_duration(), spec.send_duration())?;
            cut = TcpSpec {
                time: s.time,
                parallel: s.parallel.min(spec.parallel),
                bitrate: match (spec.bitrate, s.bitrate) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => b.or(a),
                },
                ..spec.clone()
            };
            &cut
        }
        _ => spec,
    };
    let (server_addr, test_id, server_env) = (accepted.server, accepted.test_id, accepted.env);
    on_event(TestEvent::Accepted {
        server: server_addr,
        env: &server_env,
    });

    let opts = StreamOptions::from(spec);
    let mut streams = Vec::with_capacity(spec.stream_count());
    for i in 0..spec.stream_count() {
        let index = u16::try_from(i).unwrap_or(u16::MAX);
        let mut s = connect(server_addr, &opts.for_stream(spec.cport, i))?;
        let hello = Preamble::CURRENT.encode();
        let frame = sonde_wire::encode_message(&ClientMessage::StreamHello {
            test_id,
            stream: index,
        })?;
        std::io::Write::write_all(&mut s, &[&hello[..], &frame[..]].concat())
            .map_err(EngineError::io("opening a data stream"))?;
        streams.push(DataStream {
            index,
            role: client_role(spec, i),
            stream: s,
            flowlabel: spec.flowlabel,
        });
    }
    let start_msg = control.recv(HANDSHAKE_FRAME_MAX, HANDSHAKE_TIMEOUT, "the start signal")?;
    match expect_server(start_msg)? {
        ServerMessage::Start => {}
        other => return Err(unexpected("start", &other)),
    }
    let start = Instant::now();
    let start_ts = Timestamp::now();
    on_event(TestEvent::Started {
        streams: &opened(&streams),
    });

    let mine = run_side(
        side_plan(spec),
        streams,
        host_env(),
        start,
        stop,
        &mut |live| {
            on_event(TestEvent::Interval(live));
        },
    );
    if stop.load(std::sync::atomic::Ordering::Relaxed) {
        control.send(&ClientMessage::Stop)?;
    }
    control.send(&ClientMessage::Report {
        report: mine.clone(),
    })?;
    let cap = report_frame_cap(spec);
    let reply = control.recv(cap, REPORT_WAIT, "the server's report")?;
    let theirs: SideReport = match expect_server(reply)? {
        ServerMessage::Report { report } => report,
        other => return Err(unexpected("report", &other)),
    };
    let mut server_report = theirs;
    server_report.env = server_env;
    let mut result = tcp_result(spec, PeerKind::Sonde, start_ts, &mine, &server_report)?;
    if let Ok(local) = control.stream().local_addr() {
        result.env.set_ends(local.ip(), server_addr.ip());
    }
    Ok(result)
}
