//! `-J` when a test gives no result: one JSON document saying why, in
//! sonde's layout (`error.kind`, `error.message`; error-v3 schema) or
//! iperf3's (`error` as a string), and a non-zero exit — for a refused
//! connection, a server's refusal, a usage error found by the spec's
//! check, a spec file, and Ctrl-C before the test began. Real `sonde
//! serve` on loopback; ports 17390–17399 are kept free of servers so that
//! a connection to them is refused.

use crate::common;
use common::cli::{json, run, CLOSED};
use common::schema::{assert_valid, validator};
use common::{sonde, stderr, ServerProc};
use serde_json::Value;

/// sonde's failure document: valid against its schema, `kind` and a
/// message naming `needle`, and the exit code.
fn sonde_failure(args: &[&str], code: i32, kind: &str, needle: &str) -> Value {
    let o = run(args);
    assert_eq!(o.status.code(), Some(code), "{args:?}: {}", stderr(&o));
    let doc = json(&o);
    assert_valid(&validator("error-v3.schema.json"), &doc);
    assert_eq!(doc["error"]["kind"], kind, "{args:?}: {doc}");
    let message = doc["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(needle), "{args:?}: {message}");
    // stderr says the same.
    assert!(stderr(&o).contains(message), "{}", stderr(&o));
    doc
}

/// iperf3's failure document, as `iperf3 -J` prints it.
fn iperf3_failure(args: &[&str], code: i32, needle: &str) -> Value {
    let o = run(args);
    assert_eq!(o.status.code(), Some(code), "{args:?}: {}", stderr(&o));
    let doc = json(&o);
    let error = doc["error"].as_str().unwrap_or_default();
    assert!(error.contains(needle), "{args:?}: {doc}");
    assert_eq!(doc["start"]["connected"], serde_json::json!([]), "{doc}");
    assert!(doc["start"]["version"]
        .as_str()
        .unwrap()
        .starts_with("sonde "));
    assert_eq!(doc["intervals"], serde_json::json!([]));
    assert_eq!(doc["end"], serde_json::json!({}));
    doc
}

#[test]
fn a_refused_connection_is_a_json_document_in_either_layout() {
    for test in ["tcp", "udp"] {
        let base = [test, "127.0.0.1", "-p", CLOSED, "-t", "1s"];
        let doc = sonde_failure(&[&base[..], &["-J"]].concat(), 1, "unreachable", "refused");
        assert_eq!(doc["test"], test);
        assert_eq!(doc["spec"]["port"], 17399);
        iperf3_failure(&[&base[..], &["--json=iperf3"]].concat(), 1, "refused");
        iperf3_failure(
            &[&base[..], &["--json=iperf3", "-R"]].concat(),
            1,
            "refused",
        );
    }
}

#[test]
fn a_usage_error_found_by_the_check_is_a_json_document() {
    let doc = sonde_failure(
        &["tcp", "::1", "-P", "0", "-J"],
        2,
        "invalid",
        "-P/--parallel",
    );
    assert_eq!(doc["spec"]["parallel"], 0);
    iperf3_failure(&["udp", "::1", "-l", "16", "--json=iperf3"], 2, "length");
    sonde_failure(&["ping", "::1", "-i", "0s", "-J"], 2, "invalid", "interval");
    // A spec file: one it cannot read names the file, with no spec.
    let missing = std::env::temp_dir().join("sonde-no-such-spec.toml");
    let doc = sonde_failure(
        &["run", missing.to_str().unwrap(), "-J"],
        2,
        "invalid",
        "sonde-no-such-spec.toml",
    );
    assert!(doc.get("spec").is_none(), "{doc}");
    // One it can read, aimed at a closed port.
    let file_dir = common::TempDir::new("cli");
    let file = file_dir.join("cli.toml");
    let spec = format!("test = \"tcp\"\nhost = \"127.0.0.1\"\nport = {CLOSED}\ntime_s = 1\n");
    std::fs::write(&file, spec).unwrap();
    sonde_failure(
        &["run", file.to_str().unwrap(), "-J"],
        1,
        "unreachable",
        "refused",
    );
    iperf3_failure(
        &["run", file.to_str().unwrap(), "--json=iperf3"],
        1,
        "refused",
    );
}

#[test]
fn a_server_s_refusal_is_a_json_document() {
    let server = ServerProc::start(&["--max-duration", "2s"]);
    let port = server.port.to_string();
    sonde_failure(
        &["tcp", "::1", "-p", &port, "-t", "5s", "-J"],
        1,
        "refused",
        "max_duration",
    );
    iperf3_failure(
        &["udp", "::1", "-p", &port, "-t", "5s", "--json=iperf3"],
        1,
        "max_duration",
    );
}

#[test]
fn ctrl_c_before_the_test_began_is_a_json_document() {
    // A server that takes the connection and never answers: sonde waits
    // in the handshake until Ctrl-C.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port().to_string();
    for (flag, kind_at) in [("-J", "/error/kind"), ("--json=iperf3", "")] {
        let child = sonde()
            .args(["tcp", "127.0.0.1", "-p", &port, flag])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Connected, and waiting for an answer that never comes.
        let _held = common::ready::accept_within(&silent);
        let o = common::interrupt_after(child, std::time::Duration::ZERO);
        assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
        let doc = json(&o);
        if kind_at.is_empty() {
            assert_eq!(doc["error"], "interrupted before the test began", "{doc}");
        } else {
            assert_eq!(doc.pointer(kind_at).unwrap(), "interrupted", "{doc}");
            assert_valid(&validator("error-v3.schema.json"), &doc);
        }
    }
    // With --logfile the logs go to the file too (-vv: debug).
    let file_dir = common::TempDir::new("ctrl-c");
    let file = file_dir.join("ctrl-c.log");
    let _ = std::fs::remove_file(&file);
    let child = sonde()
        .args(["tcp", "127.0.0.1", "-p", &port, "-vv", "--logfile"])
        .arg(&file)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let _held = common::ready::accept_within(&silent);
    let o = common::interrupt_after(child, std::time::Duration::ZERO);
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("DEBUG") && text.contains("stopped before the test began"),
        "{text}"
    );
    assert!(
        text.contains("sonde: interrupted before the test began"),
        "{text}"
    );
    drop(silent);
}

#[test]
fn without_json_a_failure_prints_nothing_on_stdout() {
    let o = run(&["tcp", "127.0.0.1", "-p", CLOSED]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(stderr(&o).starts_with("sonde: "), "{}", stderr(&o));
}
