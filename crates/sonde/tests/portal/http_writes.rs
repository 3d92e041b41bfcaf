//! The API's writes against a real agent: who may write (no token 401, a
//! wrong one 403, reads public or not), the body cap, campaigns created,
//! paused, resumed and deleted through the API and run by the agent, and
//! "run a test now" watched live over Server-Sent Events.

use crate::common;
use common::http::{get, get_as, json, parse_metrics, send, wait_for, Agent};
use common::ServerProc;
use std::io::{BufRead, BufReader, Write};
use std::time::Duration;

const TOKEN: &str = "0123456789abcdef-ops";

fn setup(test: &str, read_public: bool) -> (common::TempDir, ServerProc, u16) {
    let agent = Agent::builder(&format!("httpw-{test}"));
    let campaigns = agent.dir().join("campaigns");
    std::fs::create_dir_all(&campaigns).unwrap();
    let audit = agent.dir().join("audit.jsonl");
    let Agent { server, port, dir } = agent
        .args(["--campaigns", campaigns.to_str().unwrap()])
        .start(&format!(
            "[limits]\nmax_duration = \"20s\"\n[http]\nread_public = {read_public}\n\
             max_body_bytes = 10000\ninterface_interval = \"1s\"\ninterfaces = [\"lo\"]\n\
             tokens = [{{ name = \"ops\", token = \"{TOKEN}\", may = [\"run_now\", \"campaigns\", \"ingest\", \"mesh\", \"readings\", \"incidents\"] }}]\n\
             [targets]\nping = [\"::1/128\"]\n\
             [auth]\naudit_log = \"{}\"\n",
            audit.display()
        ));
    (dir, server, port)
}

#[test]
fn writes_need_a_valid_token_and_bodies_are_capped() {
    let (dir, server, port) = setup("auth", true);
    let spec = r#"{"test": "ping", "host": "::1", "count": 2, "interval_s": 0.2}"#;
    let (status, body) = send(port, "POST", "/api/v1/tests", "", "application/json", spec);
    assert_eq!(status, 401, "{body}");
    assert!(json(&body)["error"]
        .as_str()
        .unwrap()
        .contains("bearer token"));
    let (status, body) = send(
        port,
        "POST",
        "/api/v1/tests",
        "not-our-token-at-all",
        "application/json",
        spec,
    );
    assert_eq!(status, 403, "{body}");
    for (method, path) in [
        ("POST", "/api/v1/campaigns"),
        ("POST", "/api/v1/campaigns/x/pause"),
        ("DELETE", "/api/v1/campaigns/x"),
    ] {
        let (status, _) = send(port, method, path, "", "application/toml", "name = \"x\"");
        assert_eq!(status, 401, "{method} {path}");
    }
    assert!(
        server.wait_for_log("wrong token refused"),
        "{}",
        server.log()
    );
    // Reading is public here.
    assert_eq!(get(port, "/api/v1/overview").0, 200);
    // A body over http.max_body_bytes: 413, and the server goes on.
    let big = format!(
        "{{\"test\": \"ping\", \"host\": \"{}\"}}",
        "a".repeat(20_000)
    );
    let (status, _) = send(
        port,
        "POST",
        "/api/v1/tests",
        TOKEN,
        "application/json",
        &big,
    );
    assert_eq!(status, 413);
    // Over the control port's limits: refused, and counted by limit.
    let long = r#"{"test": "tcp", "host": "::1", "time_s": 60}"#;
    let (status, body) = send(
        port,
        "POST",
        "/api/v1/tests",
        TOKEN,
        "application/json",
        long,
    );
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("max_duration"), "{body}");
    // The audit log has who asked what, toward where, and the refusal.
    let audit = std::fs::read_to_string(dir.join("audit.jsonl")).unwrap();
    let line = json(audit.lines().last().unwrap());
    assert_eq!(line["protocol"], "http", "{line}");
    assert_eq!(line["token"], "ops");
    assert_eq!(line["client"], "::1");
    assert_eq!(line["test"], "tcp");
    assert_eq!(line["target"], "::1");
    assert_eq!(line["outcome"], "refused");
    assert!(
        line["reason"].as_str().unwrap().contains("max_duration"),
        "{line}"
    );
    let (status, body) = send(
        port,
        "POST",
        "/api/v1/tests",
        TOKEN,
        "application/json",
        "{}",
    );
    assert_eq!(status, 400, "{body}");
    let families = parse_metrics(&get(port, "/metrics").1);
    let refused = &families["sonde_tests_refused"][0];
    assert_eq!(refused[1]["reason"], "max_duration");
    assert_eq!(refused[2], 1.0);
    // No CORS headers: a browser on another origin cannot read the API.
    let mut s = std::net::TcpStream::connect(("::1", port)).unwrap();
    s.write_all(
        b"GET /api/v1/info HTTP/1.1\r\nHost: localhost\r\nOrigin: http://elsewhere.example\r\n\
          Connection: close\r\n\r\n",
    )
    .unwrap();
    let mut raw = String::new();
    std::io::Read::read_to_string(&mut s, &mut raw).unwrap();
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    assert!(
        !raw.to_ascii_lowercase().contains("access-control-allow"),
        "{raw}"
    );
}

#[test]
fn reading_can_need_a_token_too() {
    let (_dir, _server, port) = setup("private", false);
    let (status, body) = get(port, "/api/v1/results");
    assert_eq!(status, 401, "{body}");
    assert_eq!(get(port, "/metrics").0, 401);
    assert_eq!(
        get_as(port, "/api/v1/results", "wrong-token-wrong-token").0,
        403
    );
    let (status, body) = get_as(port, "/api/v1/results", TOKEN);
    assert_eq!(status, 200, "{body}");
    assert_eq!(json(&body), serde_json::json!([]));
}

fn plan(name: &str) -> String {
    format!(
        "name = \"{name}\"\n[schedule]\nrepeat = \"PT3S\"\n\
         [[endpoint]]\nname = \"A\"\naddress = \"::1\"\n[[endpoint]]\nname = \"B\"\naddress = \"::1\"\n\
         [[step]]\nname = \"ping A to B\"\ntest = \"ping\"\ncount = 2\ninterval_s = 0.1\n"
    )
}

/// The campaign's runs by state (null until the agent has taken it up).
fn runs_by_state(port: u16, name: &str) -> serde_json::Value {
    let (status, body) = get(port, &format!("/api/v1/campaigns/{name}"));
    match status {
        200 => json(&body)["status"]["runs"].clone(),
        404 => serde_json::Value::Null,
        _ => panic!("{status} {body}"),
    }
}

#[test]
fn a_campaign_is_created_paused_resumed_and_deleted_through_the_api() {
    let (dir, _server, port) = setup("campaign", true);
    let (status, body) = send(
        port,
        "POST",
        "/api/v1/campaigns",
        TOKEN,
        "application/toml",
        &plan("loop"),
    );
    assert_eq!(status, 201, "{body}");
    assert_eq!(json(&body)["steps"], 1);
    assert!(dir.join("campaigns/loop.toml").exists());
    // The same again: a conflict; a plan that does not read: 400.
    let (status, _) = send(
        port,
        "POST",
        "/api/v1/campaigns",
        TOKEN,
        "application/toml",
        &plan("loop"),
    );
    assert_eq!(status, 409);
    let (status, body) = send(
        port,
        "POST",
        "/api/v1/campaigns",
        TOKEN,
        "application/toml",
        "name = 3",
    );
    assert_eq!(status, 400, "{body}");
    // As JSON: the same keys.
    let as_json = r#"{"name": "json-plan", "schedule": {"repeat": "PT1H"},
        "endpoint": [{"name": "A", "address": "::1"}, {"name": "B", "address": "::1"}],
        "step": [{"test": "ping", "count": 1}]}"#;
    let (status, body) = send(
        port,
        "POST",
        "/api/v1/campaigns",
        TOKEN,
        "application/json",
        as_json,
    );
    assert_eq!(status, 201, "{body}");
    assert!(dir.join("campaigns/json-plan.toml").exists());

    // The agent takes it up and runs it.
    assert!(
        wait_for(30, || runs_by_state(port, "loop")["done"].as_i64()
            >= Some(1)),
        "{}",
        get(port, "/api/v1/campaigns/loop").1
    );
    let (status, body) = get(port, "/api/v1/results?campaign=loop");
    assert_eq!(status, 200);
    assert!(!json(&body).as_array().unwrap().is_empty());
    let (_, body) = get(port, "/api/v1/campaigns/loop/runs");
    let run_id = json(&body)[0]["id"].as_str().unwrap().to_string();
    let (status, body) = get(port, &format!("/api/v1/runs/{run_id}/events"));
    assert_eq!(status, 200);
    assert!(body.contains("started"), "{body}");

    // Paused: its runs are missed, and say why.
    let (status, body) = send(
        port,
        "POST",
        "/api/v1/campaigns/loop/pause",
        TOKEN,
        "text/plain",
        "",
    );
    assert_eq!(status, 200, "{body}");
    assert!(
        wait_for(20, || {
            let (_, body) = get(port, "/api/v1/campaigns/loop");
            body.contains("the campaign was paused")
        }),
        "{}",
        get(port, "/api/v1/campaigns/loop").1
    );
    let (_, body) = get(port, "/api/v1/campaigns");
    let all = json(&body);
    let c = all
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "loop")
        .unwrap();
    assert_eq!(c["paused"], true);
    let done_before = runs_by_state(port, "loop")["done"].as_i64().unwrap();
    let (status, _) = send(
        port,
        "POST",
        "/api/v1/campaigns/loop/resume",
        TOKEN,
        "text/plain",
        "",
    );
    assert_eq!(status, 200);
    assert!(wait_for(20, || {
        runs_by_state(port, "loop")["done"].as_i64().unwrap() > done_before
    }));
    let (status, _) = send(
        port,
        "POST",
        "/api/v1/campaigns/nope/pause",
        TOKEN,
        "text/plain",
        "",
    );
    assert_eq!(status, 404);

    // Deleted: the file goes, the history stays.
    let (status, body) = send(
        port,
        "DELETE",
        "/api/v1/campaigns/loop",
        TOKEN,
        "text/plain",
        "",
    );
    assert_eq!(status, 202, "{body}");
    assert!(!dir.join("campaigns/loop.toml").exists());
    let (status, _) = send(
        port,
        "DELETE",
        "/api/v1/campaigns/loop",
        TOKEN,
        "text/plain",
        "",
    );
    assert_eq!(status, 404);
    assert_eq!(get(port, "/api/v1/campaigns/loop").0, 200);
    let (status, _) = send(
        port,
        "DELETE",
        "/api/v1/campaigns/..%2Fx",
        TOKEN,
        "text/plain",
        "",
    );
    assert_eq!(status, 400);
}

/// The lines of `/api/v1/events`, read on a thread of their own, once
/// its status line is in: the stream's handler subscribes before it
/// answers, so no event of a test started after this can be missed.
fn event_lines(port: u16) -> std::sync::mpsc::Receiver<String> {
    let mut sse = std::net::TcpStream::connect(("::1", port)).unwrap();
    sse.write_all(b"GET /api/v1/events HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    sse.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(sse).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let status_line = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(status_line.starts_with("HTTP/1.1 200"), "{status_line}");
    rx
}

#[test]
fn a_test_run_now_is_seen_live_and_kept() {
    let (dir, _server, port) = setup("live", true);
    // Watch the events stream from before the test starts.
    let rx = event_lines(port);
    let spec = r#"{"test": "ping", "host": "::1", "count": 5, "interval_s": 0.2}"#;
    let (status, body) = send(
        port,
        "POST",
        "/api/v1/tests",
        TOKEN,
        "application/json",
        spec,
    );
    assert_eq!(status, 202, "{body}");
    let run_id = json(&body)["run_id"].as_str().unwrap().to_string();
    let audit = std::fs::read_to_string(dir.join("audit.jsonl")).unwrap();
    let line = json(audit.lines().last().unwrap());
    assert_eq!(
        (
            &line["protocol"],
            &line["token"],
            &line["test"],
            &line["outcome"]
        ),
        (
            &"http".into(),
            &"ops".into(),
            &"ping".into(),
            &"accepted".into()
        ),
        "{line}"
    );
    let mut names = Vec::new();
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(20)) {
        if let Some(name) = line.strip_prefix("event: ") {
            names.push(name.to_string());
        }
        if let Some(data) = line.strip_prefix("data: ") {
            let data = json(data);
            assert_eq!(data["run_id"], run_id.as_str(), "{line}");
        }
        if names
            .last()
            .is_some_and(|n| n == "finished" || n == "failed")
        {
            break;
        }
    }
    assert_eq!(
        names.first().map(String::as_str),
        Some("started"),
        "{names:?}"
    );
    assert_eq!(
        names.iter().filter(|n| *n == "reply").count(),
        5,
        "{names:?}"
    );
    assert_eq!(
        names.last().map(String::as_str),
        Some("finished"),
        "{names:?}"
    );
    // Kept, with who asked.
    assert!(wait_for(10, || {
        let (_, body) = get(port, "/api/v1/results?label=by=ops");
        json(&body).as_array().is_some_and(|a| a.len() == 1)
    }));
    assert_eq!(json(&get(port, "/api/v1/live").1), serde_json::json!([]));
    // Each answer in the RTT histogram.
    let families = parse_metrics(&get(port, "/metrics").1);
    let hist = families["sonde_ping_rtt_seconds"].as_array().unwrap();
    let count = hist
        .iter()
        .find(|s| s[0] == "sonde_ping_rtt_seconds_count")
        .unwrap();
    assert_eq!(count[1]["target"], "::1");
    assert_eq!(count[2], 5.0);
    let buckets = hist
        .iter()
        .filter(|s| s[0] == "sonde_ping_rtt_seconds_bucket")
        .count();
    assert_eq!(buckets, 21, "smokeping_prober's 20 bounds and +Inf");
}

/// A method run now streams its typed progress (`event: method`), one
/// repeat run per trial the kept method holds, in order: the events the
/// CLI's `sonde repeat` prints from.
#[test]
fn a_method_run_now_streams_its_typed_progress() {
    let (_dir, _server, port) = setup("method", true);
    let rx = event_lines(port);
    let spec = r#"{"method": "repeat",
        "test": {"test": "ping", "host": "::1", "count": 2, "interval_s": 0.1},
        "step": {"repeat": {"rule": "times", "runs": 3}}}"#;
    let (status, body) = send(
        port,
        "POST",
        "/api/v1/tests",
        TOKEN,
        "application/json",
        spec,
    );
    assert_eq!(status, 202, "{body}");
    let run_id = json(&body)["run_id"].as_str().unwrap().to_string();
    let mut runs = Vec::new();
    let mut name = String::new();
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(20)) {
        if let Some(n) = line.strip_prefix("event: ") {
            name = n.to_string();
        }
        if let (Some(data), "method") = (line.strip_prefix("data: "), name.as_str()) {
            let data = json(data);
            assert_eq!(data["run_id"], run_id.as_str(), "{data}");
            assert_eq!(data["kind"], "repeat_run", "{data}");
            runs.push(data["event"]["result_id"].as_str().unwrap().to_string());
            if runs.len() == 3 {
                break;
            }
        }
    }
    assert_eq!(runs.len(), 3, "{runs:?}");
    // The method kept holds those runs, in that order.
    let trials = || -> Vec<String> {
        let (_, body) = get(port, "/api/v1/methods");
        json(&body)
            .as_array()
            .and_then(|m| m.first().cloned())
            .and_then(|m| m["trials"].as_array().cloned())
            .map(|t| {
                t.iter()
                    .map(|r| r["id"].as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    assert!(
        wait_for(20, || trials().len() == 3),
        "{}",
        get(port, "/api/v1/methods").1
    );
    assert_eq!(trials(), runs);
}

#[test]
fn the_agent_samples_its_interfaces_for_load_beside_latency() {
    // Loopback, sampled every second (interfaces and interface_interval
    // in the config): the API's own tests cross it.
    let (_dir, _server, port) = setup("load", true);
    let names = |port| {
        json(&get(port, "/api/v1/interfaces").1)
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["name"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert!(wait_for(10, || names(port) == ["lo"]), "{:?}", names(port));
    let first = "lo";
    // Two samples make a rate; a ping makes the RTT panel's point.
    let spec = r#"{"test": "ping", "host": "::1", "count": 2, "interval_s": 0.2}"#;
    let (status, _) = send(
        port,
        "POST",
        "/api/v1/tests",
        TOKEN,
        "application/json",
        spec,
    );
    assert_eq!(status, 202);
    assert!(wait_for(15, || {
        let chart = json(&get(port, &format!("/api/v1/load?interface={first}")).1);
        let rx = chart["panels"][0]["series"][0]["points"]
            .as_array()
            .unwrap()
            .len();
        let rtt = chart["panels"][1]["series"][0]["points"]
            .as_array()
            .unwrap()
            .len();
        rx >= 2 && rtt == 1
    }));
    let chart = json(&get(port, &format!("/api/v1/load?interface={first}")).1);
    assert_eq!(chart["panels"][0]["series"][0]["name"], "rx");
    assert_eq!(chart["panels"][1]["y_label"], "RTT (ms)");
    for p in chart["panels"][0]["series"][0]["points"]
        .as_array()
        .unwrap()
    {
        assert!(p[1].as_f64().unwrap() >= 0.0, "{p}");
    }
}
