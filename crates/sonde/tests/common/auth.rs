//! Helpers of the authentication tests: a server from an `[auth]`
//! configuration, token files, and a raw native client that speaks the
//! exchange message by message (to replay, repeat and break it).

use super::ServerProc;
use sonde_wire::auth::{client_proof, HexBytes, Mac, Nonce};
use sonde_wire::{encode_message, ClientMessage, Preamble, ServerMessage, PREAMBLE_LEN};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::Duration;

/// The secret of the token `ops` in [`config`]s that use it.
pub const OPS_SECRET: &str = "ops-secret-0123456789";

/// A scratch directory of the test's own, named `name`.
pub fn scratch(name: &str) -> super::TempDir {
    super::TempDir::new(&format!("auth-{name}"))
}

/// Starts `sonde serve` with `toml` as its configuration file.
pub fn server_with(dir: &std::path::Path, toml: &str, extra: &[&str]) -> ServerProc {
    let path = dir.join("serve.toml");
    std::fs::write(&path, toml).unwrap();
    let mut args = vec!["--no-reflector", "--config", path.to_str().unwrap()];
    args.extend_from_slice(extra);
    ServerProc::start(&args)
}

/// A token file `NAME:SECRET` in `dir`.
pub fn token_file(dir: &std::path::Path, name: &str, secret: &str) -> PathBuf {
    let path = dir.join(format!("{name}-{}.token", secret.len()));
    std::fs::write(&path, format!("{name}:{secret}\n")).unwrap();
    path
}

/// The audit log's lines, parsed.
pub fn audit_lines(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("an audit line is JSON"))
        .collect()
}

/// A raw native client connection.
pub struct Raw {
    pub s: TcpStream,
}

impl Raw {
    /// Connects to `127.0.0.1:port` and sends the preamble.
    pub fn open(port: u16) -> Self {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        s.write_all(&Preamble::CURRENT.encode()).unwrap();
        Self { s }
    }

    pub fn send(&mut self, m: &ClientMessage) {
        self.s.write_all(&encode_message(m).unwrap()).unwrap();
    }

    pub fn send_bytes(&mut self, b: &[u8]) {
        self.s.write_all(b).unwrap();
    }

    /// Reads the server's preamble.
    pub fn preamble(&mut self) {
        let mut p = [0u8; PREAMBLE_LEN];
        self.s.read_exact(&mut p).unwrap();
        Preamble::decode(&p).unwrap();
    }

    /// Reads one server message.
    pub fn recv(&mut self) -> ServerMessage {
        let mut len = [0u8; 4];
        self.s.read_exact(&mut len).unwrap();
        let mut payload = vec![0u8; u32::from_be_bytes(len) as usize];
        self.s.read_exact(&mut payload).unwrap();
        sonde_wire::decode_message(&payload).unwrap()
    }

    /// Whether the server closed the connection (no more bytes, or a
    /// reset) before the read timeout (30 s); a timeout is not a close.
    pub fn closed(&mut self) -> bool {
        match self.s.read(&mut [0u8; 64]) {
            Ok(0) => true,
            Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
            Ok(_) => false,
        }
    }

    /// Sends `auth_hello` for `name` with `nonce`; the server's nonce.
    pub fn hello(&mut self, name: &str, nonce: Nonce) -> Nonce {
        self.send(&ClientMessage::AuthHello {
            token_name: name.into(),
            client_nonce: nonce,
        });
        self.preamble();
        match self.recv() {
            ServerMessage::Challenge { server_nonce } => server_nonce,
            other => panic!("not a challenge: {other:?}"),
        }
    }
}

/// The right proof for `name`/`secret` over these nonces.
pub fn proof(secret: &str, server: &Nonce, client: &Nonce, name: &str) -> Mac {
    client_proof(secret.as_bytes(), server, client, name)
}

/// A fixed client nonce (a replaying attacker's is whatever it saw).
pub const CLIENT_NONCE: Nonce = HexBytes([0x42; 32]);
