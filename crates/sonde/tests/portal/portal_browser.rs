//! The web portal in a real headless Chromium (Debian's `chromium`,
//! driven by playwright-core from the portal's own npm dependencies, no
//! browser downloaded), served by a real agent (`sonde serve --http`)
//! over a SQLite archive that a real campaign on loopback filled: every
//! page loaded, each chart's points counted against the API, the
//! statuses' colours against the configured thresholds, the live page
//! watched during a test started from its own form, no console errors.
//! Screenshots are kept in `target/portal-screenshots/`.
//!
//! The drivers are `tests/portal/*.mjs`; each prints what the page
//! showed as JSON, checked here.

use crate::common;
use common::http::{get, get_as, http_port, json, wait_for};
use common::ServerProc;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const TOKEN: &str = "portal-test-token-0123456789";
const RUNS: usize = 3;

/// The colours of docs/portal.md, as Chromium computes them.
fn colour(status: &str) -> &'static str {
    match status {
        "ok" => "rgb(0, 158, 115)",
        "warn" => "rgb(240, 180, 0)",
        "crit" => "rgb(204, 51, 17)",
        _ => "rgb(160, 160, 160)",
    }
}

fn dir(name: &str) -> common::TempDir {
    let d = common::TempDir::new(&format!("portal-{name}"));
    d
}

/// Where screenshots are kept: target/portal-screenshots.
pub(crate) fn shots() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let d = target.join("portal-screenshots");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs a driver in tests/portal with node; what it printed, as JSON.
pub(crate) fn drive(script: &str, args: &[&str]) -> Value {
    let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .find(|c| Path::new(c).exists())
        .expect("chromium is not installed (scripts/system-deps.sh installs it)");
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let portal = here.join("../sonde-web/portal");
    assert!(
        portal.join("node_modules/playwright-core").exists(),
        "playwright-core is missing: crates/sonde-web/build.rs runs npm ci in {}",
        portal.display()
    );
    let out = std::process::Command::new("node")
        .arg(here.join("tests/portal").join(script))
        .args(args)
        .env("CHROMIUM", chromium)
        .env("SONDE_PORTAL_DIR", &portal)
        .output()
        .expect("node (scripts/system-deps.sh installs nodejs)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{script}: {stderr}\n{stdout}");
    let last = stdout.lines().last().unwrap_or("");
    serde_json::from_str(last)
        .unwrap_or_else(|e| panic!("{script} printed no JSON ({e}): {stdout}"))
}

/// A read of the API with the portal's token (incidents are read with
/// one).
fn api(port: u16, path: &str) -> Value {
    let (status, body) = get_as(port, path, TOKEN);
    assert_eq!(status, 200, "{path}: {body}");
    json(&body)
}

pub(crate) fn no_problems(report: &Value) {
    let problems = report["problems"].as_array().unwrap();
    assert!(problems.is_empty(), "console errors: {problems:#?}");
}

/// A plan of TCP, slow UDP (reverse) and ping toward the endpoint on
/// `port`, RUNS times, 4 s apart.
fn plan(port: u16) -> String {
    format!(
        "name = \"loop\"\n[schedule]\nrepeat = \"PT4S\"\nmax_runs = {RUNS}\n\
         [[endpoint]]\nname = \"A\"\naddress = \"::1\"\n[[endpoint]]\nname = \"B\"\naddress = \"::1\"\n\
         [[step]]\nname = \"tcp A to B\"\ntest = \"tcp\"\nport = {port}\ntime_s = 1\n\
         [[step]]\ntest = \"udp\"\nport = {port}\ntime_s = 1\nbitrate_bps = \"1M\"\ndirection = \"reverse\"\n\
         [[step]]\ntest = \"ping\"\ncount = 3\ninterval_s = 0.2\n"
    )
}

/// Thresholds that give each test of the plan its own status on
/// loopback: TCP (Gbit/s) ok, UDP at 1 Mbit/s warn (below 5 Mbit/s),
/// ping crit (any RTT is above 2 ps). The agent samples `lo`, which
/// every machine has and the plan's traffic crosses. An alert on the
/// ping's RTT (above 2 ps) is raised by its first result.
const CONFIG: &str = "[http]\nread_public = true\ninterface_interval = 1\ninterfaces = [\"lo\"]\n\
    tokens = [{ name = \"portal-test\", token = \"portal-test-token-0123456789\", may = [\"run_now\", \"campaigns\", \"incidents\", \"readings\"] }]\n\
    [http.thresholds]\nthroughput_bps = { warn = 5e6, crit = 1e5 }\n\
    rtt_ms = { warn = 0.000000001, crit = 0.000000002 }\n\
    [[alert]]\nname = \"slow-ping\"\nmetric = \"rtt_ms\"\ntest = \"ping\"\nabove = 0.000000002\n\
    [targets]\nping = [\"::1/128\"]\n";

fn expected_status(test: &str) -> &'static str {
    match test {
        "tcp" => "ok",
        "udp" => "warn",
        _ => "crit",
    }
}

/// Each series' name and its number of points, from a chart model.
fn series_counts(chart: &Value) -> Vec<Vec<(String, u64)>> {
    chart["panels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            p["series"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| {
                    let n = s["points"].as_array().map_or(0, |a| a.len()) as u64;
                    (s["name"].as_str().unwrap().to_string(), n)
                })
                .filter(|(_, n)| *n > 0)
                .collect()
        })
        .collect()
}

/// The same, as the page drew them (figure[data-points]).
fn drawn_counts(panels: &Value) -> Vec<Vec<(String, u64)>> {
    panels
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            p["series"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| {
                    (
                        s["name"].as_str().unwrap().to_string(),
                        s["points"].as_u64().unwrap(),
                    )
                })
                .collect()
        })
        .collect()
}

/// `#/path?a=b&c=d` → its query as the API's filters (no source, no
/// metric).
fn chart_query(href: &str, metric: &str) -> String {
    let query = href.split_once('?').map_or("", |(_, q)| q);
    let kept: Vec<&str> = query
        .split('&')
        .filter(|kv| !kv.starts_with("source=") && !kv.starts_with("metric="))
        .collect();
    format!("/api/v1/chart?metric={metric}&{}", kept.join("&"))
}

#[test]
fn every_page_shows_the_archive_and_the_live_page_follows_a_running_test() {
    let d = dir("pages");
    let db = d.join("a.db").display().to_string();
    let plans = d.join("plans");
    std::fs::create_dir_all(&plans).unwrap();
    let config = d.join("serve.toml");
    std::fs::write(&config, CONFIG).unwrap();
    let endpoint = ServerProc::start(&["--no-reflector"]);
    std::fs::write(plans.join("loop.toml"), plan(endpoint.port)).unwrap();
    let agent = ServerProc::start(&[
        "--no-reflector",
        "--http",
        "[::1]:0",
        "--archive",
        &db,
        "--campaigns",
        plans.to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
    ]);
    let port = http_port(&agent);
    let done = || {
        let list = api(port, "/api/v1/campaigns");
        list[0]["runs"]["done"].as_u64() == Some(RUNS as u64)
    };
    assert!(wait_for(120, done), "{}", agent.log());
    let interfaces = api(port, "/api/v1/interfaces");
    assert_eq!(interfaces, serde_json::json!([{ "name": "lo" }]));
    let iface = "lo";
    // A probe's readings today (UTC): two in the first 15 minutes, one
    // in the next.
    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64;
    let today = sonde_readings::reading::format_time(now_ns)[..10].to_string();
    let readings: Vec<Value> = [("00:01", 20.0), ("00:05", 22.0), ("00:20", 19.0)]
        .iter()
        .map(|(t, v)| {
            serde_json::json!({"probe": "portal-probe", "metric": "temp", "unit": "°C",
                               "value": v, "at": format!("{today}T{t}:00Z")})
        })
        .collect();
    let (status, body) = common::http::send(
        port,
        "POST",
        "/api/v1/readings",
        "portal-test-token-0123456789",
        "application/json",
        &Value::from(readings).to_string(),
    );
    assert_eq!(status, 201, "{body}");
    let shots = shots();
    let base = format!("http://[::1]:{port}");
    // An incident with an owned and an unowned address, changed once.
    let archive = format!("--archive={db}");
    for args in [
        &[
            "constituency",
            "add",
            "eenet",
            "--name",
            "EENET",
            "--network",
            "2001:db8:1::/48",
        ][..],
        &[
            "open",
            "--type",
            "loss-high",
            "--summary",
            "loss 7%",
            "--target",
            "2001:db8:1::9",
            "--source",
            "203.0.113.5",
        ],
        &["set", "1", "--state", "confirmed", "--status", "stalled"],
    ] {
        let out = common::sonde()
            .arg("incident")
            .arg(&archive)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {}", common::stderr(&out));
    }
    let pages = drive(
        "pages.mjs",
        &[
            &base,
            shots.to_str().unwrap(),
            "loop",
            iface,
            &format!("series=portal-probe/temp&date={today}"),
            TOKEN,
        ],
    );
    let anonymous = &pages["incidentsAnonymous"];
    assert!(
        anonymous["notice"].as_str().unwrap_or("").contains("token"),
        "incidents without a token: {anonymous}"
    );
    assert!(
        anonymous["console"].to_string().contains("401"),
        "{anonymous}"
    );
    no_problems(&pages);

    // Overview: every path, with the API's status, in its colour; the
    // statuses are the thresholds' (one of each).
    let overview = api(port, "/api/v1/overview");
    let paths = overview["paths"].as_array().unwrap();
    assert_eq!(paths.len(), 3, "{overview}");
    let rows = pages["overview"]["rows"].as_array().unwrap();
    let shown: BTreeMap<&str, &Value> = rows
        .iter()
        .map(|r| (r["key"].as_str().unwrap(), r))
        .collect();
    assert_eq!(shown.len(), paths.len(), "{rows:?}");
    for p in paths {
        let key = p["key"].as_str().unwrap();
        let status = p["status"].as_str().unwrap();
        assert_eq!(status, expected_status(p["test"].as_str().unwrap()), "{p}");
        let row = shown[key];
        assert_eq!(row["status"], status, "{key}");
        assert_eq!(row["colour"], colour(status), "{key}");
    }

    // The alert the ping raised shows above the paths.
    assert_eq!(
        pages["overview"]["alerts"],
        serde_json::json!(["slow-ping"]),
        "{}",
        api(port, "/api/v1/alerts")
    );

    // Path pages: each series holds one point per archived result, as
    // the API's chart says.
    let drawn_paths = pages["paths"].as_array().unwrap();
    assert_eq!(drawn_paths.len(), 3);
    for page in drawn_paths {
        assert_eq!(page["state"], "ready", "{page}");
        let href = page["href"].as_str().unwrap();
        let metric = href.split("metric=").nth(1).unwrap();
        let chart = api(port, &chart_query(href, metric));
        let expected = series_counts(&chart);
        assert_eq!(drawn_counts(&page["panels"]), expected, "{href}");
        let points: u64 = expected.iter().flatten().map(|s| s.1).sum();
        assert_eq!(points, RUNS as u64, "{href}: one point per run");
    }
    // Zoom narrows the time axis (from the range asked for, a day);
    // hover names values.
    let span = |r: &Value| r[1].as_f64().unwrap() - r[0].as_f64().unwrap();
    let (before, after) = (&pages["zoom"]["before"], &pages["zoom"]["after"]);
    assert!((span(before) - 86_400.0).abs() < 1.0, "{before}");
    assert!(span(after) < span(before) / 2.0, "{before} → {after}");
    // The zoomed range is the page's address now.
    let hash = pages["zoom"]["hash"].as_str().unwrap();
    let since = after[0].as_f64().unwrap().floor();
    assert!(hash.contains("range=custom"), "{hash}");
    assert!(hash.contains(&format!("since={since}")), "{hash} {after}");
    assert!(
        pages["hover"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v.as_str().is_some_and(|v| v != "–" && v != "--")),
        "{}",
        pages["hover"]
    );

    // A label's history: the points the chart API gives for that label.
    let labelled = &pages["labelled"];
    assert_eq!(labelled["state"], "ready", "{labelled}");
    let label = labelled["label"].as_str().unwrap();
    let chart = api(
        port,
        &format!(
            "/api/v1/chart?metric=throughput_bps&label={}",
            label.replace(' ', "%20").replace('=', "%3D")
        ),
    );
    let want: u64 = chart["panels"][0]["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["points"].as_array().unwrap().len() as u64)
        .sum();
    let drawn: u64 = drawn_counts(&labelled["panels"])
        .iter()
        .flatten()
        .map(|s| s.1)
        .sum();
    assert!(want > 0, "{chart}");
    assert_eq!(drawn, want, "{labelled}");

    // The metric choices are the agent's registry: label (unit), each.
    let info = api(port, "/api/v1/info");
    let registry: Vec<String> = info["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            format!(
                "{} ({})",
                m["label"].as_str().unwrap(),
                m["unit"].as_str().unwrap()
            )
        })
        .collect();
    assert!(
        registry.contains(&"throughput (Mbit/s)".to_string()),
        "{info}"
    );
    assert_eq!(
        pages["metricOptions"],
        serde_json::json!(registry),
        "{info}"
    );

    // Heat map: a cell per hour of a day that had TCP results.
    let tcp = api(port, "/api/v1/results?test=tcp");
    // "2026-11-25T19:39:32.17Z" → "2026-11-25T19": its day and hour (UTC).
    let hours: BTreeSet<String> = tcp
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["start"].as_str().unwrap()[..13].to_string())
        .collect();
    let map = &pages["heatmap"];
    assert_eq!(map["state"], "ready", "{map}");
    assert_eq!(map["figures"][0]["cells"], hours.len() as u64, "{map}");
    // Its first cell opens the TCP results of that hour, each row a
    // result of that hour as the API lists them.
    let click = &map["click"];
    assert_eq!(click["state"], "ready", "{click}");
    let hour = hours.iter().next().unwrap();
    let that_hour: BTreeSet<&str> = tcp
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["start"].as_str().unwrap().starts_with(hour.as_str()))
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    let rows: BTreeSet<&str> = click["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(rows, that_hour, "{click}");

    // The first of them opens its own page: its campaign and labels, a
    // row per direction of its summary, and a chart of its intervals (a
    // point per interval in each of its panels).
    let page = &pages["result"];
    assert_eq!(page["state"], "ready", "{page}");
    let id = page["hash"]
        .as_str()
        .unwrap()
        .trim_start_matches("#/result/");
    assert!(rows.contains(id), "{page}");
    let doc = api(port, &format!("/api/v1/results/{id}"));
    let view = api(port, &format!("/api/v1/results/{id}/view"));
    let labels: BTreeSet<String> = view["labels"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap()))
        .collect();
    assert!(labels.iter().any(|l| l.starts_with("step=")), "{view}");
    let shown: BTreeSet<String> = page["labels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_eq!(shown, labels, "{page}");
    assert!(
        page["kept"]
            .as_str()
            .unwrap()
            .contains(view["campaign"].as_str().unwrap()),
        "{page}"
    );
    let directions: Vec<&str> = ["forward", "reverse", "round_trip"]
        .into_iter()
        .filter(|d| doc["summary"][d].is_object())
        .collect();
    assert_eq!(page["directions"], serde_json::json!(directions), "{page}");
    // Its first panel is throughput: a point per interval and direction
    // (warm-up intervals a series of their own).
    let intervals = doc["intervals"].as_array().unwrap().len() as u64;
    let counts = drawn_counts(&page["panels"]);
    let first: u64 = counts.first().expect("a panel").iter().map(|s| s.1).sum();
    assert_eq!(first, intervals * directions.len() as u64, "{page}");

    // Mesh: A → B, each half in its status' colour, as the API says; a
    // click opens the pair's history.
    let mesh = api(port, "/api/v1/mesh?metric=rtt_ms");
    let halves = pages["mesh"]["halves"].as_array().unwrap();
    let cells = mesh["cells"].as_array().unwrap();
    assert_eq!(halves.len(), 2 * cells.len(), "{mesh}");
    for h in halves {
        let cell = cells
            .iter()
            .find(|c| c["source"] == h["source"] && c["target"] == h["target"])
            .unwrap_or_else(|| panic!("{h} not in {mesh}"));
        let status = cell[h["half"].as_str().unwrap()]["status"]
            .as_str()
            .unwrap_or("unknown");
        assert_eq!(h["status"], status, "{h}");
        assert_eq!(h["colour"], colour(status), "{h}");
    }
    assert!(
        halves.iter().any(|h| h["status"] == "crit"),
        "the ping's RTT is above its crit level: {halves:?}"
    );
    let click = &pages["mesh"]["click"];
    assert_eq!(click["state"], "ready", "{click}");
    let clicked: u64 = drawn_counts(&click["panels"])
        .iter()
        .flatten()
        .map(|s| s.1)
        .sum();
    assert_eq!(clicked, RUNS as u64, "{click}");

    // Load beside latency: rx and tx from the samples, RTT a point per
    // ping.
    let load = drawn_counts(&pages["load"]["panels"]);
    assert_eq!(load.len(), 2, "{}", pages["load"]);
    let rx_tx: Vec<&(String, u64)> = load[0].iter().collect();
    assert_eq!(rx_tx.len(), 2, "{load:?}");
    assert!(rx_tx[0].1 > 0 && rx_tx[0].1 == rx_tx[1].1, "{load:?}");
    assert_eq!(load[1], vec![("RTT".to_string(), RUNS as u64)]);
    // lo carried the plan's TCP tests (Gbit/s on loopback): its highest
    // rate each way is far above the UDP probe's 1 Mbit/s.
    for s in pages["load"]["panels"][0]["series"].as_array().unwrap() {
        assert!(s["max"].as_f64().unwrap() > 10.0, "Mbit/s: {s}");
    }

    // Readings: the probe's 15-minute mean, min and max (two buckets)
    // above the RTT toward the page's target over the same day, as the
    // API's chart has it.
    let drawn = drawn_counts(&pages["readings"]["panels"]);
    let two = |n: &str| (n.to_string(), 2);
    assert_eq!(
        drawn[0],
        vec![two("mean"), two("min"), two("max")],
        "{}",
        pages["readings"]
    );
    let target = pages["readings"]["target"].as_str().unwrap();
    assert!(!target.is_empty(), "{}", pages["readings"]);
    let since = now_ns / 1_000_000_000 / 86_400 * 86_400;
    let rtt = api(
        port,
        &format!(
            "/api/v1/chart?metric=rtt_ms&target={target}&since={since}&until={}",
            since + 86_400
        ),
    );
    assert_eq!(
        drawn[1..].to_vec(),
        series_counts(&rtt),
        "{}",
        pages["readings"]
    );
    assert!(drawn.len() >= 2, "no RTT panel: {}", pages["readings"]);

    // Campaigns: the plan, its runs (those of the API), their events.
    assert_eq!(pages["campaigns"]["names"], serde_json::json!(["loop"]));
    let detail = api(port, "/api/v1/campaigns/loop");
    let ids: BTreeSet<&str> = detail["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    let shown_ids: BTreeSet<&str> = pages["campaign"]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert_eq!(shown_ids, ids);
    assert_eq!(ids.len(), RUNS);
    assert_eq!(pages["campaign"]["plan"], detail["plan"]);
    assert!(pages["campaign"]["events"].as_u64().unwrap() >= 1);

    // Incidents: the list row and the incident page show what the API
    // keeps (owner found, state and status changed, three history rows).
    let rows = pages["incidents"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{}", pages["incidents"]);
    assert_eq!(rows[0]["id"], 1);
    let cells: Vec<&str> = rows[0]["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(
        [cells[0], cells[2], cells[3], cells[4], cells[5], cells[6], cells[7]],
        [
            "1",
            "loss-high",
            "medium",
            "confirmed",
            "stalled",
            "eenet",
            "loss 7%"
        ]
    );
    let incident = &pages["incident"];
    assert_eq!(incident["state"], "ready", "{incident}");
    assert_eq!(incident["hash"], "#/incident/1");
    assert_eq!(
        incident["fields"],
        serde_json::json!({"status": "stalled", "state": "confirmed"})
    );
    assert_eq!(
        incident["addresses"],
        serde_json::json!([
            ["203.0.113.5", "source", "–"],
            ["2001:db8:1::9", "target", "eenet"]
        ])
    );
    let history = api(port, "/api/v1/incidents/1")["history"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!((history, incident["history"].as_u64()), (3, Some(3)));

    // Live: refused without a token (and said so); with it, intervals
    // drawn while the test runs, all of them once it has finished.
    let live = drive(
        "live.mjs",
        &[
            &base,
            shots.to_str().unwrap(),
            TOKEN,
            "::1",
            &endpoint.port.to_string(),
            "4",
        ],
    );
    no_problems(&live);
    assert_eq!(live["without_token"]["error"], true, "{live}");
    assert!(
        live["without_token"]["text"]
            .as_str()
            .unwrap()
            .contains("token"),
        "{live}"
    );
    for p in live["problems_without_token"].as_array().unwrap() {
        assert!(p.as_str().unwrap().contains("401"), "{p}");
    }
    assert_eq!(live["running"]["state"], "running", "{live}");
    assert!(live["running"]["points"].as_u64().unwrap() >= 2, "{live}");
    assert_eq!(live["finished"]["state"], "finished", "{live}");
    let id = live["finished"]["result"].as_str().unwrap();
    let result = api(port, &format!("/api/v1/results/{id}"));
    let intervals = result["intervals"].as_array().unwrap().len() as u64;
    assert_eq!(live["finished"]["points"], intervals, "{live}");
    // The ping: a point per reply, as its result counts them.
    let ping = &live["ping"];
    let id = ping["finished"]["result"].as_str().unwrap();
    let result = api(port, &format!("/api/v1/results/{id}"));
    let replies = result["summary"]["round_trip"]["received_packets"]
        .as_u64()
        .unwrap();
    assert_eq!(replies, 4, "{result}");
    assert_eq!(ping["finished"]["points"], replies, "{live}");
    // A long ping stopped from its card: it ends, and what it measured
    // is kept as interrupted.
    let stopped = &live["stopped"];
    assert_eq!(stopped["answer"], "stopping", "{live}");
    assert_eq!(stopped["finished"]["state"], "finished", "{live}");
    let id = stopped["finished"]["result"].as_str().unwrap();
    let result = api(port, &format!("/api/v1/results/{id}"));
    assert_eq!(result["interrupted"], true, "{result}");
    let got = result["summary"]["round_trip"]["sent_packets"]
        .as_u64()
        .unwrap();
    assert!(got < 200, "stopped before its 200 pings: {result}");
    drop(agent);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_private_agent_asks_for_a_token_and_refuses_a_wrong_one() {
    let d = dir("private");
    let db = d.join("a.db").display().to_string();
    let config = d.join("serve.toml");
    std::fs::write(
        &config,
        CONFIG.replace("read_public = true", "read_public = false"),
    )
    .unwrap();
    let agent = ServerProc::start(&[
        "--no-reflector",
        "--http",
        "[::1]:0",
        "--archive",
        &db,
        "--config",
        config.to_str().unwrap(),
    ]);
    let port = http_port(&agent);
    assert_eq!(get(port, "/api/v1/overview").0, 401);
    assert_eq!(get_as(port, "/api/v1/overview", TOKEN).0, 200);
    let base = format!("http://[::1]:{port}");
    let report = drive("token.mjs", &[&base, TOKEN]);
    assert_eq!(report["none"]["state"], "error", "{report}");
    assert_eq!(report["none"]["error"], "401", "{report}");
    assert!(
        report["none"]["notice"]
            .as_str()
            .unwrap()
            .contains("needs a token"),
        "{report}"
    );
    assert_eq!(report["wrong"]["error"], "403", "{report}");
    assert!(
        report["wrong"]["notice"]
            .as_str()
            .unwrap()
            .contains("refused the token"),
        "{report}"
    );
    assert_eq!(report["right"]["state"], "ready", "{report}");
    assert!(report["url_has_token"] == false, "{report}");
    // The only console errors are the refused requests themselves.
    for p in report["problems"].as_array().unwrap() {
        let p = p.as_str().unwrap();
        assert!(p.contains("401") || p.contains("403"), "{p}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A raw request's status line and headers (lower-cased names), and body.
fn raw(port: u16, request: &str) -> (String, BTreeMap<String, String>, Vec<u8>) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("::1", port)).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut bytes = Vec::new();
    s.read_to_end(&mut bytes).unwrap();
    let cut = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("an HTTP head");
    let head = String::from_utf8_lossy(&bytes[..cut]).into_owned();
    let mut lines = head.lines();
    let status = lines.next().unwrap_or("").to_string();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    (status, headers, bytes[cut + 4..].to_vec())
}

#[test]
fn the_portal_is_served_from_the_binary_with_its_types_and_cache_lives() {
    let d = dir("assets");
    let db = d.join("a.db").display().to_string();
    let agent = ServerProc::start(&["--no-reflector", "--http", "[::1]:0", "--archive", &db]);
    let port = http_port(&agent);
    let get = |path: &str, extra: &str| {
        raw(
            port,
            &format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n{extra}Connection: close\r\n\r\n"),
        )
    };
    let (status, head, body) = get("/", "");
    assert!(status.contains(" 200 "), "{status}");
    assert_eq!(head["content-type"], "text/html; charset=utf-8");
    assert_eq!(head["cache-control"], "no-cache");
    assert!(head["content-security-policy"].contains("script-src 'self'"));
    let page = String::from_utf8(body).unwrap();
    for alias in ["/portal", "/portal/"] {
        let (status, _, body) = get(alias, "");
        assert!(status.contains(" 200 "), "{alias}: {status}");
        assert_eq!(String::from_utf8(body).unwrap(), page);
    }
    // Unchanged: 304 on its ETag.
    let etag = &head["etag"];
    let (status, _, body) = get("/", &format!("If-None-Match: {etag}\r\n"));
    assert!(status.contains(" 304 "), "{status}");
    assert!(body.is_empty());
    // Each script and style the page names, with its type, cached a year.
    let assets: Vec<&str> = page
        .split("\"/assets/")
        .skip(1)
        .map(|p| p.split('"').next().unwrap())
        .collect();
    assert!(assets.iter().any(|a| a.ends_with(".js")), "{page}");
    assert!(assets.iter().any(|a| a.ends_with(".css")), "{page}");
    for a in assets {
        let (status, head, body) = get(&format!("/assets/{a}"), "");
        assert!(status.contains(" 200 "), "{a}: {status}");
        let want = if a.ends_with(".js") {
            "text/javascript; charset=utf-8"
        } else {
            "text/css; charset=utf-8"
        };
        assert_eq!(head["content-type"], want, "{a}");
        assert_eq!(
            head["cache-control"], "public, max-age=31536000, immutable",
            "{a}"
        );
        assert_eq!(head["content-length"], body.len().to_string());
    }
    let (status, _, _) = get("/assets/nothing-here.js", "");
    assert!(status.contains(" 404 "), "{status}");
    let _ = std::fs::remove_dir_all(&d);
}
