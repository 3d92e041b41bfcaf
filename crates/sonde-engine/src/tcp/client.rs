//! The client end of a native TCP test: ask the server, open the streams,
//! run this end, swap reports, assemble the result.

use crate::connect::{connect, connect_any, resolve_from};
use crate::control::Control;
use crate::host_env::{available_congestion, host_env};
use crate::sockopt::StreamOptions;
use crate::tcp::side::{run_side, DataStream, LiveInterval, SidePlan, DRAIN_GRACE};
use crate::EngineError;
use sonde_model::assemble::tcp_result;
use sonde_model::StreamLayout;
use sonde_model::{
    HostEnv, IpFamily, PeerKind, SideReport, StreamRole, TcpSpec, TestResult, TestSpec, Timestamp,
};
use sonde_wire::{
    ClientMessage, Cut, Preamble, ServerMessage, TestId, HANDSHAKE_FRAME_MAX, PROTOCOL_VERSION,
};
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long each step of the handshake may take.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What a running test tells its caller.
#[derive(Debug)]
pub enum TestEvent<'a> {
    /// The server accepted; data streams are next.
    Accepted {
        server: SocketAddr,
        env: &'a HostEnv,
    },
    /// Every stream is connected and data starts to flow.
    Started {
        streams: &'a [(u16, StreamRole, SocketAddr, SocketAddr)],
    },
    Interval(&'a LiveInterval),
}

/// Each connected stream: its number, this end's role, and both addresses
/// (what [`TestEvent::Started`] tells).
pub fn opened(streams: &[DataStream]) -> Vec<(u16, StreamRole, SocketAddr, SocketAddr)> {
    streams
        .iter()
        .filter_map(|d| {
            Some((
                d.index,
                d.role,
                d.stream.local_addr().ok()?,
                d.stream.peer_addr().ok()?,
            ))
        })
        .collect()
}

/// The largest report frame either end reads, whatever the test asks: a
/// server admits no test whose report could be larger (its refusal names
/// `report_size`), so no client can make it hold more than this.
pub const MAX_REPORT_FRAME: usize = 24 * 1024 * 1024;

/// Interval windows a test of `duration` cut every `interval` can have.
pub fn report_windows(duration: Duration, interval: Duration) -> usize {
    if interval.is_zero() {
        2
    } else {
        (duration.as_secs_f64() / interval.as_secs_f64()).ceil() as usize + 3
    }
}

/// The largest report frame a test of `spec` can produce: every stream's
/// samples with room to spare (before [`MAX_REPORT_FRAME`]).
pub fn report_frame_need(spec: &TcpSpec) -> usize {
    let windows = report_windows(spec.send_duration(), spec.interval);
    HANDSHAKE_FRAME_MAX.saturating_add(
        spec.stream_count()
            .saturating_mul(windows)
            .saturating_mul(600),
    )
}

/// The report frame cap of a test of `spec`, both ends.
pub fn report_frame_cap(spec: &TcpSpec) -> usize {
    report_frame_need(spec).min(MAX_REPORT_FRAME)
}

/// This end's role for stream `index` of `spec`, seen from the client.
pub fn client_role(spec: &TcpSpec, index: usize) -> StreamRole {
    match spec.stream_direction(index) {
        sonde_model::Direction::Reverse => StreamRole::Receiver,
        _ => StreamRole::Sender,
    }
}

/// The same plan on both ends: the server caps apply where they bind.
pub fn side_plan(spec: &TcpSpec) -> SidePlan {
    SidePlan {
        omit: spec.omit,
        time: spec.time,
        interval: spec.interval,
        length: usize::try_from(spec.length.bytes()).unwrap_or(usize::MAX),
        send_rate: spec.bitrate,
        receive_rate: None,
        receive_grace: DRAIN_GRACE,
        send_budget: spec.byte_budget(),
        receive_budget: None,
        zerocopy: spec.zerocopy,
    }
}

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
        let class = crate::auth::authenticate(&mut control, token, HANDSHAKE_TIMEOUT)?;
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

/// How long to wait for the peer's report after this end's data stopped:
/// the peer may still be draining (DRAIN_GRACE), then answers.
pub const REPORT_WAIT: Duration =
    Duration::from_secs(DRAIN_GRACE.as_secs() + HANDSHAKE_TIMEOUT.as_secs());

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
