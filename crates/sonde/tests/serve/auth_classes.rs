//! Limit classes (issue 19) with real servers and clients on loopback:
//! the same request gets the outcome the configuration says from a
//! friend prefix (cut), an unknown prefix (refused) and with a token (in
//! full); iperf3 clients are refused when `auth.iperf3 = false` and held
//! to their prefix's class otherwise; third-party tests need a token
//! that may ask for them.
//!
//! Sources: the friend is 127.0.0.2 (`-B`), everyone else 127.0.0.1 or
//! ::1; all on loopback.

use crate::common;
use common::auth::{audit_lines, scratch, server_with, token_file, OPS_SECRET};
use common::iperf3_client::{iperf3, text};
use common::{sonde, stderr, ServerProc};

/// Friends (127.0.0.2) are cut to 1 s and 2 streams; strangers (the rest
/// of loopback, and ::1) refused over 1 s; `ops` holds a class of its own
/// with the `[limits]` caps (10 s).
fn classes(audit: &std::path::Path, auth_extra: &str) -> String {
    format!(
        r#"[limits]
max_duration = "10s"
[auth]
audit_log = "{}"
{auth_extra}
[[auth.classes]]
name = "friends"
prefixes = ["127.0.0.2/32"]
max_duration = "1s"
max_streams = 2
max_udp_rate = "20M"
over_limit = "cut"
[[auth.classes]]
name = "strangers"
prefixes = ["127.0.0.0/8", "::/0"]
max_duration = "1s"
over_limit = "refuse"
[[auth.classes]]
name = "staff"
[[auth.tokens]]
name = "ops"
secret = "{OPS_SECRET}"
class = "staff"
may = ["third_party"]
[[auth.tokens]]
name = "plain"
secret = "plain-secret-0123456789"
"#,
        audit.display()
    )
}

fn tcp_from(port: u16, args: &[&str]) -> std::process::Output {
    sonde()
        .args(["tcp", "127.0.0.1", "-p", &port.to_string()])
        .args(["-t", "2", "-P", "3", "-J"])
        .args(args)
        .output()
        .expect("run sonde tcp")
}

fn json(out: &std::process::Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", stderr(out));
    serde_json::from_slice(&out.stdout).expect("JSON")
}

#[test]
fn the_same_request_is_cut_refused_or_run_by_class() {
    let dir = scratch("classes");
    let audit = dir.join("audit.jsonl");
    let server = server_with(&dir, &classes(&audit, ""), &[]);

    // A friend: cut to the class's caps, told so, and the result says the
    // test that ran.
    let out = tcp_from(server.port, &["-B", "127.0.0.2"]);
    let doc = json(&out);
    assert_eq!(doc["spec"]["time_s"], 1.0, "{}", doc["spec"]);
    assert_eq!(doc["spec"]["parallel"], 2, "{}", doc["spec"]);
    let err = stderr(&out);
    assert!(err.contains("max_duration cut to 1s"), "{err}");
    assert!(err.contains("max_streams cut to 2"), "{err}");
    assert!(err.contains("class friends"), "{err}");

    // A stranger: refused, naming the class and the limit.
    let out = tcp_from(server.port, &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("max_duration is 1s for class strangers"),
        "{err}"
    );

    // A token from the strangers' address: its own class, in full.
    let token = token_file(&dir, "ops", OPS_SECRET);
    let doc = json(&tcp_from(
        server.port,
        &["--token-file", token.to_str().unwrap()],
    ));
    assert_eq!(doc["spec"]["time_s"], 2.0);
    assert_eq!(doc["spec"]["parallel"], 3);
    assert!(
        doc["duration_s"].as_f64().unwrap_or(0.0) >= 1.5,
        "{}",
        doc["duration_s"]
    );

    let lines = audit_lines(&audit);
    let outcomes: Vec<(&str, &str)> = lines
        .iter()
        .map(|l| {
            (
                l["class"].as_str().unwrap_or(""),
                l["outcome"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            ("friends", "cut"),
            ("strangers", "refused"),
            ("staff", "accepted")
        ],
        "{lines:?}"
    );
    assert_eq!(lines[0]["client"], "127.0.0.2");
    assert_eq!(lines[0]["streams"], 2, "the cut test is logged");
    assert_eq!(lines[2]["token"], "ops");
}

#[test]
fn a_friends_udp_test_is_paced_down_to_its_class_rate() {
    let dir = scratch("udp-cut");
    let server = server_with(&dir, &classes(&dir.join("a.jsonl"), ""), &[]);
    let out = sonde()
        .args(["udp", "127.0.0.1", "-p", &server.port.to_string()])
        .args(["-t", "1", "-b", "50M", "-B", "127.0.0.2", "-J"])
        .output()
        .expect("run sonde udp");
    let doc = json(&out);
    assert_eq!(doc["spec"]["bitrate_bps"], 20_000_000, "{}", doc["spec"]);
    let err = stderr(&out);
    assert!(err.contains("max_rate cut to 20.0 Mbit/s"), "{err}");
    assert!(err.contains("asked: 50.0 Mbit/s"), "{err}");
    // What was sent is what a 20 Mbit/s test sends, not 50: 20 Mbit/s of
    // 1400-byte payloads for 1 s is a departure every 0.56 ms before the
    // end, 1786 packets (50 Mbit/s would be 4465). All of them arrive,
    // but for at most a tenth lost on loopback (the machine's, not
    // sonde's), and none that was not sent.
    common::assert_udp_delivered(&doc["summary"]["forward"], 1786, "friends, cut");
}

#[test]
fn iperf3_clients_are_refused_or_held_to_their_class() {
    let dir = scratch("iperf3");
    let audit = dir.join("audit.jsonl");
    let off = server_with(&dir, &classes(&audit, "iperf3 = false"), &[]);
    let out = iperf3("iperf3", "127.0.0.1", off.port, &["-t", "1"]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        audit_lines(&audit)
            .iter()
            .any(|l| l["protocol"] == "iperf3" && l["outcome"] == "refused"),
        "{:?}",
        audit_lines(&audit)
    );
    drop(off);

    let dir = scratch("iperf3-on");
    let audit = dir.join("audit.jsonl");
    let on = server_with(&dir, &classes(&audit, ""), &[]);
    // Over the strangers' 1 s: refused (iperf3 cannot be told of a cut).
    let out = iperf3("iperf3", "127.0.0.1", on.port, &["-t", "3"]);
    assert!(!out.status.success(), "{}", text(&out));
    // Within it: runs.
    let out = iperf3("iperf3", "127.0.0.1", on.port, &["-t", "1"]);
    assert!(out.status.success(), "{}", text(&out));
    let lines = audit_lines(&audit);
    let iperf3_lines: Vec<_> = lines
        .iter()
        .filter(|l| l["protocol"] == "iperf3")
        .map(|l| {
            (
                l["class"].as_str().unwrap_or(""),
                l["outcome"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        iperf3_lines,
        [("strangers", "refused"), ("strangers", "accepted")],
        "{lines:?}"
    );
}

#[test]
fn third_party_tests_need_a_token_that_may() {
    let dir = scratch("third-party");
    let audit = dir.join("audit.jsonl");
    let target = ServerProc::start(&["--no-reflector"]);
    let agent = server_with(&dir, &classes(&audit, ""), &[]);
    let via = |args: &[&str]| {
        sonde()
            .args(["tcp", "::1", "-p", &target.port.to_string(), "-t", "1"])
            .args(["--via", &format!("[::1]:{}", agent.port)])
            .args(args)
            .output()
            .expect("run sonde")
    };
    let out = via(&[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("may not ask"), "{}", stderr(&out));
    let plain = token_file(&dir, "plain", "plain-secret-0123456789");
    let out = via(&["--token-file", plain.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("may not ask"), "{}", stderr(&out));
    let ops = token_file(&dir, "ops", OPS_SECRET);
    let out = via(&["--token-file", ops.to_str().unwrap(), "-J"]);
    let doc = json(&out);
    assert!(
        doc["summary"]["forward"]["received_bytes"]
            .as_u64()
            .unwrap_or(0)
            > 0,
        "{doc}"
    );
    let lines = audit_lines(&audit);
    let last = lines.last().expect("audit lines");
    assert_eq!(last["test"], "third_party_tcp");
    assert_eq!(last["outcome"], "accepted");
    assert_eq!(last["token"], "ops");
    assert_eq!(last["target"], format!("::1:{}", target.port));
}

/// The QoS method's background comes from a third-party agent: with the
/// agent's token it runs; without, the agent refuses it.
#[test]
fn qos_via_an_agent_needs_the_agents_token() {
    let dir = scratch("qos");
    let receiver = ServerProc::start(&["--no-reflector"]);
    let agent = server_with(&dir, &classes(&dir.join("a.jsonl"), ""), &[]);
    let qos = |extra: &[&str]| {
        sonde()
            .args(["qos", "check", "::1", "-p", &receiver.port.to_string()])
            .args(["--via", &format!("[::1]:{}", agent.port)])
            .args(["--checks", "marking", "--classes", "EF", "-t", "1s"])
            .args(["--gap", "0s", "-J"])
            .args(extra)
            .output()
            .expect("run sonde qos")
    };
    let out = qos(&[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("may not ask"), "{}", stderr(&out));
    let ops = token_file(&dir, "ops", OPS_SECRET);
    let doc = json(&qos(&["--token-file", ops.to_str().unwrap()]));
    let froms: Vec<&str> = doc["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter_map(|c| c["from"].as_str())
        .collect();
    assert!(froms.iter().any(|f| *f != "this host"), "{froms:?}");
}
