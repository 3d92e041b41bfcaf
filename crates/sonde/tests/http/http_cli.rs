//! `sonde http` against real servers: the in-process server of
//! tests/common/http_server.rs, whose delays, workers and stalls are
//! programmed (the known truth), and Debian's nginx. Timing checks run
//! one at a time; their bounds are the (1 ms on a phase, 1 % on
//! a rate, the knee within one step).

use crate::common;
use common::http_server::HttpServer;
use common::nginx::Nginx;
use common::schema::{assert_rejects, assert_valid, remove, result_v3};
use common::timing;
use common::{sonde, stderr};
use serde_json::Value;
use std::time::Duration;

/// `sonde http ARGS -J`: its JSON document, checked against the
/// published result schema.
fn http(args: &[&str]) -> Value {
    let out = sonde().arg("http").args(args).arg("-J").output().unwrap();
    assert!(
        out.status.success(),
        "sonde http {args:?}: {}",
        stderr(&out)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_valid(&result_v3(), &doc);
    doc
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// The phases of `ttfb_ms=20&transfer_ms=10`: the quickest request within
/// a millisecond of the programmed delays, and none early (the server
/// starts its clock once it has read the request); the median within a
/// few milliseconds, which is what a loaded 2-core machine allows (a late
/// read of the headers moves time from transfer to waiting).
fn assert_phases_are_the_programmed_delays(p: &Value) {
    let (waiting, transfer) = (&p["waiting"], &p["transfer"]);
    assert!(num(&waiting["min"]) >= 20.0, "waiting early: {p}");
    assert!(num(&waiting["min"]) <= 21.0, "waiting {waiting} ms: {p}");
    assert!(num(&waiting["median"]) <= 25.0, "waiting {waiting}: {p}");
    assert!(num(&transfer["min"]) <= 11.0, "transfer {transfer}: {p}");
    let median = num(&transfer["median"]);
    assert!((5.0..=15.0).contains(&median), "transfer {transfer}: {p}");
}

#[test]
fn phases_match_the_programmed_delays() {
    let _t = timing();
    let server = HttpServer::start();
    let url = server.url("/delay?ttfb_ms=20&transfer_ms=10&size=1000");
    let doc = http(&[&url, "-c", "1", "-n", "20"]);
    assert_eq!(doc["test"], "http");
    let h = &doc["http"];
    assert_eq!(h["requests"], 20);
    assert_eq!(h["status"]["200"], 20);
    let p = &h["phases_ms"];
    assert_phases_are_the_programmed_delays(p);
    let total = &p["total"];
    assert!(num(&total["min"]) >= 30.0, "total {total} ms, early");
    assert!(num(&total["min"]) <= 31.5, "total {total} ms");
    assert!(num(&total["median"]) <= 35.0, "total {total} ms");
    // The schema holds an http result to its shape.
    assert_rejects(&result_v3(), &doc, "an unknown error kind", |d| {
        d["http"]["errors_by_kind"]["gremlins"] = 1.into();
    });
    assert_rejects(&result_v3(), &doc, "no http figures", |d| {
        remove(d, "http");
    });
    // One connection, kept alive: one connect for 20 requests.
    assert_eq!(p["connect"]["count"], 1);
    assert!(p.get("dns").is_none(), "an address literal needs no lookup");
    assert_eq!(server.connections(), 1);
    // Without keep-alive, a connection per request, as ab without -k.
    let doc = http(&[
        &server.url("/delay?size=10"),
        "-c",
        "2",
        "-n",
        "10",
        "--no-keepalive",
    ]);
    assert_eq!(doc["http"]["phases_ms"]["connect"]["count"], 10);
    assert_eq!(server.connections(), 11);
}

#[test]
fn an_open_loop_holds_its_rate() {
    let _t = timing();
    let server = HttpServer::start();
    let url = server.url("/delay?size=100");
    let doc = http(&[&url, "--rate", "2000", "-c", "20", "-t", "3s"]);
    let h = &doc["http"];
    let sent = num(&h["requests"]);
    // 2,000 a second for 3 s: never more than the schedule (6,000, and the
    // one due at 3 s exactly), and on a loaded machine no more than a
    // quarter second of it left undone when the deadline ends the run.
    assert!(sent <= 6001.0, "{sent} requests");
    assert!(sent >= 5500.0, "{sent} requests");
    assert_eq!(h["rate"], 2000.0);
    assert!(h["uncorrected_latency_ms"].is_object());
    assert_eq!(h["errors"], 0);
}

#[test]
fn a_stall_shows_in_the_corrected_percentiles_and_hides_in_the_uncorrected() {
    let _t = timing();
    let server = HttpServer::start();
    let url = server.url("/delay?size=100");
    let child = sonde()
        .args(["http", &url, "--rate", "1000", "-c", "10", "-t", "4s", "-J"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    server.stall(Duration::from_millis(500));
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let h = &doc["http"];
    let corrected = num(&h["latency_ms"]["p99"]);
    let uncorrected = num(&h["uncorrected_latency_ms"]["p99"]);
    // About 500 of 4,000 requests fell due in the stall: from their
    // intended times, the worst waited nearly 500 ms.
    assert!(corrected > 250.0, "corrected p99 {corrected} ms: {h}");
    // From their actual sends, only the 10 caught in flight waited: the
    // stall hides from the uncorrected p99 (a loaded machine's own delays
    // stay well under the stall's half).
    assert!(uncorrected < 150.0, "uncorrected p99 {uncorrected} ms: {h}");
    assert!(uncorrected < corrected / 2.0, "{h}");
    assert!(num(&h["uncorrected_latency_ms"]["max"]) > 400.0);
}

/// What a fixture of 8 workers of `work_ms` fixes, whatever the machine:
/// no step serves faster than 8 / `work_ms` requests a millisecond (and
/// what was in flight when it began), and no answer comes sooner.
fn requests_per_s(step: &Value, work_ms: f64) -> f64 {
    let capacity_per_s = 8.0 * 1000.0 / work_ms;
    let rps = num(&step["requests_per_s"]);
    assert!(
        rps <= capacity_per_s * 1.03,
        "{rps} req/s from 8 workers of {work_ms} ms: {step}"
    );
    rps
}

fn p50(step: &Value) -> f64 {
    num(&step["latency_ms"]["p50"])
}

/// The knee is sonde's rule applied to these steps (docs/http.md): every
/// step before it within `rise` of the first step's median, it above.
fn assert_knee_follows_the_rule(steps: &[Value], knee: usize, rise: f64) {
    let base = p50(&steps[0]);
    assert!(knee >= 1, "the first step is the base, not a knee");
    for s in &steps[1..knee] {
        assert!(p50(s) <= base * (1.0 + rise), "a rise before the knee: {s}");
    }
    assert!(p50(&steps[knee]) > base * (1.0 + rise), "{}", steps[knee]);
}

#[test]
fn the_knee_of_eight_workers_is_found() {
    let _t = timing();
    // 20 ms of work a request, so that what each request costs the two
    // ends (a fraction of a millisecond, more while the lab stream holds a
    // core) stays well inside the rule's 10 % rise: at 5 ms a loaded
    // machine's jitter alone made a knee at 6 connections.
    let server = HttpServer::builder()
        .workers(8)
        .work(Duration::from_millis(20))
        .start();
    let url = server.url("/delay?size=10");
    let chart_dir = common::TempDir::new("knee");
    let chart = chart_dir.join("knee.svg");
    let doc = http(&[
        &url,
        "--ramp",
        "c:2,4,6,8,9,10,12,16",
        "--step-time",
        "2s",
        "--chart",
        chart.to_str().unwrap(),
    ]);
    let h = &doc["http"];
    let steps = h["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 8);
    // Where the knee falls among 8 to 12 connections depends on this
    // machine's speed today (each request's overhead on both ends), so
    // what is checked is what the server's truth fixes. Never early:
    assert!(p50(&steps[0]) >= 20.0, "{}", steps[0]);
    let rates: Vec<f64> = steps.iter().map(|s| requests_per_s(s, 20.0)).collect();
    let plateau = rates.iter().copied().fold(0.0, f64::max);
    // Kleinrock's optimal load is the published product of the highest
    // throughput and the lowest median.
    let least = steps.iter().map(p50).fold(f64::INFINITY, f64::min);
    let optimal = num(&h["optimal_connections"]);
    assert!(
        (optimal - plateau * least / 1000.0).abs() <= 1e-6 * optimal.max(1.0),
        "optimal load {optimal}: {steps:?}"
    );
    // A knee exists: at 16 connections on 8 workers every request waits
    // behind another (40 ms, twice the unloaded 20 ms, by Little's law).
    let knee = h["knee"].as_u64().unwrap_or_else(|| panic!("no knee: {h}")) as usize;
    assert_knee_follows_the_rule(steps, knee, 0.10);
    // And it is where the throughput has levelled off: the knee's step
    // carries at least three quarters of the plateau (the first step, 2
    // connections, about a quarter of it).
    assert!(
        rates[knee] >= 0.75 * plateau,
        "knee at step {knee} ({} req/s) below the plateau of {plateau}: {steps:?}",
        rates[knee]
    );
    let at = steps[knee]["connections"].as_u64().unwrap();
    // The chart draws the steps and marks the knee where the result has it.
    let svg = std::fs::read_to_string(&chart).unwrap();
    assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(200)]);
    assert!(svg.contains("throughput by step") && svg.contains("latency by step"));
    // Each step keeps every phase (000 Figs 48–50 draw each against
    // load): the server's 20 ms of work is waiting, never less, at every
    // step; and the chart draws each phase's median by step.
    for s in steps {
        let waiting = num(&s["phases_ms"]["waiting"]["median"]);
        assert!(waiting >= 20.0, "waiting {waiting} ms: {s}");
        assert_eq!(s["phases_ms"]["total"]["count"], s["requests"], "{s}");
    }
    assert!(svg.contains("each phase by step (median)") && svg.contains("waiting"));
    assert!(
        svg.contains(&format!("knee ({at} connections)")),
        "knee at {at}"
    );
    let _ = std::fs::remove_file(&chart);
}

#[test]
fn the_knee_of_eight_workers_is_found_by_rate() {
    let _t = timing();
    let server = HttpServer::builder()
        .workers(8)
        .work(Duration::from_millis(5))
        .start();
    let url = server.url("/delay?size=10");
    let doc = http(&[
        &url,
        "-c",
        "32",
        "--ramp",
        "rate:1200,1400,1500,1600,1650,1700,1800",
        "--step-time",
        "2s",
    ]);
    let h = &doc["http"];
    let steps = h["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 7);
    let rates: Vec<f64> = steps.iter().map(|s| requests_per_s(s, 5.0)).collect();
    let plateau = rates.iter().copied().fold(0.0, f64::max);
    let knee = h["knee"].as_u64().unwrap_or_else(|| panic!("no knee: {h}")) as usize;
    assert_knee_follows_the_rule(steps, knee, 0.10);
    // Offered beyond 1,600 a second, the backlog grows without bound and
    // latency is counted from each request's intended time: the knee
    // comes at 1,650 (50 more a second, 100 queued by the step's end) or
    // before.
    let rate = num(&steps[knee]["rate"]);
    assert!(rate <= 1650.0, "knee at {rate} req/s: {h}");
    // Below the plateau the server keeps up: the knee is offered at least
    // 85 % of the most it served.
    assert!(
        rate >= 0.85 * plateau,
        "knee at {rate} req/s, plateau {plateau}: {h}"
    );
}

/// As many TLS handshakes as connections, sonde's count and the server's
/// (a fresh server), and no more than the two connections asked for.
fn assert_one_tls_handshake_per_connection(phases: &Value, server: &HttpServer) {
    let tls = phases["tls"]["count"].as_u64().unwrap();
    assert_eq!(
        tls,
        phases["connect"]["count"].as_u64().unwrap(),
        "{phases}"
    );
    assert_eq!(tls, server.connections(), "{phases}");
    assert!((1..=2).contains(&tls), "{phases}");
}

#[test]
fn tls_works_and_a_bad_certificate_is_an_error_by_kind() {
    let _t = timing();
    let server = HttpServer::start();
    let url = server.https_url("/delay?size=2000");
    let doc = http(&[&url, "-k", "-c", "2", "-n", "20"]);
    let h = &doc["http"];
    assert_eq!(h["status"]["200"], 20);
    // One handshake per connection opened. Two are allowed, but one
    // connection may serve all 20 before the second is needed.
    assert_one_tls_handshake_per_connection(&h["phases_ms"], &server);
    // Checked against the system's roots, a self-signed certificate fails.
    let doc = http(&[&url, "-c", "1", "-n", "3"]);
    let h = &doc["http"];
    assert_eq!(h["errors_by_kind"]["tls"], 3, "{h}");
    assert_eq!(h["requests"], 0);
}

#[test]
fn http2_carries_every_request_over_tls_and_in_clear_with_its_phases() {
    let _t = timing();
    let server = HttpServer::start();
    // Over TLS (ALPN h2): the phases hold as over HTTP/1.1.
    let url = server.https_url("/delay?ttfb_ms=20&transfer_ms=10&size=1000");
    let doc = http(&[&url, "--http2", "-k", "-c", "2", "-n", "20"]);
    let h = &doc["http"];
    assert_eq!(h["status"]["200"], 20, "{h}");
    assert_eq!(server.http2_requests(), 20, "every request came as HTTP/2");
    assert_eq!(doc["spec"]["version"], "2");
    let p = &h["phases_ms"];
    assert_one_tls_handshake_per_connection(p, &server);
    assert_phases_are_the_programmed_delays(p);
    // HTTP/2 counts the bodies' bytes.
    assert_eq!(h["received_bytes"], 20 * 1000);
    // In clear by prior knowledge (h2c), with a body sent on each stream.
    let dir = common::TempDir::new("http2");
    let body = dir.join("body.bin");
    std::fs::write(&body, vec![7u8; 3000]).unwrap();
    let doc = http(&[
        &server.url("/delay?size=10"),
        "--http2",
        "-m",
        "POST",
        "--body",
        body.to_str().unwrap(),
        "-c",
        "1",
        "-n",
        "10",
    ]);
    assert_eq!(doc["http"]["status"]["200"], 10, "{}", doc["http"]);
    assert_eq!(server.http2_requests(), 30);
    assert_eq!(server.body_bytes(), 10 * 3000);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn nginx_speaks_http2_to_sonde_and_a_server_without_it_is_an_error_by_kind() {
    let _t = timing();
    let nginx = Nginx::start();
    // sonde offers h2 alone: an answer means nginx agreed on HTTP/2.
    let doc = http(&[
        &nginx.https_url("/1k"),
        "--http2",
        "-k",
        "-c",
        "4",
        "-t",
        "1s",
    ]);
    let h = &doc["http"];
    assert!(num(&h["requests"]) > 100.0, "{h}");
    assert_eq!(h["status"]["200"], h["requests"]);
    assert_eq!(h["errors"], 0, "{h}");
    // nginx's plain port speaks HTTP/1.1 only: no answer, and why.
    let doc = http(&[&nginx.http_url("/1k"), "--http2", "-c", "1", "-n", "3"]);
    let h = &doc["http"];
    assert_eq!(h["requests"], 0, "{h}");
    assert_eq!(h["errors"], 3, "{h}");
}

#[test]
fn a_request_times_out_at_its_own_limit_never_at_an_earlier_ones() {
    let _t = timing();
    let server = HttpServer::start();
    // Six answers of 300 ms one after another on one connection, under a
    // 1 s limit: the connection's timer, set for the first request's
    // limit, fires during the fourth, which must go on to its answer.
    let doc = http(&[
        &server.url("/delay?ttfb_ms=300"),
        "--timeout",
        "1s",
        "-c",
        "1",
        "-n",
        "6",
    ]);
    let h = &doc["http"];
    assert_eq!(h["status"]["200"], 6, "{h}");
    assert_eq!(h["errors"], 0, "{h}");
    // Answers later than the limit are errors of kind timeout, each
    // given up at its limit.
    let began = std::time::Instant::now();
    let doc = http(&[
        &server.url("/delay?ttfb_ms=2000"),
        "--timeout",
        "200ms",
        "-c",
        "1",
        "-n",
        "3",
    ]);
    let h = &doc["http"];
    assert_eq!(h["errors_by_kind"]["timeout"], 3, "{h}");
    assert_eq!(h["requests"], 0, "{h}");
    // Given up at 200 ms each, not kept to the 2 s answers (6 s).
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "{:?}",
        began.elapsed()
    );
}

#[test]
fn nginx_answers_over_both_families_and_statuses_are_counted() {
    let _t = timing();
    let nginx = Nginx::start();
    let doc = http(&[&nginx.http_url("/1k"), "-c", "4", "-t", "1s"]);
    let h = &doc["http"];
    assert!(num(&h["requests"]) > 100.0, "{h}");
    assert_eq!(h["status"]["200"], h["requests"]);
    assert_eq!(h["errors"], 0);
    let doc = http(&[&nginx.http_url_v4("/1k"), "-4", "-c", "2", "-n", "50"]);
    assert_eq!(doc["http"]["status"]["200"], 50);
    let doc = http(&[&nginx.http_url("/missing"), "-c", "1", "-n", "5"]);
    assert_eq!(doc["http"]["status"]["404"], 5);
    assert_eq!(doc["http"]["errors"], 5);
    // The text has ab's table.
    let out = sonde()
        .args(["http", &nginx.http_url("/1k"), "-c", "2", "-n", "100"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Connection Times (ms)"), "{text}");
    assert!(
        text.contains("Waiting:") && text.contains("Total:"),
        "{text}"
    );
}

#[test]
fn bad_input_is_a_usage_error_naming_it() {
    for (args, says) in [
        (vec!["ftp://x/"], "http://"),
        (vec!["http://[::1]:1/", "-c", "0"], "connections"),
        (vec!["http://[::1]:1/", "--ramp", "x:1"], "--ramp"),
        (vec!["http://[::1]:1/", "--chart", "r.svg"], "--ramp"),
        (vec!["http://[::1]:1/", "-H", "no colon"], "headers"),
        (vec!["http://[::1]:1/", "--rate=-5"], "rate"),
    ] {
        let out = sonde().arg("http").args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn a_kept_ramp_is_in_the_report_with_its_phases_and_knee_chart() {
    let _t = timing();
    let server = HttpServer::builder()
        .workers(8)
        .work(Duration::from_millis(20))
        .start();
    let dir = common::TempDir::new("http-report");
    let db = dir.join("a.db");
    let db = db.to_str().unwrap();
    let url = server.url("/delay?size=10");
    let doc = http(&[
        &url,
        "--ramp",
        "c:2,4",
        "--step-time",
        "1s",
        "--archive-to",
        db,
    ]);
    let id = doc["id"].as_str().unwrap();
    let out = sonde()
        .args([
            "report",
            "--archive-to",
            db,
            "--by",
            "test",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let table = report["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["title"] == "HTTP: each phase of the requests (median)")
        .expect("the phases table");
    let names: Vec<&str> = table["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    let waiting = names.iter().position(|n| *n == "waiting median").unwrap();
    let row = &table["rows"][0];
    assert_eq!(row[1], &id[..8], "{row}");
    // The server's 20 ms of work is the waiting phase: never less.
    let w = row[waiting]["value"].as_f64().unwrap();
    assert!(w >= 20.0, "waiting {w} ms: {row}");
    // The ramp's knee chart, each phase against load among its panels.
    let fig = report["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == format!("http-{}", &id[..8]))
        .expect("the ramp's chart");
    assert!(fig.to_string().contains("each phase by step (median)"));
}
