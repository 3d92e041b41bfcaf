//! The agent's HTTP side attacked as a hostile client would, on loopback
//! and bounded in count and time: connections that never finish their
//! headers and kept-alive ones left idle, from one source and from many,
//! under a descriptor limit of 128; wrong tokens one after another;
//! event streams over the cap; a campaign flood; forged `from` labels on
//! ingest; a `Host` from a DNS-rebinding page; anonymous reads of every
//! route checked for secrets and personal data. Each checks what did not
//! happen as well as the refusal: the control port and the API kept
//! serving, the agent's descriptors stayed bounded, nothing was stored
//! under another agent's name.

use crate::common;
use common::http::{get, get_as, get_head, json, parse_metrics, send, wait_for, Agent};
use common::{sonde, ServerProc, TempDir};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

const TOKEN: &str = "0123456789abcdef-http-attack";

/// A connection from `source` (a loopback address of its own) to `port`
/// on 127.0.0.1.
fn connect_from(source: [u8; 4], port: u16) -> std::io::Result<TcpStream> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    s.bind(&SocketAddr::from((source, 0)).into())?;
    s.connect_timeout(
        &SocketAddr::from(([127, 0, 0, 1], port)).into(),
        Duration::from_secs(5),
    )?;
    Ok(s.into())
}

/// One request from 127.0.0.1; its status and body.
fn request(port: u16, text: &str) -> (u16, String) {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return (0, String::new());
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(20)));
    if s.write_all(text.as_bytes()).is_err() {
        return (0, String::new());
    }
    let mut raw = String::new();
    let _ = s.read_to_string(&mut raw);
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, body.to_string())
}

fn info(port: u16) -> u16 {
    request(
        port,
        "GET /api/v1/info HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    )
    .0
}

/// Descriptors the process `pid` holds open.
fn descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// A one-second TCP test to the agent's control port: whether it ran.
fn control_port_test(port: u16) -> bool {
    sonde()
        .args(["tcp", "127.0.0.1", "-p", &port.to_string(), "-t", "1", "-J"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// An agent under a descriptor limit of 128 (systemd's default soft
/// limit is 1024), its HTTP side on 127.0.0.1, with short timeouts.
fn limited_agent(dir: &TempDir) -> (ServerProc, u16) {
    let config = dir.join("agent.toml");
    std::fs::write(
        &config,
        format!(
            "[http]\ninterface_interval = \"0s\"\nheader_timeout = \"3s\"\nidle_timeout = \"4s\"\n\
             max_connections_per_source = 8\n\
             tokens = [{{ name = \"ops\", token = \"{TOKEN}\", may = [\"run_now\"] }}]\n"
        ),
    )
    .unwrap();
    let mut cmd = std::process::Command::new("prlimit");
    cmd.args(["--nofile=128:128", env!("CARGO_BIN_EXE_sonde")])
        .env_remove("SONDE_LOG")
        .env_remove("SONDE_SERVE_CONFIG");
    let db = dir.join("a.db");
    let server = ServerProc::start_with(
        cmd,
        &["--bind", "127.0.0.1"],
        &[
            "--no-reflector",
            "--http",
            "127.0.0.1:0",
            "--archive",
            db.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
        ],
    );
    assert!(server.wait_for_log("http="), "{}", server.log());
    let log = server.log();
    let port = log
        .split("http=127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no http address in {log}"));
    (server, port)
}

/// Whether the agent closed `s` (a read gives end of file or an error)
/// within `bound`.
fn closed_within(s: &mut TcpStream, bound: Duration) -> bool {
    let _ = s.set_read_timeout(Some(bound));
    let mut buf = [0u8; 512];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) => {
                return !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                )
            }
        }
    }
}

#[test]
fn slow_and_idle_connections_leave_the_api_and_the_control_port_serving() {
    let dir = TempDir::new("http-attack-slow");
    let (server, port) = limited_agent(&dir);
    let pid = server.pid();
    let before = descriptors(pid);

    // One source: 200 connections whose headers never end, and kept-alive
    // ones left idle after one request. Over its cap of 8, each is closed
    // as soon as it is accepted.
    let mut held = Vec::new();
    for i in 0..200 {
        let Ok(mut s) = connect_from([127, 0, 0, 2], port) else {
            continue;
        };
        let head = if i % 4 == 0 {
            "GET /api/v1/info HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        } else {
            "GET /api/v1/info HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
        };
        let _ = s.write_all(head.as_bytes());
        held.push(s);
    }
    assert_eq!(info(port), 200, "the API answers another source at once");
    let during = descriptors(pid);
    assert!(
        during < before + 40,
        "the agent holds {during} descriptors (it held {before} before): the cap did not hold"
    );
    assert!(
        control_port_test(server.port),
        "a control-port test fails while one source floods the API"
    );

    // Many sources: 3 connections each from 60 addresses, over the total
    // cap the descriptor limit sets (128 less the reserve of 64).
    for host in 10..70u8 {
        for _ in 0..3 {
            if let Ok(mut s) = connect_from([127, 0, 0, host], port) {
                let _ = s.write_all(b"GET /api/v1/info HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
                held.push(s);
            }
        }
    }
    let during = descriptors(pid);
    assert!(
        during < 128 - 16,
        "{during} descriptors open: the reserve for the control port is gone"
    );
    assert!(
        control_port_test(server.port),
        "a control-port test fails while many sources hold the API's every place"
    );
    // The held connections end at the header timeout (3 s), and the API
    // answers again.
    assert!(
        wait_for(30, || info(port) == 200),
        "the API did not come back after the slow connections timed out"
    );
    let mut still_open = 0;
    for s in held.iter_mut().take(40) {
        if !closed_within(s, Duration::from_secs(15)) {
            still_open += 1;
        }
    }
    assert_eq!(still_open, 0, "connections the agent never closed");
    drop(held);

    // An idle kept-alive connection, of a source under its cap, is
    // closed too, after its request was answered.
    let mut idle = connect_from([127, 0, 0, 3], port).unwrap();
    idle.write_all(b"GET /api/v1/info HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();
    assert!(closed_within(&mut idle, Duration::from_secs(20)));

    let (status, text) = request(
        port,
        "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 200);
    let m = parse_metrics(&text);
    let refused: f64 = m["sonde_http_connections_refused"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s[2].as_f64().unwrap())
        .sum();
    assert!(refused >= 150.0, "{refused} connections refused at once");
    assert_eq!(m["sonde_http_connections_limit"][0][2], 64.0);
    assert!(
        server.log().contains("at most 64 connections"),
        "{}",
        server.log()
    );
}

fn agent_with(test: &str, http: &str) -> Agent {
    let b = Agent::builder(&format!("http-attack-{test}"));
    let campaigns = b.dir().join("campaigns");
    std::fs::create_dir_all(&campaigns).unwrap();
    b.args(["--campaigns", campaigns.to_str().unwrap()]).start(&format!(
        "[http]\ninterface_interval = \"0s\"\n{http}\n\
         tokens = [{{ name = \"ops\", token = \"{TOKEN}\", may = [\"run_now\", \"campaigns\", \"incidents\"] }},\n\
         {{ name = \"agent-a\", token = \"agent-a-token-0123456789\", may = [\"ingest\", \"mesh\"] }},\n\
         {{ name = \"agent-b\", token = \"agent-b-token-0123456789\", may = [\"ingest\", \"mesh\"] }},\n\
         {{ name = \"reader\", token = \"reader-token-0123456789\" }}]\n"
    ))
}

#[test]
fn wrong_tokens_are_held_to_a_rate_and_a_read_only_token_writes_nothing() {
    let a = agent_with("tokens", "auth_failures_per_minute = 5");
    let mut refused = 0;
    let mut held = 0;
    for i in 0..12 {
        let (status, _) = get_as(
            a.port,
            "/api/v1/results",
            &format!("guess-{i:02}-0123456789"),
        );
        match status {
            403 => refused += 1,
            429 => held += 1,
            s => panic!("a wrong token got {s}"),
        }
    }
    // Five a minute, and one more if the loop took over the 12 s in
    // which the bucket gives one back (a loaded machine).
    assert!((5..=6).contains(&refused), "{refused} wrong tokens told so");
    assert_eq!(held, 12 - refused, "the rest are held back");
    // Held back, even the right token waits: the source is the attacker.
    let (status, _) = get_as(a.port, "/api/v1/results", TOKEN);
    assert_eq!(status, 429);
    let (_, text) = get(a.port, "/metrics");
    let m = parse_metrics(&text);
    let by = |why: &str| {
        m["sonde_http_requests_refused"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s[1]["why"] == why)
            .map(|s| s[2].as_f64().unwrap())
            .unwrap()
    };
    assert_eq!(by("wrong_token"), refused as f64);
    assert!(by("auth_locked") >= 8.0);
    assert!(!a.server.log().contains("guess-"), "a token was logged");
}

#[test]
fn a_token_without_may_only_reads() {
    let a = agent_with("read-only", "");
    let (status, body) = send(
        a.port,
        "POST",
        "/api/v1/tests",
        "reader-token-0123456789",
        "application/json",
        r#"{"test": "ping", "host": "::1", "count": 1}"#,
    );
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("may not run_now"), "{body}");
    let (status, _) = get_as(a.port, "/api/v1/results", "reader-token-0123456789");
    assert_eq!(status, 200);
}

#[test]
fn event_streams_over_the_cap_are_refused_and_their_places_come_back() {
    let a = agent_with("streams", "max_event_streams = 3");
    let open = |_: usize| {
        let mut s = TcpStream::connect(("::1", a.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(b"GET /api/v1/events HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .unwrap();
        let mut head = [0u8; 12];
        s.read_exact(&mut head).unwrap();
        (String::from_utf8_lossy(&head[9..12]).to_string(), s)
    };
    let streams: Vec<_> = (0..3).map(open).collect();
    assert!(streams.iter().all(|(code, _)| code == "200"));
    let (code, _) = open(3);
    assert_eq!(code, "503", "a fourth stream over the cap of 3");
    drop(streams);
    assert!(
        wait_for(10, || open(4).0 == "200"),
        "the places of closed streams never came back"
    );
}

#[test]
fn a_campaign_flood_stops_at_its_cap() {
    let a = agent_with("campaigns", "max_campaigns = 3\nrequests_per_minute = 1000");
    let plan = |i: usize| {
        format!(
            "name = \"flood-{i}\"\n[schedule]\nrepeat = \"PT1H\"\n\
             [[endpoint]]\nname = \"A\"\naddress = \"::1\"\n[[step]]\nname = \"s\"\ntest = \"tcp\"\nfrom = \"A\"\nto = \"A\"\ntime_s = 1\n"
        )
    };
    let mut created = 0;
    let mut capped = 0;
    for i in 0..20 {
        let (status, body) = send(
            a.port,
            "POST",
            "/api/v1/campaigns",
            TOKEN,
            "application/toml",
            &plan(i),
        );
        match status {
            201 => created += 1,
            429 => {
                assert!(body.contains("max_campaigns"), "{body}");
                capped += 1;
            }
            s => panic!("{s}: {body}"),
        }
    }
    assert_eq!((created, capped), (3, 17));
    let files = std::fs::read_dir(a.dir.join("campaigns"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".toml")
        })
        .count();
    assert_eq!(files, 3, "plans written past the cap");
    // Listed with a limit (as every list route is): cut, and saying so.
    assert!(
        wait_for(30, || json(&get(a.port, "/api/v1/campaigns").1)
            .as_array()
            .is_some_and(|l| l.len() == 3)),
        "the three plans never ran"
    );
    let (status, head, body) = get_head(a.port, "/api/v1/campaigns?limit=2", TOKEN);
    assert_eq!(status, 200, "{body}");
    assert_eq!(json(&body).as_array().map(Vec::len), Some(2), "{body}");
    assert!(head.contains("\r\nx-sonde-truncated: true"), "{head}");
    let (_, head, body) = get_head(a.port, "/api/v1/campaigns?limit=3", TOKEN);
    assert_eq!(json(&body).as_array().map(Vec::len), Some(3), "{body}");
    assert!(!head.contains("x-sonde-truncated"), "{head}");
    for list in [
        "/api/v1/campaigns",
        "/api/v1/campaigns/flood-0/runs",
        "/api/v1/runs/r/events",
        "/api/v1/constituencies",
        "/api/v1/mail-templates",
        "/api/v1/mesh/agents",
        "/api/v1/readings/probes",
        "/api/v1/interfaces",
        "/api/v1/live",
    ] {
        for limit in ["0", "10001", "many"] {
            let (status, _, body) = get_head(a.port, &format!("{list}?limit={limit}"), TOKEN);
            assert_eq!(status, 400, "{list}?limit={limit}: {body}");
            assert!(body.contains("limit"), "{list}: {body}");
        }
    }
}

#[test]
fn the_expensive_routes_are_held_to_their_rate() {
    let a = agent_with("rate", "requests_per_minute = 4");
    let statuses: Vec<u16> = (0..8).map(|_| get(a.port, "/api/v1/export").0).collect();
    // Four a minute, and one more if the loop took over the 15 s in
    // which the bucket gives one back (a loaded machine).
    let ok = statuses.iter().filter(|&&s| s == 200).count();
    assert!((4..=5).contains(&ok), "{statuses:?}");
    assert_eq!(
        statuses.iter().filter(|&&s| s == 429).count(),
        8 - ok,
        "{statuses:?}"
    );
    // Cheap reads are not held.
    assert_eq!(get(a.port, "/api/v1/results").0, 200);
}

#[test]
fn a_page_from_another_name_is_refused_and_names_the_setting() {
    let a = agent_with("hosts", "hosts = [\"sonde.example.net\"]");
    let host = |h: &str| {
        common::http::http(
            a.port,
            &format!("GET /api/v1/info HTTP/1.1\r\nHost: {h}\r\nConnection: close\r\n\r\n"),
        )
    };
    let (status, body) = host("rebind.attacker.example");
    assert_eq!(status, 421, "{body}");
    assert!(body.contains("http.hosts"), "{body}");
    assert_eq!(host("sonde.example.net:8080").0, 200);
    assert_eq!(host("[::1]:8080").0, 200);
    assert_eq!(host("localhost").0, 200);
}

/// Waits until the deadline for the agent's log to hold `what`.
fn logged(a: &Agent, what: &str) -> bool {
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end {
        if a.server.log().contains(what) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

#[test]
fn an_agent_cannot_pass_its_results_off_as_anothers() {
    let a = agent_with("forged", "");
    let out = sonde()
        .args(["ping", "::1", "-c", "2", "-i", "50ms", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let ping: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let result = |from: &str, to: &str| {
        let mut r = ping.clone();
        r["id"] = serde_json::json!(uuid_like(from, to));
        serde_json::json!({"items": [{"kind": "result", "result": r,
            "placement": {"labels": {"from": from, "to": to, "agent": "agent-b"}}}]})
        .to_string()
    };
    let ingest = |body: &str| {
        send(
            a.port,
            "POST",
            "/api/v1/ingest",
            "agent-a-token-0123456789",
            "application/json",
            body,
        )
    };
    let (status, body) = ingest(&result("agent-b", "agent-c"));
    assert_eq!(status, 422, "{body}");
    let body = json(&body);
    assert_eq!(body["item"], 0);
    assert!(
        body["error"].as_str().unwrap().contains("agent-b"),
        "{body}"
    );
    assert!(logged(&a, "sends agent-a's own results only"));
    let (_, kept) = get_as(a.port, "/api/v1/results?label=from=agent-b", TOKEN);
    assert_eq!(
        json(&kept).as_array().unwrap().len(),
        0,
        "the forged result was kept"
    );

    // Its own path is kept, under its own name whatever label it sent.
    let (status, body) = ingest(&result("agent-a", "agent-c"));
    assert_eq!(status, 200, "{body}");
    let (_, kept) = get_as(a.port, "/api/v1/results?label=agent=agent-a", TOKEN);
    assert_eq!(json(&kept).as_array().unwrap().len(), 1);
    let (_, kept) = get_as(a.port, "/api/v1/results?label=agent=agent-b", TOKEN);
    assert_eq!(json(&kept).as_array().unwrap().len(), 0);

    // An agent registered with the mesh whose token has since gone is
    // an agent all the same: no other may speak for it.
    let db = a.dir.join("a.db");
    sonde_archive::Store::open(db.to_str().unwrap())
        .unwrap()
        .register_agent(
            &sonde_archive::AgentInfo {
                name: "agent-gone".into(),
                addresses: vec!["2001:db8::9".into()],
                location: None,
                version: None,
            },
            1,
        )
        .unwrap();
    let (status, body) = ingest(&result("agent-gone", "agent-c"));
    assert_eq!(status, 422, "{body}");
    assert!(
        json(&body)["error"]
            .as_str()
            .unwrap()
            .contains("agent-gone"),
        "{body}"
    );
    let (_, kept) = get_as(a.port, "/api/v1/results?label=from=agent-gone", TOKEN);
    assert_eq!(
        json(&kept).as_array().unwrap().len(),
        0,
        "the forged result was kept"
    );

    // A campaign's own endpoint names are no agent's: kept, as the
    // token's agent's.
    let (status, body) = ingest(&result("A", "B"));
    assert_eq!(status, 200, "{body}");
    let (_, kept) = get_as(a.port, "/api/v1/results?label=agent=agent-a", TOKEN);
    assert_eq!(json(&kept).as_array().unwrap().len(), 2);
}

fn uuid_like(from: &str, to: &str) -> String {
    let n = from.len() * 31 + to.len() * 7 + from.bytes().map(usize::from).sum::<usize>();
    format!("00000000-0000-4000-8000-{n:012x}")
}

/// Every GET route of the API document, with its path parameters filled
/// from what the agent keeps.
fn every_get_route(ids: &[(&str, String)]) -> Vec<String> {
    let doc: serde_json::Value =
        serde_json::from_str(include_str!("../../../sonde-web/openapi.json")).unwrap();
    let mut routes = Vec::new();
    for (path, ops) in doc["paths"].as_object().unwrap() {
        if ops.get("get").is_none() {
            continue;
        }
        let mut p = path.clone();
        for (name, value) in ids {
            p = p.replace(&format!("{{{name}}}"), value);
        }
        if !p.contains('{') {
            routes.push(p);
        }
    }
    routes
}

#[test]
fn anonymous_readers_get_no_secret_and_no_personal_data() {
    let a = agent_with("anonymous", "");
    // Personal data, written with the token: a constituency and its
    // contact, an incident, a mail template, a registered mesh agent.
    let post = |path: &str, token: &str, body: serde_json::Value| {
        let (status, text) = send(
            a.port,
            "POST",
            path,
            token,
            "application/json",
            &body.to_string(),
        );
        assert!(status < 300, "{path}: {status} {text}");
        json(&text)
    };
    post(
        "/api/v1/constituencies",
        TOKEN,
        serde_json::json!({"code": "noc", "name": "Example NOC", "networks": ["2001:db8::/32"],
            "contacts": [{"name": "Erin Contact", "email": "erin.contact@example.net", "role": "abuse"}]}),
    );
    post(
        "/api/v1/mail-templates",
        TOKEN,
        serde_json::json!({"name": "first", "subject": "About {{incident.id}}", "body": "Dear Erin Contact"}),
    );
    let incident = post(
        "/api/v1/incidents",
        TOKEN,
        serde_json::json!({"type": "loss-high", "summary": "loss toward Erin Contact's net",
            "addresses": [{"address": "2001:db8::1", "role": "target"}]}),
    );
    post(
        "/api/v1/mesh/register",
        "agent-a-token-0123456789",
        serde_json::json!({"name": "agent-a", "addresses": ["2001:db8:aa::7"]}),
    );
    // A stored HTTP test whose URL has a user and password and whose
    // request has a secret header, measured against the agent itself.
    let out = sonde()
        .args([
            "http",
            &format!("http://ops:pw-in-url-42@[::1]:{}/api/v1/info", a.port),
            "-H",
            "X-Api-Key: header-secret-42",
            "-n",
            "3",
            "-c",
            "1",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut http_result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    http_result["id"] = serde_json::json!("00000000-0000-4000-8000-00000000abcd");
    let batch = serde_json::json!({"items": [{"kind": "result", "result": http_result,
        "placement": {"labels": {"from": "agent-a", "to": "web"}}}]});
    post("/api/v1/ingest", "agent-a-token-0123456789", batch);
    // The token sees it whole.
    let (_, whole) = get_as(
        a.port,
        "/api/v1/results/00000000-0000-4000-8000-00000000abcd",
        TOKEN,
    );
    assert!(
        whole.contains("pw-in-url-42") && whole.contains("header-secret-42"),
        "{whole}"
    );

    let ids = [
        ("id", "00000000-0000-4000-8000-00000000abcd".to_string()),
        ("code", "noc".to_string()),
        ("name", "first".to_string()),
    ];
    let mut routes = every_get_route(&ids);
    routes.push(format!("/api/v1/incidents/{}", incident["ids"][0]));
    routes.push("/api/v1/export?format=json".into());
    routes.push("/api/v1/export?format=ndjson".into());
    assert!(routes.len() >= 20, "{routes:?}");
    let secrets = [
        "pw-in-url-42",
        "header-secret-42",
        "erin.contact@example.net",
        "Erin Contact",
        "2001:db8:aa::7",
    ];
    let mut personal_refused = 0;
    for route in &routes {
        if route.contains("/events") {
            continue; // an endless stream: checked by the stream tests
        }
        let (status, body) = get(a.port, route);
        if status == 401 {
            personal_refused += 1;
            continue;
        }
        for s in secrets {
            assert!(
                !body.contains(s),
                "GET {route} ({status}) gives {s} to anyone"
            );
        }
    }
    assert!(
        personal_refused >= 4,
        "{personal_refused} routes asked for a token"
    );
    for route in [
        "/api/v1/constituencies",
        "/api/v1/incidents",
        "/api/v1/mail-templates",
        "/api/v1/mesh/agents",
    ] {
        assert_eq!(get(a.port, route).0, 401, "{route} without a token");
        assert_eq!(get_as(a.port, route, TOKEN).0, 200, "{route} with one");
    }
}

/// The agent's peak resident memory, from /proc/PID/status, in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

#[test]
fn an_export_of_100000_results_streams_in_bounded_memory() {
    const N: usize = 100_000;
    let b = Agent::builder("http-attack-export");
    // 100,000 results (a real ping's, with ids and starts of their own)
    // written into the archive before the agent starts.
    let db = b.dir().join("a.db");
    let out = sonde()
        .args(["ping", "::1", "-c", "2", "-i", "50ms", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let mut template: sonde_model::TestResult = serde_json::from_slice(&out.stdout).unwrap();
    template.id = "00000000-0000-4000-8000-000000000000".parse().unwrap();
    // One kept as the agent keeps results (the schema, its columns and its
    // document), then copied in SQL with ids and starts of their own.
    sonde_archive::Store::open(db.to_str().unwrap())
        .unwrap()
        .put_result(&template, &sonde_archive::Placement::default())
        .unwrap();
    let sql = rusqlite::Connection::open(&db).unwrap();
    let copied = sql
        .execute(
            &format!(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {}) \
                 INSERT INTO results (id, test, source, target, family, direction, start_ns, \
                 duration_s, interrupted, campaign, run_id, method_id, throughput_bps, loss_pct, \
                 pdr_pct, jitter_ms, rtt_p50_ms, doc) SELECT printf('00000000-0000-4000-8000-%012d', \
                 i), test, source, target, family, direction, start_ns + i * 1000000, duration_s, \
                 interrupted, campaign, run_id, method_id, throughput_bps, loss_pct, pdr_pct, \
                 jitter_ms, rtt_p50_ms, doc FROM results, n",
                N - 1
            ),
            [],
        )
        .unwrap();
    assert_eq!(copied, N - 1);
    drop(sql);
    let a = b.start(&format!(
        "[http]\ninterface_interval = \"0s\"\nmax_export = {N}\nidle_timeout = \"5s\"\n\
         tokens = [{{ name = \"ops\", token = \"{TOKEN}\" }}]\n"
    ));
    let pid = a.server.pid();
    // One request for all of them, as CSV (read from the archive's
    // columns, so the test costs the machine little), read as it comes.
    let before = peak_rss_kib(pid);
    let read_all = |query: &str| -> (usize, usize, String) {
        let mut s = TcpStream::connect(("::1", a.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
        s.write_all(
            format!(
                "GET /api/v1/export?{query} HTTP/1.1\r\nHost: localhost\r\n\
                 Authorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
            )
            .as_bytes(),
        )
        .unwrap();
        let (mut bytes, mut lines, mut first) = (0usize, 0usize, Vec::new());
        let mut buf = vec![0u8; 1 << 16];
        loop {
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    bytes += n;
                    lines += buf[..n].iter().filter(|&&c| c == b'\n').count();
                    if first.len() < 1 << 16 {
                        first.extend_from_slice(&buf[..n]);
                    }
                }
                Err(e) => panic!("after {bytes} bytes: {e}"),
            }
        }
        (bytes, lines, String::from_utf8_lossy(&first).into_owned())
    };
    let (bytes, lines, _) = read_all(&format!("format=csv&limit={N}"));
    let after = peak_rss_kib(pid);
    // The head's lines and the chunked framing's lines come on top of the
    // results' own.
    assert!(lines >= N, "{lines} lines for {N} results");
    let mib = |k: u64| k as f64 / 1024.0;
    assert!(
        bytes > 10 << 20,
        "{bytes} bytes: the export is smaller than the bound it is held to"
    );
    // Kept whole, the rows alone (17 columns each) would take several
    // times the export's size (over 60 MiB), before the text of it.
    assert!(
        after.saturating_sub(before) < 16 * 1024,
        "the agent's peak memory grew by {:.1} MiB for a {:.1} MiB export",
        mib(after.saturating_sub(before)),
        bytes as f64 / 1048576.0
    );
    eprintln!(
        "export of {N}: {:.1} MiB, peak RSS {:.1} -> {:.1} MiB",
        bytes as f64 / 1048576.0,
        mib(before),
        mib(after)
    );
    // As documents too: NDJSON, one result a line, read back.
    let (_, lines, head) = read_all("format=ndjson&limit=2000");
    assert!(lines >= 2000, "{lines}");
    let doc = head
        .lines()
        .find(|l| l.starts_with('{'))
        .expect("a document");
    assert_eq!(json(doc)["test"], "ping", "{doc}");
    // Pages of 40,000: each says where the next starts (the Link the
    // answer gives is followed as it is), the last says nothing, and the
    // pages hold every result once.
    let mut path = "/api/v1/export?format=csv&limit=40000".to_string();
    let mut rows = std::collections::BTreeSet::new();
    let mut pages = 0;
    loop {
        let mut s = TcpStream::connect(("::1", a.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
        s.write_all(
            format!(
                "GET {path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {TOKEN}\r\n\
                 Connection: close\r\n\r\n"
            )
            .as_bytes(),
        )
        .unwrap();
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).unwrap();
        let raw = String::from_utf8_lossy(&raw);
        let (head, body) = raw.split_once("\r\n\r\n").unwrap();
        pages += 1;
        // The chunked framing's size lines have no comma.
        let ids: Vec<&str> = body
            .lines()
            .filter(|l| l.starts_with("00000000-"))
            .map(|l| l.split(',').next().unwrap())
            .collect();
        rows.extend(ids.iter().map(|i| i.to_string()));
        let link = head
            .lines()
            .find_map(|l| l.strip_prefix("link: <"))
            .map(|l| l.split('>').next().unwrap().to_string());
        match link {
            Some(next) => {
                assert_eq!(ids.len(), 40_000, "a page before the last is full");
                assert!(head.contains("x-sonde-next-cursor: "), "{head}");
                path = next;
            }
            None => {
                assert_eq!(ids.len(), N - 80_000, "the last page");
                break;
            }
        }
        assert!(pages < 5, "the pages never end");
    }
    assert_eq!((pages, rows.len()), (3, N));

    // A client that asks for the whole export and stops reading: no byte
    // moves once the socket buffers are full, and the agent closes the
    // connection after idle_timeout (5 s), the export's chunk with it.
    let mut stalled = TcpStream::connect(("::1", a.port)).unwrap();
    stalled
        .write_all(
            format!(
                "GET /api/v1/export?format=csv&limit={N} HTTP/1.1\r\nHost: localhost\r\n\
                 Authorization: Bearer {TOKEN}\r\n\r\n"
            )
            .as_bytes(),
        )
        .unwrap();
    let idle_closed = || {
        let (_, text) = get(a.port, "/metrics");
        parse_metrics(&text)["sonde_http_connections_closed"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s[1]["why"] == "idle")
            .map_or(0.0, |s| s[2].as_f64().unwrap())
    };
    assert!(
        wait_for(40, || idle_closed() >= 1.0),
        "a stalled reader's connection was never closed"
    );
    drop(stalled);
}

#[test]
fn a_token_kept_as_its_hash_opens_the_api_and_the_file_never_holds_it() {
    let out = sonde()
        .args(["token", "new", "--name", "ops"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let token = text
        .lines()
        .find_map(|l| l.strip_prefix("token: "))
        .unwrap()
        .to_string();
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("config: "))
        .unwrap()
        .to_string();
    assert!(
        line.contains("$argon2id$") && !line.contains(&token),
        "{line}"
    );
    let b = Agent::builder("http-attack-hashed");
    let config = format!("[http]\ninterface_interval = \"0s\"\nread_public = false\n{line}\n");
    let a = b.start(&config);
    let on_disk = std::fs::read_to_string(a.dir.join("agent.toml")).unwrap();
    assert!(!on_disk.contains(&token));
    assert_eq!(get_as(a.port, "/api/v1/results", &token).0, 200);
    assert_eq!(
        get_as(a.port, "/api/v1/results", &format!("{token}x")).0,
        403
    );
    assert_eq!(get(a.port, "/api/v1/results").0, 401);
    // `may = []`: it reads, and writes nothing.
    let (status, _) = send(
        a.port,
        "POST",
        "/api/v1/tests",
        &token,
        "application/json",
        r#"{"test": "ping", "host": "::1", "count": 1}"#,
    );
    assert_eq!(status, 403);

    // sonde token hash reads the token from standard input.
    let mut child = sonde()
        .args(["token", "hash"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{token}\n").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("$argon2id$v=19$"));
    let short = sonde()
        .args(["token", "hash"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        short.status.code(),
        Some(2),
        "an empty token is a usage error"
    );
    assert!(String::from_utf8_lossy(&short.stderr).contains("16 characters"));
}

#[test]
fn ingests_at_once_are_capped_before_their_bodies_are_read() {
    let a = agent_with("ingest", "max_ingest_requests = 2");
    let agent_token = "agent-a-token-0123456789";
    // Two ingests that promise a megabyte and send ten bytes of it: each
    // holds an ingest place while the agent waits for the rest.
    let held: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut s = TcpStream::connect(("::1", a.port)).unwrap();
            s.write_all(
                format!(
                    "POST /api/v1/ingest HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \
                     {agent_token}\r\nContent-Type: application/json\r\nContent-Length: 1048576\r\n\r\n\
                     {{\"items\":"
                )
                .as_bytes(),
            )
            .unwrap();
            s
        })
        .collect();
    let empty = r#"{"items": []}"#;
    let ingest = || {
        send(
            a.port,
            "POST",
            "/api/v1/ingest",
            agent_token,
            "application/json",
            empty,
        )
    };
    let mut busy = None;
    for _ in 0..50 {
        let (status, body) = ingest();
        if status == 429 {
            busy = Some(body);
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let body = busy.expect("a third ingest while two are held was not refused");
    assert!(body.contains("max_ingest_requests"), "{body}");
    drop(held);
    assert!(
        wait_for(10, || ingest().0 == 200),
        "the places of the ingests that went away never came back"
    );
    let (_, text) = get(a.port, "/metrics");
    let m = parse_metrics(&text);
    let busy = m["sonde_http_requests_refused"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s[1]["why"] == "ingest_busy")
        .map(|s| s[2].as_f64().unwrap())
        .unwrap();
    assert!(busy >= 1.0);
}
