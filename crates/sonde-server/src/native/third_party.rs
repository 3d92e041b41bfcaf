//! Third-party tests (docs/protocol.md): a client asks this server to run
//! a TCP or UDP test itself, as a client, toward another sonde server.
//!
//! Only clients in `third_party_allow`, or holding a token that `may`
//! ask for them, may ask (none by default), and the test must fit the
//! client's class's limits here and hold one of this server's test slots.
//! The test always speaks sonde's protocol to the target, never iperf3's:
//! the target's own server must accept it, so its handshake and limits
//! apply, and nothing is sent toward an address that did not agree. The
//! client hears the target's acceptance, each interval, and the result;
//! closing its connection stops the test.

use super::refuse;
use crate::access::Identity;
use crate::admission::{admit_as, Asker};
use crate::audit::{Asked, Outcome, Proto};
use crate::limits::check_third_party;
use crate::state::Shared;
use crate::third_party_runner::ThirdPartyRunner;
use sonde_engine::control::Control;
use sonde_engine::EngineError;
use sonde_model::{Event, HostEnv, PeerKind, TestSpec};
use sonde_wire::{ClientMessage, Refusal, ServerMessage, HANDSHAKE_FRAME_MAX};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Runs a third-party request from `peer` to the end, or refuses it.
pub(super) fn run(
    mut control: Control,
    peer: SocketAddr,
    request: TestSpec,
    client_env: &HostEnv,
    shared: &Arc<Shared>,
    identity: Option<&Identity>,
) -> Result<(), EngineError> {
    let token = identity.map(|i| i.token.as_str());
    let target = spec_target(&request);
    if !identity.is_some_and(|i| i.third_party) {
        if let Err(refusal) = check_third_party(&shared.limits(), peer.ip()) {
            let class = shared.access().class_for(token, peer.ip()).name.clone();
            let asked = Asked {
                test: Some(format!("third_party_{}", request.kind().name())),
                target: Some(target),
                ..Asked::default()
            };
            let asker = Asker {
                token,
                ..Asker::new(peer, Proto::Native)
            };
            asker.audit(
                shared,
                &class,
                &asked,
                Outcome::Refused,
                Some(refusal.to_string()),
            );
            return refuse(control, peer, refusal);
        }
    }
    let Some(runner) = shared.third_party() else {
        let refusal = Refusal::Unavailable {
            what: "third-party tests (this server runs none of its own)".into(),
        };
        return refuse(control, peer, refusal);
    };
    let kind = format!("third_party_{}", request.kind().name());
    let asker = Asker {
        token,
        kind: Some(&kind),
        target: Some(&target),
        ..Asker::new(peer, Proto::Native)
    };
    let (spec, slot) = match request {
        TestSpec::Tcp(mut s) => {
            s.peer = PeerKind::Sonde;
            let slot = admit_as(shared, &asker, &s).map(|a| a.slot);
            (TestSpec::Tcp(s), slot)
        }
        TestSpec::Udp(mut s) => {
            s.peer = PeerKind::Sonde;
            let slot = admit_as(shared, &asker, &s).map(|a| a.slot);
            (TestSpec::Udp(s), slot)
        }
        TestSpec::Ping(_) | TestSpec::Http(_) | TestSpec::Trace(_) => {
            let refusal = Refusal::Unavailable {
                what:
                    "third-party ping and http tests (a third-party agent runs tcp and udp tests)"
                        .into(),
            };
            return refuse(control, peer, refusal);
        }
    };
    let slot = match slot {
        Ok(slot) => slot,
        Err(refusal) => return refuse(control, peer, refusal),
    };
    tracing::info!(name: "third_party_test", %peer, %target, client = %format!("sonde {} on {}", client_env.sonde_version, client_env.os), "third-party test");
    control.send_preamble()?;
    let stop = Arc::new(AtomicBool::new(false));
    watch_client(&control, &stop)?;
    let outcome = run_relayed(&mut control, runner.as_ref(), &spec, &stop, &target, peer);
    drop(slot);
    // Ends the watcher's read as well as the connection.
    let _ = control.stream().shutdown(std::net::Shutdown::Both);
    outcome
}

/// Runs `spec` here, relaying its acceptance and intervals to the client,
/// then its result or why it gave none.
fn run_relayed(
    control: &mut Control,
    runner: &dyn ThirdPartyRunner,
    spec: &TestSpec,
    stop: &Arc<AtomicBool>,
    target: &str,
    peer: SocketAddr,
) -> Result<(), EngineError> {
    let mut relay_failed = None;
    let outcome = runner.run(spec, stop, &mut |event| {
        let msg = match event {
            Event::Connected { server, env, .. } => ServerMessage::ThirdPartyConnected {
                server: *server,
                env: env.clone(),
            },
            Event::Interval(interval) => ServerMessage::ThirdPartyInterval {
                interval: interval.clone(),
            },
            _ => return,
        };
        if relay_failed.is_none() {
            if let Err(e) = control.send(&msg) {
                // The client is gone: stop the test.
                stop.store(true, Ordering::Relaxed);
                relay_failed = Some(e);
            }
        }
    });
    if let Some(e) = relay_failed {
        return Err(e);
    }
    let answer = match outcome {
        Ok(result) => ServerMessage::ThirdPartyResult {
            result: Box::new(result),
        },
        Err(e) => {
            tracing::warn!(name: "third_party_failed", %peer, %target, error = %e.message, "third-party test failed");
            ServerMessage::ThirdPartyFailed {
                kind: e.kind,
                message: e.message,
            }
        }
    };
    control.send(&answer)
}

fn spec_target(spec: &TestSpec) -> String {
    match spec {
        TestSpec::Tcp(s) => format!("{}:{}", s.host, s.port),
        TestSpec::Udp(s) => format!("{}:{}", s.host, s.port),
        TestSpec::Ping(s) => s.host.clone(),
        TestSpec::Trace(s) => s.host.clone(),
        TestSpec::Http(s) => s.url.clone(),
    }
}

/// Stops the test when the client closes its connection, breaks it, or
/// sends `stop` (or anything else: a third-party client has nothing more
/// to say while its test runs).
fn watch_client(control: &Control, stop: &Arc<AtomicBool>) -> Result<(), EngineError> {
    let mut reader = control.try_clone()?;
    let stop = Arc::clone(stop);
    std::thread::Builder::new()
        .name("third-party-client".into())
        .spawn(move || loop {
            match reader.recv::<ClientMessage>(
                HANDSHAKE_FRAME_MAX,
                Duration::from_secs(3600),
                "the client",
            ) {
                Err(EngineError::Timeout { .. }) => continue,
                _ => {
                    stop.store(true, Ordering::Relaxed);
                    return;
                }
            }
        })
        .map(drop)
        .map_err(EngineError::io("watching a third-party client"))
}
