//! The token exchange against clients that break it (issue 19), the way
//! the rest of the handshake is tested (abuse_*.rs): truncated, oversized
//! and garbage hellos and proofs, a proof before any hello, a hello
//! twice, a client that stalls after the challenge, and random bytes as
//! the proof. Each is refused or closed — by the handshake deadline at
//! the latest — and the server then still runs valid tests, with a token
//! and without. All on loopback; every loop bounded.

use crate::common;
use common::auth::{scratch, server_with, token_file, Raw, CLIENT_NONCE, OPS_SECRET};
use common::{sonde, stderr};
use sonde_wire::{ClientMessage, Refusal, ServerMessage, HANDSHAKE_FRAME_MAX};

fn config(audit: &std::path::Path) -> String {
    format!(
        "[auth]\naudit_log = \"{}\"\n[[auth.tokens]]\nname = \"ops\"\nsecret = \"{OPS_SECRET}\"\n",
        audit.display()
    )
}

fn auth_failed() -> ServerMessage {
    ServerMessage::Refused {
        refusal: Refusal::AuthFailed,
    }
}

/// A frame header promising `len` bytes.
fn header(len: usize) -> [u8; 4] {
    u32::try_from(len).unwrap().to_be_bytes()
}

/// The refusal's field, for an `invalid_spec` refusal.
fn invalid_field(m: ServerMessage) -> String {
    match m {
        ServerMessage::Refused {
            refusal: Refusal::InvalidSpec { field, .. },
        } => field,
        other => panic!("not an invalid_spec refusal: {other:?}"),
    }
}

/// After a challenge, `bytes` in place of the proof: refused with
/// `auth_failed`, then closed.
fn bad_proof(port: u16, bytes: &[u8], close_write: bool) {
    let mut c = Raw::open(port);
    c.hello("ops", CLIENT_NONCE);
    c.send_bytes(bytes);
    if close_write {
        c.s.shutdown(std::net::Shutdown::Write).unwrap();
    }
    assert_eq!(c.recv(), auth_failed(), "after {} bytes", bytes.len());
    assert!(c.closed());
}

fn valid_tests_still_run(port: u16, dir: &std::path::Path) {
    let token = token_file(dir, "ops", OPS_SECRET);
    for args in [vec![], vec!["--token-file", token.to_str().unwrap()]] {
        let out = sonde()
            .args(["tcp", "127.0.0.1", "-p", &port.to_string(), "-t", "1", "-J"])
            .args(&args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn broken_hellos_are_refused_by_name() {
    let dir = scratch("abuse-hello");
    let server = server_with(&dir, &config(&dir.join("a.jsonl")), &[]);
    // Garbage: a nonce that is not hex, a name that is not a string.
    for (json, field) in [
        (
            r#"{"type":"auth_hello","token_name":"ops","client_nonce":"zz"}"#,
            "client_nonce",
        ),
        (
            r#"{"type":"auth_hello","token_name":7,"client_nonce":"00"}"#,
            "token_name",
        ),
        (r#"{"type":"auth_hello"}"#, "token_name"),
    ] {
        let mut c = Raw::open(server.port);
        c.send_bytes(&header(json.len()));
        c.send_bytes(json.as_bytes());
        c.preamble();
        assert_eq!(invalid_field(c.recv()), field, "{json}");
    }
    // Oversized: a frame over the handshake cap is refused unread.
    let mut c = Raw::open(server.port);
    c.send_bytes(&header(HANDSHAKE_FRAME_MAX + 1));
    c.preamble();
    assert_eq!(invalid_field(c.recv()), "frame");
    // Truncated: the connection closes halfway through the hello.
    let mut c = Raw::open(server.port);
    c.send_bytes(&header(200));
    c.send_bytes(br#"{"type":"auth_hello","tok"#);
    c.s.shutdown(std::net::Shutdown::Write).unwrap();
    c.preamble();
    assert_eq!(invalid_field(c.recv()), "frame");
    // A proof before any hello.
    let mut c = Raw::open(server.port);
    c.send(&ClientMessage::AuthProof {
        mac: sonde_wire::auth::HexBytes([0; 32]),
    });
    c.preamble();
    assert_eq!(c.recv(), auth_failed());
    valid_tests_still_run(server.port, &dir);
}

#[test]
fn broken_proofs_are_refused_alike() {
    let dir = scratch("abuse-proof");
    let audit = dir.join("a.jsonl");
    let server = server_with(&dir, &config(&audit), &[]);
    let garbage = br#"{"type":"auth_proof","mac":"xyz"}"#;
    let mut framed = header(garbage.len()).to_vec();
    framed.extend_from_slice(garbage);
    bad_proof(server.port, &framed, false);
    // Oversized, and truncated.
    bad_proof(server.port, &header(HANDSHAKE_FRAME_MAX + 1), false);
    let mut cut = header(300).to_vec();
    cut.extend_from_slice(br#"{"type":"auth_proof","mac":"00"#);
    bad_proof(server.port, &cut, true);
    // A hello again instead of the proof.
    let again = sonde_wire::encode_message(&ClientMessage::AuthHello {
        token_name: "ops".into(),
        client_nonce: CLIENT_NONCE,
    })
    .unwrap();
    bad_proof(server.port, &again, false);
    // A test request instead of the proof.
    let request = sonde_wire::encode_message(&ClientMessage::Stop).unwrap();
    bad_proof(server.port, &request, false);
    // Random bytes as the proof frame, from a fixed seed.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for round in 0..24 {
        let len = 1 + round * 7;
        let mut body = Vec::with_capacity(len);
        for _ in 0..len {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            body.push(x as u8);
        }
        let mut framed = header(body.len()).to_vec();
        framed.extend_from_slice(&body);
        bad_proof(server.port, &framed, false);
    }
    let failed = common::auth::audit_lines(&audit)
        .iter()
        .filter(|l| l["outcome"] == "auth_failed")
        .count();
    assert_eq!(failed, 29, "each broken proof is in the audit log");
    valid_tests_still_run(server.port, &dir);
}

#[test]
fn a_client_that_stalls_after_the_challenge_is_closed_by_the_deadline() {
    let dir = scratch("abuse-stall");
    let audit = dir.join("a.jsonl");
    let server = server_with(&dir, &config(&audit), &[]);
    let mut stalled: Vec<Raw> = (0..3)
        .map(|_| {
            let mut c = Raw::open(server.port);
            c.hello("ops", CLIENT_NONCE);
            c
        })
        .collect();
    // Valid tests run while they stall.
    valid_tests_still_run(server.port, &dir);
    // Each is closed, with nothing more said (the read waits at most
    // 30 s, far past the 5 s deadline).
    for c in &mut stalled {
        assert!(c.closed(), "a stalled client was held open");
    }
    let lines = common::auth::audit_lines(&audit);
    assert!(
        lines
            .iter()
            .filter(|l| l["outcome"] == "auth_failed")
            .count()
            >= 3,
        "{lines:?}"
    );
}
