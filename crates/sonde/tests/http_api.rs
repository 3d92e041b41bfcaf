//! `sonde serve --http`: the JSON API and `/metrics` of a real agent over
//! real sockets, reading the SQLite archive that real tests on loopback
//! were kept in; `/metrics` read by a real OpenMetrics parser (Python's
//! prometheus_client, installed by scripts/python-deps.sh).

mod common;
use common::{sonde, stderr, ServerProc};
use std::io::{Read, Write};
use std::net::TcpStream;

/// One request; the status and the body.
fn http(port: u16, request: &str) -> (u16, String) {
    let mut s = TcpStream::connect(("::1", port)).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, body.to_string())
}

fn get(port: u16, path: &str) -> (u16, String) {
    http(
        port,
        &format!("GET {path} HTTP/1.1\r\nHost: sonde\r\nConnection: close\r\n\r\n"),
    )
}

#[test]
fn results_and_metrics_are_served_from_the_archive() {
    let dir = std::env::temp_dir().join(format!("sonde-http-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("a.db").display().to_string();
    let server = ServerProc::start(&["--no-reflector", "--http", "[::1]:0", "--archive", &db]);
    assert!(server.wait_for_log("http="), "{}", server.log());
    let log = server.log();
    let port: u16 = log
        .split("http=[::1]:")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no http address in {log}"));
    let archive = format!("--archive={db}");
    let tcp = sonde()
        .args([
            "tcp",
            "::1",
            "-p",
            &server.port.to_string(),
            "-t",
            "1s",
            "-J",
            &archive,
        ])
        .output()
        .unwrap();
    assert!(tcp.status.success(), "{}", stderr(&tcp));
    let printed: serde_json::Value = serde_json::from_slice(&tcp.stdout).unwrap();
    let ping = sonde()
        .args(["ping", "::1", "-c", "3", "-i", "0.2", &archive])
        .output()
        .unwrap();
    assert!(ping.status.success(), "{}", stderr(&ping));

    let (status, body) = get(port, "/api/v1/results?test=tcp");
    assert_eq!(status, 200, "{body}");
    let list: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(list[0]["id"], printed["id"]);
    let id = printed["id"].as_str().unwrap();
    let (status, body) = get(port, &format!("/api/v1/results/{id}"));
    assert_eq!(status, 200);
    let one: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(one, printed);

    // Bad requests: clear JSON errors, and the server goes on.
    let (status, body) = get(port, "/api/v1/results/not-an-id");
    assert_eq!(status, 400);
    assert!(body.contains("is not a result id"), "{body}");
    let (status, _) = get(port, "/api/v1/results/0b6f5a56-0000-4000-8000-000000000000");
    assert_eq!(status, 404);
    let (status, body) = get(port, "/api/v1/results?colour=blue");
    assert_eq!(status, 400);
    assert!(body.contains("colour"), "{body}");
    let (status, _) = http(port, "HELLO\r\n\r\n");
    assert_ne!(status, 200);
    let (status, _) = get(port, "/api/v1/info");
    assert_eq!(status, 200);

    // /metrics, read by prometheus_client's OpenMetrics parser.
    let (status, text) = get(port, "/metrics");
    assert_eq!(status, 200);
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
    let families: serde_json::Value = serde_json::from_slice(&parsed.stdout).unwrap();
    let tput = &families["sonde_throughput_bytes_per_second"][0];
    assert_eq!(tput[1]["test"], "tcp");
    assert_eq!(tput[1]["direction"], "forward");
    assert_eq!(tput[1]["family"], "v6");
    let bps = printed["summary"]["forward"]["throughput_bps"]
        .as_f64()
        .unwrap();
    assert!((tput[2].as_f64().unwrap() - bps / 8.0).abs() < 1.0);
    let rtt = &families["sonde_rtt_seconds"][0];
    assert_eq!(rtt[1]["test"], "ping");
    let secs = rtt[2].as_f64().unwrap();
    assert!(secs > 0.0 && secs < 0.01, "{secs}");
    assert_eq!(families["sonde_agent"][0][0], "sonde_agent_info");
}
