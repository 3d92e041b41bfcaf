//! Talking to an agent's HTTP API in tests: plain requests over a real
//! socket (no client library between the test and the server's bytes),
//! the agent's HTTP port from its log, and `/metrics` read by a real
//! OpenMetrics parser (Python's prometheus_client).

use super::{ServerProc, TempDir};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

/// One request; the status and the body.
pub fn http(port: u16, request: &str) -> (u16, String) {
    let (status, _, body) = exchange(port, request);
    (status, body)
}

/// A GET with a bearer token: the status, the head (status line and
/// headers, names in lower case as the agent writes them) and the body.
pub fn get_head(port: u16, path: &str, token: &str) -> (u16, String, String) {
    exchange(
        port,
        &format!(
            "GET {path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}\r\nConnection: \
             close\r\n\r\n"
        ),
    )
}

/// One request; the status, the head and the body.
fn exchange(port: u16, request: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(("::1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut raw = String::new();
    let _ = s.read_to_string(&mut raw);
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let chunked = head
        .lines()
        .any(|l| l.eq_ignore_ascii_case("transfer-encoding: chunked"));
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_string()
    };
    (status, head.to_string(), body)
}

/// A chunked body (a streamed answer: the export) as its bytes, read by
/// the framing RFC 9112 §7.1 gives: a hexadecimal size line, that many
/// bytes, CRLF; a size of 0 ends it. A frame that does not read ends it
/// too (the test then sees a short body).
fn dechunk(body: &str) -> String {
    let mut rest = body.as_bytes();
    let mut out = Vec::new();
    while let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") {
        let size = String::from_utf8_lossy(&rest[..eol]);
        let Ok(n) = usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16) else {
            break;
        };
        let after = &rest[eol + 2..];
        if n == 0 || after.len() < n {
            break;
        }
        out.extend_from_slice(&after[..n]);
        rest = after[n..].strip_prefix(b"\r\n").unwrap_or(&after[n..]);
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub fn get(port: u16, path: &str) -> (u16, String) {
    http(
        port,
        &format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"),
    )
}

/// A GET with a bearer token.
pub fn get_as(port: u16, path: &str, token: &str) -> (u16, String) {
    http(
        port,
        &format!(
            "GET {path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}\r\nConnection: \
             close\r\n\r\n"
        ),
    )
}

/// A request with a body; `token` empty for none.
pub fn send(
    port: u16,
    method: &str,
    path: &str,
    token: &str,
    content_type: &str,
    body: &str,
) -> (u16, String) {
    let auth = if token.is_empty() {
        String::new()
    } else {
        format!("Authorization: Bearer {token}\r\n")
    };
    http(
        port,
        &format!(
            "{method} {path} HTTP/1.1\r\nHost: localhost\r\n{auth}Content-Type: {content_type}\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    )
}

/// The body as JSON, or a panic naming it.
pub fn json(body: &str) -> serde_json::Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

/// The HTTP port of an agent started with `--http [::1]:0`.
pub fn http_port(server: &ServerProc) -> u16 {
    assert!(server.wait_for_log("http="), "{}", server.log());
    let log = server.log();
    log.split("http=[::1]:")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no http address in {log}"))
}

/// `sonde serve --http [::1]:0` with `--archive archive`, `--config
/// config` and `extra`, and its HTTP port.
pub fn http_agent(archive: &str, config: &std::path::Path, extra: &[&str]) -> (ServerProc, u16) {
    let mut args = vec![
        "--no-reflector",
        "--http",
        "[::1]:0",
        "--archive",
        archive,
        "--config",
        config.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let server = ServerProc::start(&args);
    let port = http_port(&server);
    (server, port)
}

/// An agent of the test's own: `sonde serve --http [::1]:0` with a
/// directory of its own, its configuration written there once
/// (`agent.toml`) and its SQLite archive there (`a.db`). Dropped, the
/// agent stops first, then its directory goes.
pub struct Agent {
    pub server: ServerProc,
    pub port: u16,
    pub dir: TempDir,
}

/// An [`Agent`] before it starts: its directory is there, for the files
/// its configuration names (an audit log, a campaigns folder).
pub struct AgentBuilder {
    dir: TempDir,
    args: Vec<String>,
}

impl Agent {
    pub fn builder(name: &str) -> AgentBuilder {
        AgentBuilder {
            dir: TempDir::new(name),
            args: Vec::new(),
        }
    }
}

impl AgentBuilder {
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// More of `sonde serve`'s flags.
    pub fn args<S: Into<String>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Writes `config` as the agent's configuration and starts it, on its
    /// SQLite archive; returns once its HTTP port is known.
    pub fn start(self, config: &str) -> Agent {
        let db = self.dir.join("a.db").display().to_string();
        self.start_on(config, &db)
    }

    /// As [`AgentBuilder::start`], on `archive` (a file or a PostgreSQL
    /// URL).
    pub fn start_on(self, config: &str, archive: &str) -> Agent {
        let path = self.dir.join("agent.toml");
        std::fs::write(&path, config).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let extra: Vec<&str> = self.args.iter().map(String::as_str).collect();
        let (server, port) = http_agent(archive, &path, &extra);
        Agent {
            server,
            port,
            dir: self.dir,
        }
    }
}

/// `/metrics` as prometheus_client's OpenMetrics parser reads it: each
/// family's samples as `[name, labels, value]`.
pub fn parse_metrics(text: &str) -> serde_json::Value {
    let parser = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys, json\n\
             from prometheus_client.openmetrics.parser import text_string_to_metric_families\n\
             out = {}\n\
             for f in text_string_to_metric_families(sys.stdin.read()):\n\
             \x20   out[f.name] = [[s.name, s.labels, s.value] for s in f.samples]\n\
             print(json.dumps(out))",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    parser
        .stdin
        .as_ref()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let parsed = parser.wait_with_output().unwrap();
    assert!(
        parsed.status.success(),
        "{}\n{text}",
        String::from_utf8_lossy(&parsed.stderr)
    );
    serde_json::from_slice(&parsed.stdout).unwrap()
}

/// Waits up to `secs` for `cond`, polling; false if it never held.
pub fn wait_for(secs: u64, mut cond: impl FnMut() -> bool) -> bool {
    let end = std::time::Instant::now() + Duration::from_secs(secs);
    while std::time::Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    false
}
