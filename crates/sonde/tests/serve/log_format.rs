//! `--log-format json`: the server's log as one JSON object a line, with
//! the stable fields a log shipper filters on (docs/serve.md, "The
//! log"): a test run, a test refused by a limit (from sonde's client and
//! from iperf3's), each line read back and its fields checked.

use crate::common;
use common::iperf3_client::iperf3;
use common::{sonde, tcp, ServerProc};
use serde_json::Value;

/// The log's lines whose event is `event`.
fn events(lines: &[Value], event: &str) -> Vec<Value> {
    lines
        .iter()
        .filter(|l| l["event"] == event)
        .cloned()
        .collect()
}

#[test]
fn the_json_log_names_each_event_with_its_peer_test_limit_and_reason() {
    let server = ServerProc::start(&[
        "--no-reflector",
        "--log-format",
        "json",
        "--max-duration",
        "5s",
    ]);
    let ran = tcp("::1", server.port, &["-t", "1", "-J"]);
    assert!(ran.status.success(), "{}", server.log());
    let refused = tcp("::1", server.port, &["-t", "10"]);
    assert_eq!(refused.status.code(), Some(1));
    let by_iperf3 = iperf3("iperf3", "127.0.0.1", server.port, &["-t", "999"]);
    assert!(!by_iperf3.status.success());
    assert!(
        server.wait_for_log("\"event\":\"test_finished\""),
        "{}",
        server.log()
    );
    assert!(
        server.wait_for_log("iperf3 test refused"),
        "{}",
        server.log()
    );

    // Every line is an object with its time, level and message.
    let lines: Vec<Value> = server
        .log()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    for l in &lines {
        let time = l["time"].as_str().unwrap_or_default();
        assert!(
            time.starts_with("20") && time.ends_with('Z') && time.len() == 27,
            "time {time} in {l}"
        );
        assert!(
            ["error", "warn", "info", "debug", "trace"].contains(&l["level"].as_str().unwrap()),
            "{l}"
        );
        assert!(l["message"].is_string(), "{l}");
    }

    // The test that ran: started and finished under one id, from ::1.
    let started = events(&lines, "test_started");
    let finished = events(&lines, "test_finished");
    assert_eq!((started.len(), finished.len()), (1, 1), "{lines:#?}");
    let id = started[0]["test"].as_str().unwrap();
    assert!(!id.is_empty());
    assert_eq!(finished[0]["test"], id);
    assert!(
        started[0]["peer"].as_str().unwrap().starts_with("[::1]:"),
        "{}",
        started[0]
    );

    // The two refused: the limit and the reason by their names, whoever's
    // client asked.
    let refusals = events(&lines, "test_refused");
    assert_eq!(refusals.len(), 2, "{refusals:#?}");
    for (r, from) in refusals.iter().zip(["[::1]:", "127.0.0.1:"]) {
        assert_eq!(r["level"], "warn");
        assert_eq!(r["reason"], "limit_exceeded", "{r}");
        assert_eq!(r["limit"], "max_duration", "{r}");
        assert!(r["peer"].as_str().unwrap().starts_with(from), "{r}");
        assert!(
            r["refusal"].as_str().unwrap().contains("asked: 10s")
                || r["refusal"].as_str().unwrap().contains("asked: 16m 39s"),
            "{r}"
        );
    }
    assert_eq!(events(&lines, "listening").len(), 2, "{lines:#?}");
}

#[test]
fn an_unknown_log_format_is_a_usage_error() {
    let out = sonde()
        .args(["serve", "-p", "0", "--log-format", "xml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--log-format") && err.contains("text") && err.contains("json"),
        "{err}"
    );
}
