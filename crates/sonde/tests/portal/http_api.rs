//! `sonde serve --http`: the JSON API and `/metrics` of a real agent over
//! real sockets, reading the archive that real tests on loopback were
//! kept in — a SQLite file, and the PostgreSQL on this machine — with
//! `/metrics` read by a real OpenMetrics parser (Python's
//! prometheus_client, installed by scripts/python-deps.sh). Route
//! changes are also read in the portal, in a real Chromium (trace.mjs).

use crate::common;
use common::http::{get, http, http_port, json, parse_metrics};
use common::{sonde, stderr, ServerProc};

const PG: &str = "postgres://root@127.0.0.1:5432/test";

/// Runs `body` against an agent on a SQLite archive, then on a
/// PostgreSQL one (a schema of its own, dropped after).
fn on_both(test: &str, body: impl Fn(&str)) {
    let dir = common::TempDir::new(&format!("http-{test}"));
    body(&dir.join("a.db").display().to_string());
    let _ = std::fs::remove_dir_all(&dir);
    let schema = format!("sonde_http{}_{test}", std::process::id());
    let mut admin = postgres::Client::connect(PG, postgres::NoTls).expect("PostgreSQL");
    let drop = format!("DROP SCHEMA IF EXISTS {schema} CASCADE");
    admin.batch_execute(&drop).unwrap();
    body(&format!("{PG}?sslmode=disable&schema={schema}"));
    admin.batch_execute(&drop).unwrap();
}

#[test]
fn results_views_and_metrics_are_served_from_the_archive() {
    on_both("views", |db| {
        let server = ServerProc::start(&["--no-reflector", "--http", "[::1]:0", "--archive", db]);
        let port = http_port(&server);
        let archive = format!("--archive={db}");
        let mut printed = Vec::new();
        for _ in 0..2 {
            let tcp = sonde()
                .args([
                    "tcp",
                    "::1",
                    "-p",
                    &server.port.to_string(),
                    "-t",
                    "1s",
                    "-J",
                ])
                .arg(&archive)
                .output()
                .unwrap();
            assert!(tcp.status.success(), "{}", stderr(&tcp));
            printed.push(serde_json::from_slice::<serde_json::Value>(&tcp.stdout).unwrap());
        }
        let ping = sonde()
            .args(["ping", "::1", "-c", "3", "-i", "0.2", &archive])
            .output()
            .unwrap();
        assert!(ping.status.success(), "{}", stderr(&ping));

        // Results: the list, one, its intervals, the export.
        let (status, body) = get(port, "/api/v1/results?test=tcp");
        assert_eq!(status, 200, "{body}");
        let list = json(&body);
        assert_eq!(list.as_array().unwrap().len(), 2);
        assert_eq!(list[0]["id"], printed[1]["id"], "newest first");
        let id = printed[0]["id"].as_str().unwrap();
        let (status, body) = get(port, &format!("/api/v1/results/{id}"));
        assert_eq!(status, 200);
        assert_eq!(json(&body), printed[0]);
        let (status, body) = get(
            port,
            &format!("/api/v1/results/{id}/intervals?metric=throughput"),
        );
        assert_eq!(status, 200, "{body}");
        let series = json(&body);
        assert_eq!(series["direction"], "forward");
        let n = printed[0]["intervals"].as_array().unwrap().len();
        assert_eq!(series["points"].as_array().unwrap().len(), n);
        let (status, csv) = get(port, "/api/v1/export?test=tcp");
        assert_eq!(status, 200, "{csv}");
        assert_eq!(csv.lines().count(), 3, "a header and two rows: {csv}");
        assert!(csv.starts_with("id,test,"), "{csv}");
        let (status, nd) = get(port, "/api/v1/export?format=ndjson");
        assert_eq!(status, 200);
        assert_eq!(nd.lines().count(), 3);

        // The overview: a path per test, with its status.
        let (status, body) = get(port, "/api/v1/overview");
        assert_eq!(status, 200, "{body}");
        let overview = json(&body);
        let paths = overview["paths"].as_array().unwrap();
        assert_eq!(paths.len(), 2, "{overview}");
        let tcp = paths.iter().find(|p| p["test"] == "tcp").unwrap();
        assert_eq!(tcp["latest"]["id"], printed[1]["id"]);
        assert_eq!(tcp["status"], "ok", "{tcp}");
        let ping = paths.iter().find(|p| p["test"] == "ping").unwrap();
        assert_eq!(ping["direction"], "round_trip");
        assert!(ping["latest"]["rtt_ms"].as_f64().unwrap() > 0.0);

        // A chart holds a point per result; a heat map a cell per hour.
        let (status, body) = get(port, "/api/v1/chart?metric=throughput&test=tcp");
        assert_eq!(status, 200, "{body}");
        let chart = json(&body);
        let series = &chart["panels"][0]["series"];
        assert_eq!(series[0]["name"], "forward");
        let points = series[0]["points"].as_array().unwrap();
        assert_eq!(points.len(), 2);
        let mbps = printed[0]["summary"]["forward"]["throughput_bps"]
            .as_f64()
            .unwrap()
            / 1e6;
        assert!((points[0][1].as_f64().unwrap() - mbps).abs() < 1e-6 * mbps);
        let (status, body) = get(port, "/api/v1/heatmap?metric=rtt&test=ping");
        assert_eq!(status, 200, "{body}");
        let heat = json(&body);
        let filled: usize = heat["cells"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|row| row.as_array().unwrap())
            .filter(|c| !c.is_null())
            .count();
        assert_eq!(filled, 1);
        assert_eq!(heat["y_names"].as_array().unwrap().len(), 24);
        let (status, body) = get(port, "/api/v1/mesh?metric=rtt");
        assert_eq!(status, 200, "{body}");
        assert_eq!(json(&body)["cells"].as_array().unwrap().len(), 1);

        // Bad requests: clear JSON errors, and the server goes on.
        let (status, body) = get(port, "/api/v1/results/not-an-id");
        assert_eq!(status, 400);
        assert!(body.contains("is not a result id"), "{body}");
        let (status, _) = get(port, "/api/v1/results/0b6f5a56-0000-4000-8000-000000000000");
        assert_eq!(status, 404);
        // A result's page view names no file: an id that is a path is
        // refused before the archive is asked, and nothing of the file
        // comes back.
        for hostile in ["..%2F..%2Fetc%2Fpasswd", "%2Fetc%2Fpasswd", "not-an-id"] {
            let (status, body) = get(port, &format!("/api/v1/results/{hostile}/view"));
            assert!(status == 400 || status == 404, "{hostile}: {status} {body}");
            assert!(!body.contains("root:"), "{hostile}: {body}");
        }
        let (status, _) = get(
            port,
            "/api/v1/results/0b6f5a56-0000-4000-8000-000000000000/view",
        );
        assert_eq!(status, 404);
        let (status, body) = get(port, "/api/v1/results?colour=blue");
        assert_eq!(status, 400);
        assert!(body.contains("colour"), "{body}");
        let (status, body) = get(port, "/api/v1/chart?metric=colour");
        assert_eq!(status, 400);
        assert!(body.contains("rtt_ms"), "{body}");
        let (status, body) = get(port, "/api/v1/nothing-here");
        assert_eq!(status, 404);
        assert!(body.contains("openapi"), "{body}");
        let (status, _) = http(port, "HELLO\r\n\r\n");
        assert_ne!(status, 200);
        let (status, _) = get(port, "/api/v1/info");
        assert_eq!(status, 200);
        // The metric registry, each metric as `metric` parameters take it.
        let (status, body) = get(port, "/api/v1/metrics");
        assert_eq!(status, 200);
        let registry: serde_json::Value = serde_json::from_str(&body).unwrap();
        let burst = registry["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "loss_burst_max")
            .unwrap_or_else(|| panic!("the longest loss burst: {body}"));
        assert_eq!(
            (&burst["unit"], &burst["tests"]),
            (&serde_json::json!("packets"), &serde_json::json!(["udp"])),
            "{body}"
        );
        for m in registry["metrics"].as_array().unwrap() {
            let name = m["short"].as_str().unwrap();
            let (status, body) = get(port, &format!("/api/v1/chart?metric={name}"));
            assert_eq!(status, 200, "{name}: {body}");
        }

        // /metrics, read by prometheus_client's OpenMetrics parser.
        let (status, text) = get(port, "/metrics");
        assert_eq!(status, 200);
        let families = parse_metrics(&text);
        let tput = &families["sonde_throughput_bytes_per_second"][0];
        assert_eq!(tput[1]["test"], "tcp");
        assert_eq!(tput[1]["direction"], "forward");
        assert_eq!(tput[1]["family"], "v6");
        let bps = printed[1]["summary"]["forward"]["throughput_bps"]
            .as_f64()
            .unwrap();
        assert!((tput[2].as_f64().unwrap() - bps / 8.0).abs() < 1.0);
        let rtt = &families["sonde_rtt_seconds"][0];
        assert_eq!(rtt[1]["test"], "ping");
        let secs = rtt[2].as_f64().unwrap();
        assert!(secs > 0.0 && secs < 0.01, "{secs}");
        assert_eq!(families["sonde_agent"][0][0], "sonde_agent_info");
        // The control port's two tests, counted by the agent.
        assert_eq!(families["sonde_tests"][0][0], "sonde_tests_total");
        assert_eq!(families["sonde_tests"][0][2], 2.0);
    });
}

#[test]
fn an_agent_with_open_archive_connections_stops_cleanly() {
    // The API keeps archive connections open between requests; stopping
    // the agent closes them (on PostgreSQL that once panicked inside the
    // HTTP server's runtime, and the process aborted).
    on_both("stop", |db| {
        let mut server =
            ServerProc::start(&["--no-reflector", "--http", "[::1]:0", "--archive", db]);
        let port = http_port(&server);
        // Requests at once, so that several connections are kept.
        let asks: Vec<_> = (0..6)
            .map(|_| std::thread::spawn(move || get(port, "/api/v1/results?limit=1").0))
            .collect();
        for a in asks {
            assert_eq!(a.join().unwrap(), 200);
        }
        let status = server.terminate();
        assert!(
            status.is_some_and(|s| s.success()),
            "{status:?}\n{}",
            server.log()
        );
        assert!(!server.log().contains("panicked"), "{}", server.log());
    });
}

/// The archive's password is in the agent's command line, never in an
/// answer or a log line; a SQLite archive is its owner's alone (0600),
/// and a 404 names no directory of the agent.
#[test]
fn the_archives_password_and_files_stay_on_the_agent() {
    const SECRET: &str = "hunter2-not-to-be-seen";
    let schema = format!("sonde_http{}_secret", std::process::id());
    let mut admin = postgres::Client::connect(PG, postgres::NoTls).expect("PostgreSQL");
    let drop_schema = format!("DROP SCHEMA IF EXISTS {schema} CASCADE");
    admin.batch_execute(&drop_schema).unwrap();
    // Trust authentication: the password is asked of no one, but given.
    let url =
        format!("postgres://root:{SECRET}@127.0.0.1:5432/test?sslmode=disable&schema={schema}");
    let d = common::TempDir::new("http-secret");
    std::fs::create_dir_all(d.join("campaigns")).unwrap();
    let server = ServerProc::start(&[
        "--no-reflector",
        "--http",
        "[::1]:0",
        "--archive",
        &url,
        "--campaigns",
        d.join("campaigns").to_str().unwrap(),
    ]);
    let port = http_port(&server);
    let (status, body) = get(port, "/api/v1/info");
    assert_eq!(status, 200, "{body}");
    assert!(!body.contains(SECRET), "{body}");
    assert!(
        json(&body)["archive"]
            .as_str()
            .unwrap()
            .contains("root:***@"),
        "{body}"
    );
    let (status, body) = get(port, "/api/v1/campaigns/none");
    assert_eq!(status, 404);
    assert!(!body.contains(d.to_str().unwrap()), "{body}");
    assert!(
        server.wait_for_log("campaigns"),
        "the campaigns started: {}",
        server.log()
    );
    assert!(!server.log().contains(SECRET), "{}", server.log());
    drop(server);
    admin.batch_execute(&drop_schema).unwrap();

    // SQLite: made 0600, and its write-ahead log too.
    let db = d.join("a.db");
    let out = sonde()
        .args(["ping", "::1", "-c", "1"])
        .arg(format!("--archive={}", db.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    use std::os::unix::fs::PermissionsExt;
    for f in [db.clone(), d.join("a.db-wal")] {
        if let Ok(m) = std::fs::metadata(&f) {
            assert_eq!(m.permissions().mode() & 0o777, 0o600, "{}", f.display());
        }
    }
    assert!(db.exists());
}

/// A bidirectional TCP result of 10 Mbit/s forward and 5 reverse (and
/// TCP's total of 15), started now.
fn bidir_10_and_5() -> sonde_model::TestResult {
    use sonde_model::{Direction, Figures, Summary, TcpSpec, TestResult, TestSpec};
    let fig = |d, mbps: u64| Figures {
        direction: Some(d),
        throughput_bps: Some(mbps * 1_000_000),
        ..Figures::default()
    };
    let mut r = TestResult::new(
        TestSpec::Tcp(TcpSpec {
            host: "b.example".into(),
            direction: Direction::Bidir,
            ..TcpSpec::default()
        }),
        sonde_model::TestEnv::between(
            sonde_model::HostEnv::default(),
            sonde_model::HostEnv::default(),
            sonde_model::PeerKind::Sonde,
        ),
        sonde_model::Timestamp::now(),
    );
    r.summary = Summary {
        forward: Some(fig(Direction::Forward, 10)),
        reverse: Some(fig(Direction::Reverse, 5)),
        total: Some(fig(Direction::Bidir, 15)),
        ..Summary::default()
    };
    r
}

#[test]
fn a_bidirectional_result_is_a_series_and_a_heat_map_each_way() {
    let dir = common::TempDir::new("http-bidir");
    let db = dir.join("a.db").display().to_string();
    sonde_archive::Store::open(&db)
        .unwrap()
        .put_result(&bidir_10_and_5(), &sonde_archive::Placement::default())
        .unwrap();
    let server = ServerProc::start(&["--no-reflector", "--http", "[::1]:0", "--archive", &db]);
    let port = http_port(&server);
    // The chart: a series each way, 10 and 5 Mbit/s; never 15.
    let (status, body) = get(port, "/api/v1/chart?metric=throughput");
    assert_eq!(status, 200, "{body}");
    let chart = json(&body);
    let series: Vec<(String, Vec<f64>)> = chart["panels"][0]["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let values = s["points"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p[1].as_f64().unwrap())
                .collect();
            (s["name"].as_str().unwrap().to_string(), values)
        })
        .collect();
    assert_eq!(
        series,
        [
            ("forward".to_string(), vec![10.0]),
            ("reverse".to_string(), vec![5.0])
        ]
    );
    // The heat map of each direction holds that direction's figure.
    for (direction, want) in [("forward", 10.0), ("reverse", 5.0)] {
        let (status, body) = get(
            port,
            &format!("/api/v1/heatmap?metric=throughput&direction={direction}"),
        );
        assert_eq!(status, 200, "{body}");
        let cells: Vec<f64> = json(&body)["cells"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|row| row.as_array().unwrap().clone())
            .filter_map(|c| c.as_f64())
            .collect();
        assert_eq!(cells, [want], "{direction}");
    }
}

/// A trace from 2001:db8:1::1 to 2001:db8:9::9 at `at_s`, one probe a
/// hop, answered from `route` in turn (the last: the target).
fn trace_via(at_s: u64, route: &[&str]) -> sonde_model::TestResult {
    use sonde_model::TraceSpec;
    let target = "2001:db8:9::9";
    let mut env = sonde_model::TestEnv::between(
        sonde_model::HostEnv::default(),
        sonde_model::HostEnv::default(),
        sonde_model::PeerKind::Sonde,
    );
    env.peer = None;
    env.source = Some("2001:db8:1::1".parse().unwrap());
    env.target = Some(target.parse().unwrap());
    let mut r = sonde_model::TestResult::new(
        sonde_model::TestSpec::Trace(TraceSpec {
            host: target.into(),
            ..TraceSpec::default()
        }),
        env,
        sonde_model::Timestamp(std::time::UNIX_EPOCH + std::time::Duration::from_secs(at_s)),
    );
    let route: Vec<Option<std::net::IpAddr>> = route
        .iter()
        .chain(&[target])
        .map(|a| Some(a.parse().unwrap()))
        .collect();
    r.trace = Some(sonde_model::TraceFigures::of_route(
        target.parse().unwrap(),
        &route,
    ));
    r
}

#[test]
fn route_changes_are_served_newest_first_and_by_target() {
    let dir = common::TempDir::new("http-pathchg");
    let db = dir.join("a.db").display().to_string();
    let mut store = sonde_archive::Store::open(&db).unwrap();
    let mut ids = Vec::new();
    for (at, r2) in [
        (100, "2001:db8:5::2"),
        (200, "2001:db8:5::2"),
        (300, "2001:db8:6::2"),
    ] {
        let r = trace_via(at, &["2001:db8:4::1", r2]);
        ids.push(r.id.to_string());
        store
            .put_result(&r, &sonde_archive::Placement::default())
            .unwrap();
    }
    drop(store);
    let server = ServerProc::start(&["--no-reflector", "--http", "[::1]:0", "--archive", &db]);
    let port = http_port(&server);
    let (status, body) = get(port, "/api/v1/path-changes");
    assert_eq!(status, 200, "{body}");
    let changes = json(&body);
    let changes = changes.as_array().unwrap();
    assert_eq!(changes.len(), 1, "{body}");
    assert_eq!(changes[0]["at_hop"], 2, "{body}");
    assert_eq!(
        (&changes[0]["before"][1], &changes[0]["after"][1]),
        (&"2001:db8:5::2".into(), &"2001:db8:6::2".into())
    );
    let (status, body) = get(port, "/api/v1/path-changes?target=2001:db8:9::8");
    assert_eq!((status, json(&body)), (200, serde_json::json!([])));
    let (status, body) = get(port, "/api/v1/path-changes?target=nowhere");
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("target 'nowhere'"), "{body}");
    let (status, _) = get(port, "/api/v1/path-changes?limit=0");
    assert_eq!(status, 400);

    // The portal's page of the trace that moved: its hops as the API's
    // document gives them, and the change toward its target, linked.
    let base = format!("http://[::1]:{port}");
    let shots = crate::portal_browser::shots();
    let page =
        crate::portal_browser::drive("trace.mjs", &[&base, shots.to_str().unwrap(), &ids[2]]);
    crate::portal_browser::no_problems(&page);
    assert_eq!(page["page"]["state"], "ready", "{page}");
    let hops: Vec<(u64, String)> = page["hops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["ttl"].as_u64().unwrap(),
                h["cells"][1].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        hops,
        [
            (1, "2001:db8:4::1".to_string()),
            (2, "2001:db8:6::2".to_string()),
            (3, "2001:db8:9::9".to_string())
        ],
        "{page}"
    );
    // of_route answers each hop once, its RTT the hop's number in ms.
    assert_eq!(page["hops"][1]["cells"][2], "2.000", "{page}");
    let listed = page["changes"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{page}");
    assert_eq!(
        (&listed[0]["hop"], &listed[0]["result"]),
        (&2.into(), &ids[2].clone().into()),
        "{page}"
    );
    let text = listed[0]["text"].as_str().unwrap();
    assert!(
        text.contains("the route changed at hop 2")
            && text.contains("before: 2001:db8:4::1 → 2001:db8:5::2 → 2001:db8:9::9")
            && text.contains("after: 2001:db8:4::1 → 2001:db8:6::2 → 2001:db8:9::9"),
        "{text}"
    );
}
