//! What sonde's iperf3 client does in both its TCP and UDP tests
//! (`--iperf3`): open the control connection and the test, refuse what an
//! iperf3 server cannot honour, read its states and its output. What the
//! client and sonde's iperf3 server share is the engine's
//! (`sonde_engine::iperf3`).

use sonde_engine::iperf3::control::Iperf3Control;
use sonde_engine::sockopt::StreamOptions;
use sonde_engine::EngineError;
use sonde_model::{Direction, TcpSpec};
use sonde_wire::iperf3::{self as wire, Cookie, Results, State};
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
        match sonde_engine::connect::connect_any(addrs, source) {
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

/// The parameters TCP and UDP tests give an iperf3 server alike: the
/// protocol, direction, time, streams, warm-up and length, then the
/// marking, the flow label and a volume bound (iperf3's own `num` or
/// `blockcount`; the time stays, as the upper bound: an iperf3 server only
/// sizes its watchdog by it).
pub(crate) struct Common {
    pub protocol: wire::Protocol,
    pub direction: Direction,
    pub time: Duration,
    pub parallel: u16,
    pub omit: Duration,
    pub length: u32,
    pub dscp: Option<sonde_model::Dscp>,
    pub flowlabel: Option<u32>,
    pub volume: Option<sonde_model::Volume>,
}

impl Common {
    pub(crate) fn params(self) -> wire::Params {
        let secs = |d: Duration| u32::try_from(d.as_secs()).unwrap_or(u32::MAX);
        let mut p = wire::Params::client(
            self.protocol,
            wire_direction(self.direction),
            secs(self.time),
            u32::from(self.parallel),
        )
        .with_omit(secs(self.omit))
        .with_len(self.length);
        if let Some(d) = self.dscp {
            p = p.with_tos(d.tos_byte());
        }
        if let Some(f) = self.flowlabel {
            p = p.with_flowlabel(f);
        }
        match self.volume {
            Some(sonde_model::Volume::Bytes(n)) => p.num = n,
            Some(sonde_model::Volume::Blocks(k)) => p.blockcount = k,
            None => {}
        }
        p
    }
}

/// What an unexpected state from the server means.
pub(crate) fn state_error(control: &mut Iperf3Control, state: State) -> EngineError {
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
pub fn server_output(theirs: &Results) -> Option<String> {
    theirs
        .server_output_text
        .clone()
        .or_else(|| theirs.server_output_json.as_ref().map(|v| v.to_string()))
}
