//! Token authentication on the native control protocol (issue 19), with
//! real `sonde serve` processes and real clients on loopback: the right
//! token runs, a wrong one is refused and audited, a proof captured on
//! one connection is worthless on another, a second proof on one
//! connection is refused, `auth.required` turns away clients without a
//! token, and a client does not trust a server that cannot prove the
//! token back.

use crate::common;
use common::auth::{
    audit_lines, proof, scratch, server_with, token_file, Raw, CLIENT_NONCE, OPS_SECRET,
};
use common::{sonde, stderr};
use sonde_wire::auth::HexBytes;
use sonde_wire::{ClientMessage, Refusal, ServerMessage};
use std::io::{Read, Write};

fn ops_config(audit: &std::path::Path, extra: &str) -> String {
    format!(
        "[auth]\naudit_log = \"{}\"\n{extra}\n[[auth.tokens]]\nname = \"ops\"\nsecret = \"{OPS_SECRET}\"\n",
        audit.display()
    )
}

fn tcp_with(port: u16, args: &[&str]) -> std::process::Output {
    sonde()
        .args(["tcp", "127.0.0.1", "-p", &port.to_string(), "-t", "1"])
        .args(args)
        .output()
        .expect("run sonde tcp")
}

#[test]
fn the_right_token_runs_and_a_wrong_secret_is_refused_and_audited() {
    let dir = scratch("right-wrong");
    let audit = dir.join("audit.jsonl");
    let server = server_with(&dir, &ops_config(&audit, ""), &[]);
    let good = token_file(&dir, "ops", OPS_SECRET);
    let out = tcp_with(server.port, &["--token-file", good.to_str().unwrap(), "-J"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        doc["summary"]["total"]["received_bytes"]
            .as_u64()
            .unwrap_or(0)
            > 0
    );
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains(OPS_SECRET),
        "the secret is in the result"
    );
    // UDP takes the same exchange.
    let out = sonde()
        .args([
            "udp",
            "127.0.0.1",
            "-p",
            &server.port.to_string(),
            "-t",
            "1",
        ])
        .args(["-b", "1M", "-J", "--token-file", good.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));

    let wrong = token_file(&dir, "ops", "not-the-secret-at-all");
    let out = tcp_with(server.port, &["--token-file", wrong.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("authentication failed"),
        "{}",
        stderr(&out)
    );
    // An unknown name reads exactly the same.
    let unknown = token_file(&dir, "nobody", OPS_SECRET);
    let out2 = tcp_with(server.port, &["--token-file", unknown.to_str().unwrap()]);
    assert_eq!(out2.status.code(), Some(1));
    assert_eq!(
        stderr(&out).lines().last(),
        stderr(&out2).lines().last(),
        "a wrong secret and an unknown name must not be told apart"
    );

    let lines = audit_lines(&audit);
    let accepted = lines
        .iter()
        .find(|l| l["outcome"] == "accepted")
        .unwrap_or_else(|| panic!("no accepted line: {lines:?}"));
    assert_eq!(accepted["token"], "ops");
    assert_eq!(accepted["test"], "tcp");
    assert_eq!(accepted["protocol"], "native");
    assert!(
        lines
            .iter()
            .any(|l| l["outcome"] == "accepted" && l["test"] == "udp" && l["token"] == "ops"),
        "{lines:?}"
    );
    let failed: Vec<_> = lines
        .iter()
        .filter(|l| l["outcome"] == "auth_failed")
        .collect();
    assert_eq!(failed.len(), 2, "{lines:?}");
    assert_eq!(failed[0]["token"], "ops");
    assert_eq!(failed[0]["client"], "127.0.0.1");
    assert!(failed[0]["client_port"].as_u64().unwrap_or(0) > 0);
    assert_eq!(failed[1]["token"], "nobody");
    assert!(server.wait_for_log("auth_failed"), "{}", server.log());
    assert!(
        !server.log().contains(OPS_SECRET),
        "the secret is in the log"
    );
}

#[test]
fn a_token_file_that_cannot_be_used_is_a_usage_error() {
    let dir = scratch("usage");
    let out = tcp_with(1, &["--token-file", dir.join("missing").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--token-file"), "{}", stderr(&out));
    let bad = dir.join("bad.token");
    std::fs::write(&bad, "just-a-name\n").unwrap();
    let out = tcp_with(1, &["--token-file", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("NAME:SECRET"), "{}", stderr(&out));
}

#[test]
fn a_proof_captured_on_one_connection_is_refused_on_another() {
    let dir = scratch("replay");
    let audit = dir.join("audit.jsonl");
    let server = server_with(&dir, &ops_config(&audit, ""), &[]);
    // The genuine exchange, seen by an attacker on the path.
    let mut first = Raw::open(server.port);
    let s1 = first.hello("ops", CLIENT_NONCE);
    let captured = proof(OPS_SECRET, &s1, &CLIENT_NONCE, "ops");
    first.send(&ClientMessage::AuthProof { mac: captured });
    assert!(
        matches!(first.recv(), ServerMessage::Authenticated { .. }),
        "the genuine proof was refused"
    );
    // The attacker replays hello and proof word for word.
    let mut second = Raw::open(server.port);
    let s2 = second.hello("ops", CLIENT_NONCE);
    assert_ne!(s1, s2, "the server's nonce repeated");
    second.send(&ClientMessage::AuthProof { mac: captured });
    assert_eq!(
        second.recv(),
        ServerMessage::Refused {
            refusal: Refusal::AuthFailed
        }
    );
    assert!(second.closed());
    let lines = audit_lines(&audit);
    assert!(
        lines
            .iter()
            .any(|l| l["outcome"] == "auth_failed" && l["token"] == "ops"),
        "{lines:?}"
    );
}

#[test]
fn a_second_proof_on_one_connection_is_refused() {
    let dir = scratch("second-proof");
    let server = server_with(&dir, &ops_config(&dir.join("a.jsonl"), ""), &[]);
    let mut c = Raw::open(server.port);
    let s = c.hello("ops", CLIENT_NONCE);
    let mac = proof(OPS_SECRET, &s, &CLIENT_NONCE, "ops");
    c.send(&ClientMessage::AuthProof { mac });
    assert!(matches!(c.recv(), ServerMessage::Authenticated { .. }));
    c.send(&ClientMessage::AuthProof { mac });
    assert_eq!(
        c.recv(),
        ServerMessage::Refused {
            refusal: Refusal::AuthFailed
        }
    );
    // And a second hello after a good exchange.
    let mut c = Raw::open(server.port);
    let s = c.hello("ops", CLIENT_NONCE);
    c.send(&ClientMessage::AuthProof {
        mac: proof(OPS_SECRET, &s, &CLIENT_NONCE, "ops"),
    });
    assert!(matches!(c.recv(), ServerMessage::Authenticated { .. }));
    c.send(&ClientMessage::AuthHello {
        token_name: "ops".into(),
        client_nonce: HexBytes([1; 32]),
    });
    assert_eq!(
        c.recv(),
        ServerMessage::Refused {
            refusal: Refusal::AuthFailed
        }
    );
}

#[test]
fn auth_required_refuses_a_client_without_a_token() {
    let dir = scratch("required");
    let audit = dir.join("audit.jsonl");
    let server = server_with(&dir, &ops_config(&audit, "required = true"), &[]);
    let out = tcp_with(server.port, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("requires a token"),
        "{}",
        stderr(&out)
    );
    let good = token_file(&dir, "ops", OPS_SECRET);
    let out = tcp_with(server.port, &["--token-file", good.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = audit_lines(&audit);
    assert!(
        lines
            .iter()
            .any(|l| l["outcome"] == "refused" && l["token"].is_null()),
        "{lines:?}"
    );
}

/// A listener that plays a server which knows the token's name but not
/// its secret: its challenge is real, its own proof is made up.
#[test]
fn a_client_does_not_trust_a_server_that_cannot_prove_the_token() {
    let dir = scratch("impostor");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let impostor = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
            .unwrap();
        let mut preamble = [0u8; sonde_wire::PREAMBLE_LEN];
        s.read_exact(&mut preamble).unwrap();
        let frame = |s: &mut std::net::TcpStream| {
            let mut len = [0u8; 4];
            s.read_exact(&mut len).unwrap();
            let mut payload = vec![0u8; u32::from_be_bytes(len) as usize];
            s.read_exact(&mut payload).unwrap();
            sonde_wire::decode_message::<ClientMessage>(&payload).unwrap()
        };
        assert!(matches!(frame(&mut s), ClientMessage::AuthHello { .. }));
        s.write_all(&sonde_wire::Preamble::CURRENT.encode())
            .unwrap();
        let challenge = ServerMessage::Challenge {
            server_nonce: HexBytes([3; 32]),
        };
        s.write_all(&sonde_wire::encode_message(&challenge).unwrap())
            .unwrap();
        assert!(matches!(frame(&mut s), ClientMessage::AuthProof { .. }));
        let answer = ServerMessage::Authenticated {
            class: "friends".into(),
            proof: HexBytes([0; 32]),
        };
        s.write_all(&sonde_wire::encode_message(&answer).unwrap())
            .unwrap();
        // Nothing else may come: the client must stop here.
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
        rest
    });
    let good = token_file(&dir, "ops", OPS_SECRET);
    let out = tcp_with(port, &["--token-file", good.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("did not prove"), "{}", stderr(&out));
    let rest = impostor.join().unwrap();
    assert!(
        rest.is_empty(),
        "the client sent its request anyway: {}",
        String::from_utf8_lossy(&rest)
    );
}
