//! Connections that open with sonde's preamble: the native control
//! protocol (docs/protocol.md). A connection's first message makes it a
//! test request, admitted here and run by [`tcp`] or [`udp`], or a data
//! connection, handed to the test waiting for it.

mod auth;
mod malformed;
mod tcp;
mod third_party;
mod udp;
mod watcher;

use crate::admission::{admit_as, Admissible, Asker};
use crate::audit::{Asked, Outcome, Proto};
use crate::state::{Shared, TestSlot};
use sonde_engine::control::Control;
use sonde_engine::EngineError;
use sonde_model::{HostEnv, TestSpec};
use sonde_wire::{
    ClientMessage, Cut, Preamble, Refusal, ServerMessage, TestId, HANDSHAKE_FRAME_MAX,
    PROTOCOL_VERSION,
};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};
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
    let (first, identity) = match first {
        ClientMessage::AuthHello {
            token_name,
            client_nonce,
        } => {
            let Some(identity) = auth::exchange(
                &mut control,
                peer,
                &token_name,
                client_nonce,
                shared,
                deadline,
            )?
            else {
                return Ok(());
            };
            let next = control.recv(HANDSHAKE_FRAME_MAX, hello_wait(), "the request");
            match next {
                Ok(m) => (m, Some(identity)),
                Err(e) => match malformed::refusal(&e) {
                    Some(refusal) => return refuse(control, peer, refusal),
                    None => return Err(e),
                },
            }
        }
        other => (other, None),
    };
    let token = identity.as_ref().map(|i| i.token.as_str());
    if identity.is_none()
        && shared.access().required
        && matches!(
            first,
            ClientMessage::TestRequest { .. } | ClientMessage::ThirdPartyRequest { .. }
        )
    {
        let class = shared.access().class_for(None, peer.ip()).name.clone();
        Asker::new(peer, Proto::Native).audit(
            shared,
            &class,
            &Asked::default(),
            Outcome::Refused,
            Some(Refusal::AuthRequired.to_string()),
        );
        shared.counters().refused(&Refusal::AuthRequired);
        return refuse(control, peer, Refusal::AuthRequired);
    }
    match first {
        ClientMessage::TestRequest {
            request,
            env,
            live_intervals,
            accepts_cuts,
        } => {
            let asker = Asker {
                token,
                takes_cuts: accepts_cuts,
                ..Asker::new(peer, Proto::Native)
            };
            run_request(
                control,
                &asker,
                request,
                &env,
                live_intervals,
                shared,
                deadline,
            )
        }
        ClientMessage::ThirdPartyRequest { request, env } => {
            third_party::run(control, peer, request, &env, shared, identity.as_ref())
        }
        ClientMessage::StreamHello { test_id, stream } => {
            shared
                .registry()
                .deliver(test_id, stream, peer.ip(), control.into_stream());
            Ok(())
        }
        // A proof out of turn, or a second exchange on one connection.
        ClientMessage::AuthProof { .. } => {
            auth::fail(control, peer, token, "auth_proof out of turn", shared)
        }
        ClientMessage::AuthHello { .. } => {
            auth::fail(control, peer, token, "a second auth_hello", shared)
        }
        other => refuse(control, peer, malformed::unexpected_first(&other)),
    }
}

/// How an admitted test runs: the cuts the server made (told to the
/// client with the spec it runs), whether a rate cap binds it, and the
/// slot it holds.
#[derive(Debug)]
pub(crate) struct Terms {
    pub cuts: Vec<Cut>,
    pub rate_capped: bool,
    slot: Mutex<Option<TestSlot>>,
}

impl Terms {
    /// Gives the test's slot back now, before the server's last word: the
    /// abort of a test whose streams never came, or the report of one
    /// whose traffic is over. A client that reads it finds the slot free
    /// (it went back only after that word, and a client that asked again
    /// at once was told the server was busy). Otherwise the slot goes
    /// back when the run returns.
    pub(crate) fn release_slot(&self) {
        if let Ok(mut slot) = self.slot.lock() {
            slot.take();
        }
    }

    /// The `accepted` message's cuts and spec.
    pub(crate) fn told(&self, spec: impl FnOnce() -> TestSpec) -> (Vec<Cut>, Option<TestSpec>) {
        if self.cuts.is_empty() {
            (Vec::new(), None)
        } else {
            (self.cuts.clone(), Some(spec()))
        }
    }
}

/// Runs one test request from `peer` to the end: the one place a
/// [`TestSpec`] is taken apart.
fn run_request(
    control: Control,
    asker: &Asker<'_>,
    request: TestSpec,
    client_env: &HostEnv,
    live_intervals: bool,
    shared: &Arc<Shared>,
    deadline: Instant,
) -> Result<(), EngineError> {
    let peer = asker.peer;
    match request {
        TestSpec::Tcp(spec) => run_admitted(
            control,
            asker,
            &spec,
            client_env,
            shared,
            |c, id, spec, terms| tcp::run(c, peer, spec, id, shared, deadline, terms),
        ),
        TestSpec::Udp(spec) => run_admitted(
            control,
            asker,
            &spec,
            client_env,
            shared,
            |c, id, spec, terms| udp::run(c, peer, spec, id, live_intervals, deadline, terms),
        ),
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
        TestSpec::Trace(_) => refuse(
            control,
            peer,
            Refusal::Unavailable {
                what: "traces (a trace needs no sonde server: it is ICMP, UDP or TCP SYN probes)"
                    .into(),
            },
        ),
    }
}

/// Admits `spec` and runs it with `run`, holding its test slot; or tells
/// the client why not.
fn run_admitted<S: Admissible>(
    control: Control,
    asker: &Asker<'_>,
    spec: &S,
    client_env: &HostEnv,
    shared: &Arc<Shared>,
    run: impl FnOnce(Control, TestId, &S, &Terms) -> Result<(), EngineError>,
) -> Result<(), EngineError> {
    let peer = asker.peer;
    let admitted = match admit_as(shared, asker, spec) {
        Ok(a) => a,
        Err(refusal) => return refuse(control, peer, refusal),
    };
    let id = new_test_id();
    tracing::info!(name: "test_admitted", %peer, test = %id, client = %format!("sonde {} on {} {}", client_env.sonde_version, client_env.os, client_env.kernel), "client");
    let terms = Terms {
        cuts: admitted.cuts,
        rate_capped: admitted.rate_capped,
        slot: Mutex::new(Some(admitted.slot)),
    };
    let result = run(control, id, &admitted.spec, &terms);
    drop(terms);
    result
}

fn refuse(mut control: Control, peer: SocketAddr, refusal: Refusal) -> Result<(), EngineError> {
    crate::log_refused(peer, &refusal, "test refused");
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
