//! Interoperability with iperf3: sonde as an iperf3 client (`--iperf3`).
//! The protocol is described in docs/iperf3-protocol.md; its byte
//! layouts are in `sonde_wire::iperf3`.

pub mod control;
pub mod tcp_client;
pub mod udp_client;
pub mod udp_data;

use crate::sockopt::StreamOptions;
use crate::EngineError;
use control::Iperf3Control;
use sonde_model::{Direction, SideReport, StreamRole, TcpSpec};
use sonde_wire::iperf3::{self as wire, stream_id, Cookie, Results, State, StreamResult};
use std::time::Duration;

/// How long to wait for the iperf3 server's next state (iperf3's own
/// client waits without a limit; results can take a while after a long
/// test on a slow server).
pub const STATE_WAIT: Duration = Duration::from_secs(30);

/// Connects the control connection. An iperf3 server that has just
/// dropped a test (sonde's own opening, when it did not yet know the
/// server was iperf3) closes its port for a moment before it listens
/// again: a refused or reset connect is retried for up to 3 s.
pub fn connect_control(
    addrs: &[std::net::SocketAddr],
    source: &StreamOptions,
) -> Result<std::net::TcpStream, EngineError> {
    let end = std::time::Instant::now() + Duration::from_secs(3);
    loop {
        match crate::connect::connect_any(addrs, source) {
            Err(EngineError::Connect { source, .. })
                if matches!(
                    source.kind(),
                    std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::ConnectionReset
                ) && std::time::Instant::now() < end =>
            {
                std::thread::sleep(Duration::from_millis(100));
            }
            other => return other,
        }
    }
}

/// Second handles on the data connections, held until the test is over:
/// an iperf3 peer keeps writing until it has seen TEST_END, and a
/// connection closed under it (with data unread) resets, which iperf3
/// takes for a failed test.
pub fn hold_open(streams: &[crate::tcp::side::DataStream]) -> Vec<std::net::TcpStream> {
    streams
        .iter()
        .filter_map(|d| d.stream.try_clone().ok())
        .collect()
}

/// Opens a test: connects, sends a fresh cookie and reads the server's
/// first state. An iperf3 server that has just dropped a connection (as
/// after sonde's own opening) closes and reopens its listening socket; a
/// connection caught in between is reset, so this tries five times.
pub fn open_test(
    addrs: &[std::net::SocketAddr],
    source: &StreamOptions,
) -> Result<(Iperf3Control, Cookie, State), EngineError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let mut control = Iperf3Control::new(connect_control(addrs, source)?);
        let cookie = cookie();
        let first = control
            .send_cookie(&cookie)
            .and_then(|()| control.recv_state(STATE_WAIT));
        match first {
            Ok(state) => return Ok((control, cookie, state)),
            Err(EngineError::Closed { .. } | EngineError::Io { .. }) if attempt < 5 => {
                std::thread::sleep(Duration::from_millis(300));
            }
            Err(e) => return Err(e),
        }
    }
}

/// A fresh cookie for a test.
pub fn cookie() -> Cookie {
    let mut seed = [0u8; 36];
    if getrandom::fill(&mut seed).is_err() {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        for (i, b) in seed.iter_mut().enumerate() {
            *b = (t >> (i % 16 * 8)) as u8 ^ i as u8;
        }
    }
    Cookie::from_random(&seed)
}

/// One end's results as iperf3 exchanges them: per stream, the bytes
/// sent after the warm-up or all bytes received, and a sender's
/// retransmits.
pub fn results_of(side: &SideReport) -> Results {
    let sending = side.streams.iter().any(|s| s.role == StreamRole::Sender);
    let streams = side
        .streams
        .iter()
        .map(|s| {
            let sender = s.role == StreamRole::Sender;
            StreamResult {
                id: stream_id(u32::from(s.stream)),
                bytes: if sender {
                    s.measured_bytes
                } else {
                    s.total_bytes
                },
                retransmits: match (sender, s.final_tcp.and_then(|t| t.total_retrans)) {
                    (true, Some(r)) => {
                        i64::try_from(r.saturating_sub(s.omitted_retrans)).unwrap_or(i64::MAX)
                    }
                    _ => -1,
                },
                jitter: 0.0,
                errors: 0,
                omitted_errors: None,
                packets: 0,
                omitted_packets: None,
                start_time: Some(0.0),
                end_time: Some(s.measured_secs),
            }
        })
        .collect();
    Results {
        cpu_util_total: 0.0,
        cpu_util_user: 0.0,
        cpu_util_system: 0.0,
        sender_has_retransmits: if sending { 1 } else { -1 },
        congestion_used: None,
        server_output_json: None,
        server_output_text: None,
        streams,
    }
}

/// Refuses the options of `spec` that an iperf3 server cannot honour,
/// naming them.
pub fn refuse_unsupported_tcp(spec: &TcpSpec) -> Result<(), EngineError> {
    refuse(whole_seconds(spec.time, spec.omit))
}

/// iperf3 takes whole seconds for `-t` and `-O`.
pub fn whole_seconds(time: Duration, omit: Duration) -> Vec<String> {
    let mut bad = Vec::new();
    if time.subsec_nanos() != 0 {
        bad.push(format!("-t {time:?} (iperf3 takes whole seconds)"));
    }
    if omit.subsec_nanos() != 0 {
        bad.push(format!("-O {omit:?} (iperf3 takes whole seconds)"));
    }
    bad
}

/// An error naming every option in `bad`, if any.
pub fn refuse(bad: Vec<String>) -> Result<(), EngineError> {
    if bad.is_empty() {
        Ok(())
    } else {
        Err(EngineError::Unavailable(format!(
            "an iperf3 server cannot honour: {}",
            bad.join("; ")
        )))
    }
}

/// sonde's direction as iperf3's parameters say it.
pub fn wire_direction(d: Direction) -> wire::Direction {
    match d {
        Direction::Forward => wire::Direction::Forward,
        Direction::Reverse => wire::Direction::Reverse,
        Direction::Bidir => wire::Direction::Bidirectional,
    }
}

/// iperf3's direction as sonde says it.
pub fn sonde_direction(d: wire::Direction) -> Direction {
    match d {
        wire::Direction::Forward => Direction::Forward,
        wire::Direction::Reverse => Direction::Reverse,
        wire::Direction::Bidirectional => Direction::Bidir,
    }
}

/// What an unexpected state from the server means.
fn state_error(control: &mut Iperf3Control, state: State) -> EngineError {
    match state {
        State::AccessDenied => EngineError::PeerBusy,
        State::ServerError => match control.recv_server_error(Duration::from_secs(2)) {
            Ok(e) => EngineError::Aborted(format!(
                "the iperf3 server reported error {} ({}){}",
                e.i_errno,
                e.description().unwrap_or("no description"),
                e.errno
                    .map(|n| format!(", system error {n}"))
                    .unwrap_or_default()
            )),
            Err(e) => e,
        },
        State::ServerTerminate => {
            EngineError::Aborted("the iperf3 server terminated the test".into())
        }
        other => EngineError::Unexpected {
            expected: "the next iperf3 state",
            got: format!("{other:?}"),
        },
    }
}

/// The server's own output in its results (`--get-server-output`): its
/// text, or its JSON document written out as text.
pub(crate) fn server_output(theirs: &Results) -> Option<String> {
    theirs
        .server_output_text
        .clone()
        .or_else(|| theirs.server_output_json.as_ref().map(|v| v.to_string()))
}
