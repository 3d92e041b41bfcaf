//! `sonde tcp --iperf3`: a TCP test against a stock iperf3 server. sonde
//! moves and measures the data as it does against its own server; what
//! the iperf3 server reports (bytes per stream, its retransmits) takes the
//! place of a sonde server's report.

use crate::iperf3_client::{refuse_unsupported_tcp, Common, STATE_WAIT};
use sonde_engine::connect::{connect, resolve_from};
use sonde_engine::host_env::host_env;
use sonde_engine::iperf3::results_of;
use sonde_engine::sockopt::StreamOptions;
use sonde_engine::tcp::protocol::{client_role, opened, side_plan, TestEvent};
use sonde_engine::tcp::side::{run_side, DataStream};
use sonde_engine::EngineError;
use sonde_model::assemble::tcp_result;
use sonde_model::{
    HostEnv, PeerKind, SideReport, SocketInForce, StreamLayout, StreamRole, StreamSide,
    TcpInfoSnapshot, TcpSpec, TestResult, Timestamp,
};
use sonde_wire::iperf3::{stream_id, Params, Protocol, Results, State};
use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

/// The parameters of `spec` as iperf3 takes them.
pub fn tcp_params(spec: &TcpSpec) -> Params {
    let mut p = Common {
        protocol: Protocol::Tcp,
        direction: spec.direction,
        time: spec.time,
        parallel: spec.parallel,
        omit: spec.omit,
        length: u32::try_from(spec.length.bytes()).unwrap_or(u32::MAX),
        dscp: spec.dscp,
        flowlabel: spec.flowlabel,
        volume: spec.volume(),
    }
    .params();
    if let Some(r) = spec.bitrate {
        p = p.with_bandwidth(r.bps());
    }
    if let Some(w) = spec.window {
        p = p.with_window(u32::try_from(w.bytes()).unwrap_or(u32::MAX));
    }
    p.nodelay = spec.no_delay;
    p.zerocopy = spec.zerocopy;
    p.mss = spec.mss.unwrap_or(0);
    p.congestion = spec.congestion.clone();
    p.title = spec.title.clone();
    p.get_server_output = spec.get_server_output;
    p
}

/// The iperf3 server's results as the report a sonde server would give.
fn their_report(spec: &TcpSpec, theirs: &Results, mine: &SideReport) -> SideReport {
    let streams = mine
        .streams
        .iter()
        // A stream the server did not report is left out: the assembly
        // then says which one is missing, instead of counting it as 0.
        .filter_map(|ours| {
            let found = theirs.stream(stream_id(u32::from(ours.stream)));
            let bytes = found?.bytes;
            Some(StreamSide {
                stream: ours.stream,
                role: ours.role.opposite(),
                // iperf3 reports a sender's retransmits and nothing else of
                // its TCP_INFO.
                final_tcp: found
                    .and_then(|s| s.retransmits())
                    .map(|r| TcpInfoSnapshot {
                        total_retrans: Some(r),
                        ..TcpInfoSnapshot::default()
                    }),
                // The far end of our socket, as far as this end knows it:
                // iperf3 reports only a sender's congestion control.
                socket: SocketInForce {
                    congestion: theirs
                        .congestion_used
                        .clone()
                        .filter(|_| ours.role == StreamRole::Receiver),
                    ..ours.socket.far_end()
                },
                total_bytes: bytes,
                measured_bytes: bytes,
                measured_secs: found
                    .and_then(|s| s.duration())
                    .filter(|t| *t > 0.0)
                    .unwrap_or(spec.time.as_secs_f64()),
                omitted_retrans: 0,
                samples: Vec::new(),
            })
        })
        .collect();
    SideReport {
        env: HostEnv::unknown("iperf3"),
        windows: Vec::new(),
        streams,
        stopped_early: false,
    }
}

/// Runs `spec` against the iperf3 server at its host and port.
pub fn run_iperf3_tcp(
    spec: &TcpSpec,
    stop: &Arc<AtomicBool>,
    on_event: &mut dyn FnMut(TestEvent<'_>),
) -> Result<TestResult, EngineError> {
    refuse_unsupported_tcp(spec)?;
    let opts = StreamOptions::from(spec);
    let addrs = resolve_from(&spec.host, spec.port, spec.family, spec.bind)?;
    let (mut control, cookie, first) = crate::iperf3_client::open_test(&addrs, &opts)?;
    let server: SocketAddr = control
        .stream()
        .peer_addr()
        .map_err(EngineError::io("reading the server's address"))?;
    let mut next = Some(first);
    let mut streams = Vec::new();
    let mut mine: Option<(SideReport, Timestamp)> = None;
    let mut held = Vec::new();
    loop {
        let state = match next.take() {
            Some(s) => s,
            None => control.recv_state(STATE_WAIT)?,
        };
        match state {
            State::ParamExchange => control.send_params(&tcp_params(spec))?,
            State::CreateStreams => {
                for i in 0..spec.stream_count() {
                    let index = u16::try_from(i).unwrap_or(u16::MAX);
                    let mut s = connect(server, &opts.for_stream(spec.cport, i))?;
                    s.write_all(cookie.as_bytes())
                        .map_err(EngineError::io("opening an iperf3 data stream"))?;
                    streams.push(DataStream {
                        index,
                        role: client_role(spec, i),
                        stream: s,
                        flowlabel: spec.flowlabel,
                    });
                }
            }
            State::TestStart => {
                let env = HostEnv::unknown("iperf3");
                on_event(TestEvent::Accepted { server, env: &env });
            }
            State::TestRunning => {
                let start = Instant::now();
                let start_ts = Timestamp::now();
                let mut plan = side_plan(spec);
                // iperf3's client counts what arrived until its timer;
                // so does sonde against an iperf3 server.
                plan.receive_grace = std::time::Duration::ZERO;
                // iperf3 keeps its streams open after a volume: this end's
                // receivers stop when it has arrived, as iperf3's client.
                plan.receive_budget = spec.byte_budget();
                held = sonde_engine::iperf3::hold_open(&streams);
                on_event(TestEvent::Started {
                    streams: &opened(&streams),
                });
                let report = run_side(
                    plan,
                    std::mem::take(&mut streams),
                    host_env(),
                    start,
                    stop,
                    &mut |live| {
                        on_event(TestEvent::Interval(live));
                    },
                );
                control.send_state(State::TestEnd)?;
                mine = Some((report, start_ts));
            }
            State::ExchangeResults => {
                let (report, _) = mine.as_ref().ok_or(EngineError::Unexpected {
                    expected: "TEST_RUNNING before EXCHANGE_RESULTS",
                    got: "EXCHANGE_RESULTS".into(),
                })?;
                control.send_results(&results_of(report))?;
                let theirs = control.recv_results(STATE_WAIT)?;
                let (report, start_ts) = mine
                    .take()
                    .ok_or(EngineError::Closed { during: "results" })?;
                let server_report = their_report(spec, &theirs, &report);
                // DISPLAY_RESULTS, then we are done.
                let next = control.recv_state(STATE_WAIT)?;
                if next == State::DisplayResults {
                    control.send_state(State::IperfDone)?;
                }
                drop(held);
                let mut result =
                    tcp_result(spec, PeerKind::Iperf3, start_ts, &report, &server_report)?;
                result.server_output = crate::iperf3_client::server_output(&theirs);
                return Ok(result);
            }
            other => return Err(crate::iperf3_client::state_error(&mut control, other)),
        }
    }
}
