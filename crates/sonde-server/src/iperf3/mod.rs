//! iperf3 clients on sonde's port (docs/iperf3-protocol.md): a connection
//! whose first bytes are not sonde's preamble is iperf3's. A cookie that
//! names a test waiting for data connections makes it one of them; any
//! other starts a test: the client's address is checked, its parameters
//! read, and the test admitted and run by [`tcp`] or [`udp`] with sonde's
//! data loops and limits, answered in iperf3's protocol.

mod exchange;
mod output;
mod params;
mod refuse;
mod results;
mod tcp;
mod udp;

use crate::admission::{admit_as, Admissible, Asker};
use crate::audit::{Asked, Outcome, Proto};
use crate::limits::check_client;
use crate::state::Shared;
use exchange::STEP_WAIT;
use sonde_engine::iperf3::control::Iperf3Control;
use sonde_engine::EngineError;
use sonde_wire::iperf3::{errno, Cookie, Protocol, State};
use sonde_wire::{Refusal, TestId};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The test id a cookie stands for in the registry.
fn cookie_id(cookie: &Cookie) -> TestId {
    let mut id = [0u8; 16];
    for (i, b) in cookie.as_bytes().iter().enumerate() {
        id[i % 16] ^= b.rotate_left((i / 16) as u32);
    }
    TestId(id)
}

/// What a connection that opened with an iperf3 cookie turned out to be.
#[derive(Debug)]
pub(crate) enum Opened {
    /// A data connection, handed to its test.
    Data,
    /// A new test: PARAM_EXCHANGE was sent, its parameters come next
    /// (for [`run_test`]).
    Test(TcpStream, TestId),
    /// A client that may not test, told so; or one gone already.
    Done,
}

/// Reads the cookie of a connection whose cookie is in (the acceptor has
/// seen it, so nothing here waits): a cookie that names a test waiting for
/// data connections makes it one of them; any other starts a test, if the
/// client may test. `accepted` is its place in the server's accept order.
pub(crate) fn open(
    stream: TcpStream,
    peer: SocketAddr,
    shared: &Arc<Shared>,
    accepted: u64,
) -> Result<Opened, EngineError> {
    let mut control = Iperf3Control::new(stream);
    let cookie = control.recv_cookie(Duration::from_millis(100))?;
    let id = cookie_id(&cookie);
    if shared.registry().is_open(id) {
        let stream = control.into_stream();
        shared
            .registry()
            .deliver_accepted(id, accepted, peer.ip(), stream);
        return Ok(Opened::Data);
    }
    // Checked before the parameters are asked for: a client that may not
    // test is turned away at once.
    let access = shared.access();
    let class = access.class_for(None, peer.ip());
    let allowed = check_client(&class.limits, peer.ip()).and_then(|()| {
        // iperf3 clients cannot hold a token.
        if shared.access().iperf3 {
            Ok(())
        } else {
            Err(Refusal::AuthRequired)
        }
    });
    if let Err(refusal) = allowed {
        let asked = Asked::default();
        Asker::new(peer, Proto::Iperf3).audit(
            shared,
            &class.name,
            &asked,
            Outcome::Refused,
            Some(refusal.to_string()),
        );
        deny(control, peer, &refusal, None)?;
        return Ok(Opened::Done);
    }
    control.send_state(State::ParamExchange)?;
    Ok(Opened::Test(control.into_stream(), id))
}

/// Runs test `id` whose client was sent PARAM_EXCHANGE (by [`open`])
/// and whose parameters are in; `deadline` is its handshake's (the UDP
/// connects included).
pub(crate) fn run_test(
    stream: TcpStream,
    peer: SocketAddr,
    id: TestId,
    shared: &Arc<Shared>,
    deadline: Instant,
) -> Result<(), EngineError> {
    let mut control = Iperf3Control::new(stream);
    let p = match control.recv_params(STEP_WAIT) {
        Ok(p) => p,
        Err(EngineError::Wire(e)) => {
            let answer = refuse::malformed_params(&e);
            tracing::warn!(name: "test_refused", %peer, reason = "invalid_spec", error = %e, iperf3_answer = ?answer, "iperf3 parameters refused");
            return refuse::send(&mut control, answer);
        }
        Err(e) => return Err(e),
    };
    let version = p.client_version.clone();
    let limit = shared
        .access()
        .class_for(None, peer.ip())
        .limits
        .max_duration;
    let outcome = match p.protocol {
        Protocol::Tcp => run_admitted(
            control,
            peer,
            params::tcp_spec(&p, peer, limit),
            shared,
            version.as_deref(),
            |c, spec| tcp::run(c, peer, spec, &p, id, shared, deadline),
        ),
        Protocol::Udp => run_admitted(
            control,
            peer,
            params::udp_spec(&p, peer, limit),
            shared,
            version.as_deref(),
            |c, spec| udp::run(c, peer, spec, &p, deadline),
        ),
        Protocol::Sctp => {
            tracing::warn!(name: "test_refused", %peer, reason = "unavailable", "iperf3 SCTP test refused: sonde serves TCP and UDP only");
            refuse::send(&mut control, refuse::Answer::Error(errno::IENOSCTP))
        }
    };
    // A test that failed once admitted is the server's news, not only the
    // connection's.
    if let Err(e) = &outcome {
        tracing::warn!(name: "test_failed", %peer, error = %e, "iperf3 test failed");
    }
    outcome
}

/// Admits the test the client's parameters make (`spec`) and runs it with
/// `run`, holding its test slot; or denies it.
fn run_admitted<S: Admissible>(
    control: Iperf3Control,
    peer: SocketAddr,
    spec: Result<S, Refusal>,
    shared: &Arc<Shared>,
    version: Option<&str>,
    run: impl FnOnce(&mut Iperf3Control, &S) -> Result<(), EngineError>,
) -> Result<(), EngineError> {
    // iperf3's protocol cannot tell a client of a cut: over its class's
    // limits, an iperf3 test is refused.
    let asker = Asker::new(peer, Proto::Iperf3);
    let admitted = spec.and_then(|spec| admit_as(shared, &asker, &spec).map(|a| (spec, a.slot)));
    let (spec, slot) = match admitted {
        Ok(a) => a,
        Err(refusal) => return deny(control, peer, &refusal, version),
    };
    let mut control = control;
    let result = run(&mut control, &spec);
    drop(slot);
    // A test that failed here tells the client so (iperf3's server
    // sends its error number too), rather than closing on it; a client
    // that has gone does not read it.
    if result.is_err() {
        let _ = refuse::send(&mut control, refuse::Answer::Error(errno::IESERVERTERM));
    }
    result
}

/// Refuses the test with iperf3's error for the reason; the reason in
/// sonde's words goes to the log.
fn deny(
    mut control: Iperf3Control,
    peer: SocketAddr,
    refusal: &Refusal,
    version: Option<&str>,
) -> Result<(), EngineError> {
    let answer = refuse::answer(refusal, version);
    crate::log_refused(peer, refusal, "iperf3 test refused");
    tracing::debug!(%peer, iperf3_answer = ?answer, "iperf3's answer");
    refuse::send(&mut control, answer)
}
