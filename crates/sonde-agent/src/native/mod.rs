//! Connections that open with sonde's preamble: the native control
//! protocol (docs/protocol.md). A connection's first message makes it a
//! test request, admitted here and run by [`tcp`] or [`udp`], or a data
//! connection, handed to the test waiting for it.

mod malformed;
mod tcp;
mod third_party;
mod udp;
mod watcher;

use crate::admission::{admit, Admissible};
use crate::state::Shared;
use sonde_engine::control::Control;
use sonde_engine::EngineError;
use sonde_model::{HostEnv, TestSpec};
use sonde_wire::{
    ClientMessage, Preamble, Refusal, ServerMessage, TestId, HANDSHAKE_FRAME_MAX, PROTOCOL_VERSION,
};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Serves one connection that opened with sonde's magic; `deadline` is
/// when its handshake must be done (the UDP connect exchange included).
pub(crate) fn handle(
    stream: TcpStream,
    peer: SocketAddr,
    shared: &Arc<Shared>,
    deadline: Instant,
) -> Result<(), EngineError> {
    let hello_wait = || {
        deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1))
    };
    let mut control = Control::new(stream);
    let preamble: Preamble = control.recv_preamble(hello_wait())?;
    if preamble.version != PROTOCOL_VERSION {
        let refusal = Refusal::UnsupportedVersion {
            offered: preamble.version,
            supported: PROTOCOL_VERSION,
        };
        return refuse(control, peer, refusal);
    }
    let first = preamble
        .check_reserved()
        .map_err(EngineError::from)
        .and_then(|()| control.recv(HANDSHAKE_FRAME_MAX, hello_wait(), "the first message"));
    let first: ClientMessage = match first {
        Ok(m) => m,
        Err(e) => match malformed::refusal(&e) {
            Some(refusal) => return refuse(control, peer, refusal),
            None => return Err(e),
        },
    };
    match first {
        ClientMessage::TestRequest {
            request,
            env,
            live_intervals,
        } => run_request(
            control,
            peer,
            request,
            &env,
            live_intervals,
            shared,
            deadline,
        ),
        ClientMessage::ThirdPartyRequest { request, env } => {
            third_party::run(control, peer, request, &env, shared)
        }
        ClientMessage::StreamHello { test_id, stream } => {
            shared
                .registry()
                .deliver(test_id, stream, peer.ip(), control.into_stream());
            Ok(())
        }
        other => refuse(control, peer, malformed::unexpected_first(&other)),
    }
}

/// Runs one test request from `peer` to the end: the one place a
/// [`TestSpec`] is taken apart.
fn run_request(
    control: Control,
    peer: SocketAddr,
    request: TestSpec,
    client_env: &HostEnv,
    live_intervals: bool,
    shared: &Arc<Shared>,
    deadline: Instant,
) -> Result<(), EngineError> {
    match request {
        TestSpec::Tcp(spec) => run_admitted(control, peer, &spec, client_env, shared, |c, id| {
            tcp::run(c, peer, &spec, id, shared, deadline)
        }),
        TestSpec::Udp(spec) => run_admitted(control, peer, &spec, client_env, shared, |c, id| {
            udp::run(c, peer, &spec, id, live_intervals, deadline)
        }),
        TestSpec::Http(_) => refuse(
            control,
            peer,
            Refusal::Unavailable {
                what: "http tests (an HTTP benchmark goes to a web server)".into(),
            },
        ),
        // A ping needs no sonde server: ICMP echo, or STAMP to the reflector.
        TestSpec::Ping(_) => refuse(
            control,
            peer,
            Refusal::Unavailable {
                what: "ping tests (ping needs no sonde server: ICMP, or STAMP to the reflector)"
                    .into(),
            },
        ),
    }
}

/// Admits `spec` and runs it with `run`, holding its test slot; or tells
/// the client why not.
fn run_admitted(
    control: Control,
    peer: SocketAddr,
    spec: &impl Admissible,
    client_env: &HostEnv,
    shared: &Arc<Shared>,
    run: impl FnOnce(Control, TestId) -> Result<(), EngineError>,
) -> Result<(), EngineError> {
    let slot = match admit(shared, peer.ip(), spec) {
        Ok(slot) => slot,
        Err(refusal) => return refuse(control, peer, refusal),
    };
    let id = new_test_id();
    tracing::info!(%peer, test = %id, client = %format!("sonde {} on {} {}", client_env.sonde_version, client_env.os, client_env.kernel), "client");
    let result = run(control, id);
    drop(slot);
    result
}

fn refuse(mut control: Control, peer: SocketAddr, refusal: Refusal) -> Result<(), EngineError> {
    tracing::warn!(%peer, %refusal, "test refused");
    control.send_preamble()?;
    control.send(&ServerMessage::Refused { refusal })
}

fn new_test_id() -> TestId {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No OS randomness: fall back to time and address bits, still
        // unique per test and checked against the client address.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        bytes = t.to_le_bytes();
    }
    TestId(bytes)
}
