//! The audit log (`auth.audit_log`): one JSON line per decision (a test
//! accepted, cut, refused; a token that failed), saying who ran what,
//! when, toward where. Each line is written whole and flushed before
//! the decision takes effect, so a killed server loses none; the same
//! record also goes to the tracing log.

use serde::Serialize;
use std::fs::File;
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Mutex;

/// What was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Outcome {
    Accepted,
    Cut,
    Refused,
    AuthFailed,
}

/// Which protocol the client spoke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Proto {
    Native,
    Iperf3,
    /// The HTTP API's "run a test now".
    Http,
}

/// What a test asked, as the log tells it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct Asked {
    /// `tcp`, `udp`, `third_party_tcp`, …; `None` before a request.
    pub test: Option<String>,
    /// Where a third-party test goes (`HOST:PORT`).
    pub target: Option<String>,
    pub direction: Option<String>,
    pub duration_s: Option<f64>,
    pub streams: Option<usize>,
    /// Total rate asked; `None`: unpaced or unknown.
    pub rate_bps: Option<u64>,
}

/// One line of the audit log.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Record<'a> {
    pub time: String,
    pub client: String,
    pub client_port: u16,
    pub token: Option<&'a str>,
    pub class: &'a str,
    pub protocol: Proto,
    #[serde(flatten)]
    pub asked: &'a Asked,
    pub outcome: Outcome,
    pub reason: Option<String>,
}

impl<'a> Record<'a> {
    pub(crate) fn new(
        peer: SocketAddr,
        token: Option<&'a str>,
        class: &'a str,
        protocol: Proto,
        asked: &'a Asked,
        outcome: Outcome,
        reason: Option<String>,
    ) -> Self {
        Self {
            time: humantime::format_rfc3339_micros(std::time::SystemTime::now()).to_string(),
            client: peer.ip().to_canonical().to_string(),
            client_port: peer.port(),
            token,
            class,
            protocol,
            asked,
            outcome,
            reason,
        }
    }
}

/// The audit log's one writer.
#[derive(Debug, Default)]
pub(crate) struct AuditLog {
    file: Option<Mutex<File>>,
}

impl AuditLog {
    /// Opens `path` for appending (created if missing); `None`: no file,
    /// the tracing log only.
    pub(crate) fn open(path: Option<&Path>) -> std::io::Result<Self> {
        let file = path
            .map(|p| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
            })
            .transpose()?;
        Ok(Self {
            file: file.map(Mutex::new),
        })
    }

    /// Writes `record` as one line, and to the tracing log.
    pub(crate) fn write(&self, record: &Record<'_>) {
        let Ok(mut line) = serde_json::to_vec(record) else {
            return;
        };
        line.push(b'\n');
        let text = String::from_utf8_lossy(&line[..line.len() - 1]).into_owned();
        match record.outcome {
            Outcome::Accepted => tracing::info!(name: "audit", audit = %text, "audit"),
            _ => tracing::warn!(name: "audit", audit = %text, "audit"),
        }
        let Some(file) = &self.file else { return };
        let Ok(mut f) = file.lock() else { return };
        // One write of the whole line to a file opened for appending.
        if let Err(e) = f.write_all(&line).and_then(|()| f.flush()) {
            tracing::error!(error = %e, "cannot write the audit log");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_decision_is_one_json_line() {
        let dir = std::env::temp_dir().join(format!("sonde-audit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("audit.jsonl");
        let _ = std::fs::remove_file(&path);
        let log = AuditLog::open(Some(&path)).unwrap();
        let asked = Asked {
            test: Some("tcp".into()),
            direction: Some("forward".into()),
            duration_s: Some(10.0),
            streams: Some(2),
            ..Asked::default()
        };
        let peer: SocketAddr = "[::ffff:127.0.0.2]:4000".parse().unwrap();
        log.write(&Record::new(
            peer,
            Some("ops"),
            "lab",
            Proto::Native,
            &asked,
            Outcome::Accepted,
            None,
        ));
        log.write(&Record::new(
            peer,
            None,
            "unknown",
            Proto::Iperf3,
            &asked,
            Outcome::Refused,
            Some("max_streams".into()),
        ));
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["client"], "127.0.0.2");
        assert_eq!(lines[0]["client_port"], 4000);
        assert_eq!(lines[0]["token"], "ops");
        assert_eq!(lines[0]["test"], "tcp");
        assert_eq!(lines[0]["outcome"], "accepted");
        assert!(lines[0]["time"].as_str().unwrap().ends_with('Z'));
        assert_eq!(lines[1]["token"], serde_json::Value::Null);
        assert_eq!(lines[1]["protocol"], "iperf3");
        assert_eq!(lines[1]["reason"], "max_streams");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
