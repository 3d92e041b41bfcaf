//! The client's side of token authentication (docs/protocol.md,
//! "Authentication"): after its preamble, `auth_hello` with a fresh
//! nonce; the server's `challenge`; `auth_proof`; the server's
//! `authenticated`, whose own proof is checked here before anything else
//! is sent. The request follows on the same connection.

use crate::control::Control;
use crate::EngineError;
use sonde_model::Credential;
use sonde_wire::auth::{client_proof, verify_server, HexBytes, Nonce, NONCE_LEN};
use sonde_wire::{ClientMessage, ServerMessage, HANDSHAKE_FRAME_MAX};
use std::time::Duration;

/// A fresh random nonce.
pub fn fresh_nonce() -> Result<Nonce, EngineError> {
    let mut bytes = [0u8; NONCE_LEN];
    getrandom::fill(&mut bytes).map_err(|e| {
        EngineError::Unavailable(format!("no randomness for an authentication nonce: {e}"))
    })?;
    Ok(HexBytes(bytes))
}

/// Proves `token` to the server on `control` (our preamble sent, theirs
/// not yet read); the class the server puts this client in. Each read
/// waits at most `timeout`.
pub fn authenticate(
    control: &mut Control,
    token: &Credential,
    timeout: Duration,
) -> Result<String, EngineError> {
    let client_nonce = fresh_nonce()?;
    control.send(&ClientMessage::AuthHello {
        token_name: token.name().to_string(),
        client_nonce,
    })?;
    // An iperf3 server takes sonde's first bytes for its cookie and asks
    // for parameters (state 9) or says it is busy (state -1).
    if matches!(control.peek_byte(timeout)?, 9 | 0xff) {
        return Err(EngineError::PeerIsIperf3);
    }
    let _theirs = control.recv_preamble(timeout)?;
    let server_nonce = match control.recv(HANDSHAKE_FRAME_MAX, timeout, "the server's challenge")? {
        ServerMessage::Challenge { server_nonce } => server_nonce,
        other => return Err(refused_or_unexpected("challenge", other)),
    };
    let mac = client_proof(token.secret(), &server_nonce, &client_nonce, token.name());
    control.send(&ClientMessage::AuthProof { mac })?;
    match control.recv(
        HANDSHAKE_FRAME_MAX,
        timeout,
        "the server's answer to the proof",
    )? {
        ServerMessage::Authenticated { class, proof } => {
            if verify_server(
                token.secret(),
                &server_nonce,
                &client_nonce,
                token.name(),
                &proof,
            ) {
                Ok(class)
            } else {
                Err(EngineError::ServerNotProved {
                    token: token.name().to_string(),
                })
            }
        }
        other => Err(refused_or_unexpected("authenticated", other)),
    }
}

fn refused_or_unexpected(expected: &'static str, got: ServerMessage) -> EngineError {
    match got {
        ServerMessage::Refused { refusal } => EngineError::Refused(refusal),
        ServerMessage::Abort { reason } => EngineError::Aborted(reason),
        other => EngineError::Unexpected {
            expected,
            got: format!("{other:?}").chars().take(80).collect(),
        },
    }
}
