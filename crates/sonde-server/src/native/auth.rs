//! The server's side of token authentication (docs/protocol.md,
//! "Authentication"): a connection that opened with `auth_hello` gets a
//! fresh challenge; its `auth_proof` is checked in constant time against
//! the token's secret; the server answers with its own proof and the
//! client's class, or with `auth_failed` — the same refusal for an
//! unknown name, a wrong secret, a replayed proof or a message out of
//! order, so a client learns nothing of which. Everything within the
//! handshake's deadline, measured from accept.

use super::refuse;
use crate::access::Identity;
use crate::admission::Asker;
use crate::audit::{Asked, Outcome, Proto};
use crate::state::Shared;
use sonde_engine::auth::fresh_nonce;
use sonde_engine::control::Control;
use sonde_engine::EngineError;
use sonde_wire::auth::{server_proof, verify_client, Nonce};
use sonde_wire::{ClientMessage, Refusal, ServerMessage, HANDSHAKE_FRAME_MAX};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// A secret no token has, checked against when the name is unknown, so
/// that an unknown name costs what a wrong secret does.
const NO_SECRET: &[u8] = b"\0sonde: no such token\0";

/// Writes the audit line of an authentication failure of `token_name`
/// from `peer`, under the class its address alone would get.
fn audit_failure(shared: &Shared, peer: SocketAddr, token_name: Option<&str>, why: String) {
    let asker = Asker {
        token: token_name,
        ..Asker::new(peer, Proto::Native)
    };
    let class = shared.access().class_for(None, peer.ip()).name.clone();
    asker.audit(
        shared,
        &class,
        &Asked::default(),
        Outcome::AuthFailed,
        Some(why),
    );
}

/// Logs an authentication failure of `token_name` from `peer` and
/// refuses the connection with `auth_failed`.
pub(super) fn fail(
    control: Control,
    peer: SocketAddr,
    token_name: Option<&str>,
    why: &str,
    shared: &Shared,
) -> Result<(), EngineError> {
    audit_failure(shared, peer, token_name, why.into());
    shared.counters().refused(&Refusal::AuthFailed);
    refuse(control, peer, Refusal::AuthFailed)
}

/// Runs the exchange for a client that sent `auth_hello` (`token_name`,
/// `client_nonce`); the identity it proved, or `None` once it has been
/// refused.
pub(super) fn exchange(
    control: &mut Control,
    peer: SocketAddr,
    token_name: &str,
    client_nonce: Nonce,
    shared: &Shared,
    deadline: Instant,
) -> Result<Option<Identity>, EngineError> {
    let wait = || {
        deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1))
    };
    let server_nonce = fresh_nonce()?;
    control.send_preamble()?;
    control.send(&ServerMessage::Challenge { server_nonce })?;
    let answer = control.recv::<ClientMessage>(HANDSHAKE_FRAME_MAX, wait(), "the proof");
    let mac = match answer {
        Ok(ClientMessage::AuthProof { mac }) => mac,
        Ok(_) => {
            let c = control.try_clone()?;
            fail(
                c,
                peer,
                Some(token_name),
                "a message other than auth_proof after the challenge",
                shared,
            )?;
            return Ok(None);
        }
        Err(e @ (EngineError::Wire(_) | EngineError::Closed { .. })) => {
            let c = control.try_clone()?;
            fail(
                c,
                peer,
                Some(token_name),
                &format!("a malformed proof: {e}"),
                shared,
            )?;
            return Ok(None);
        }
        Err(e) => {
            audit_failure(shared, peer, Some(token_name), format!("no proof: {e}"));
            return Err(e);
        }
    };
    let access = shared.access();
    let secret = access.secret(token_name);
    let proved = verify_client(
        secret.unwrap_or(NO_SECRET),
        &server_nonce,
        &client_nonce,
        token_name,
        &mac,
    ) && secret.is_some();
    let (Some(secret), true) = (secret, proved) else {
        let c = control.try_clone()?;
        fail(
            c,
            peer,
            Some(token_name),
            "wrong proof for this token, or no such token",
            shared,
        )?;
        return Ok(None);
    };
    let Some(identity) = shared.access().identity(token_name) else {
        return Ok(None);
    };
    let class = shared
        .access()
        .class_for(Some(token_name), peer.ip())
        .name
        .clone();
    tracing::info!(name: "client_authenticated", %peer, token = token_name, %class, "client authenticated");
    control.send(&ServerMessage::Authenticated {
        class,
        proof: server_proof(secret, &server_nonce, &client_nonce, token_name),
    })?;
    Ok(Some(identity))
}
