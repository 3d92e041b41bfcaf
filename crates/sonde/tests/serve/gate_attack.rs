//! The agent's gate attacked as a hostile API user, campaign author and
//! mesh central would, on loopback: a file named in every way in, pings
//! and HTTP loads aimed outside `[targets]`, requests over every limit
//! (the whole work counted), a share aimed outside `mesh.targets`, a
//! running test stopped. Each checks the refusal's rule and pointer, and
//! what did not happen: no connection reached the listener standing in
//! for the target, no byte of the agent's files left it, no plan was
//! written.

use crate::common;
use common::http::{get, get_as, http_port, json, parse_metrics, send, wait_for, Agent};
use common::ServerProc;
use std::io::Read;
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const TOKEN: &str = "0123456789abcdef-gate";

/// A target that counts every connection and byte it gets, on IPv4 and
/// IPv6 loopback, for as long as the test holds it.
struct Target {
    port: u16,
    connections: Arc<AtomicUsize>,
    bytes: Arc<AtomicUsize>,
}

impl Target {
    fn start() -> Target {
        let v6 = TcpListener::bind("[::1]:0").unwrap();
        let port = v6.local_addr().unwrap().port();
        let v4 = TcpListener::bind(("127.0.0.1", port)).unwrap();
        let connections = Arc::new(AtomicUsize::new(0));
        let bytes = Arc::new(AtomicUsize::new(0));
        for l in [v6, v4] {
            let (c, b) = (Arc::clone(&connections), Arc::clone(&bytes));
            std::thread::spawn(move || {
                for s in l.incoming().take(1000) {
                    let Ok(mut s) = s else { continue };
                    c.fetch_add(1, Ordering::SeqCst);
                    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                    let mut buf = [0u8; 4096];
                    while let Ok(n @ 1..) = s.read(&mut buf) {
                        b.fetch_add(n, Ordering::SeqCst);
                    }
                }
            });
        }
        Target {
            port,
            connections,
            bytes,
        }
    }

    /// Nothing reached it, after giving a started test time to.
    fn untouched_after(&self, wait: Duration) -> bool {
        let end = Instant::now() + wait;
        while Instant::now() < end {
            if self.connections.load(Ordering::SeqCst) > 0 {
                return false;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.connections.load(Ordering::SeqCst) == 0 && self.bytes.load(Ordering::SeqCst) == 0
    }
}

/// An agent with a token that may start tests and write campaigns,
/// `[limits]` of 30 s and 16 streams, pings and traces allowed toward ::1
/// only and HTTP nowhere.
fn agent(test: &str) -> (Agent, std::path::PathBuf) {
    let b = Agent::builder(&format!("gate-{test}"));
    let campaigns = b.dir().join("campaigns");
    std::fs::create_dir_all(&campaigns).unwrap();
    let agent = b
        .args(["--campaigns", campaigns.to_str().unwrap()])
        .start(&format!(
            "[limits]\nmax_duration = \"30s\"\nmax_streams = 16\nmax_work = \"60s\"\n\
             [targets]\nping = [\"::1/128\"]\ntrace = [\"::1/128\"]\n\
             [http]\ninterface_interval = \"0s\"\n\
             tokens = [{{ name = \"ops\", token = \"{TOKEN}\", may = [\"run_now\", \"campaigns\"] }}]\n"
        ));
    (agent, campaigns)
}

fn post(port: u16, path: &str, body: &str) -> (u16, serde_json::Value) {
    let kind = if body.trim_start().starts_with('{') {
        "application/json"
    } else {
        "application/toml"
    };
    let (status, text) = send(port, "POST", path, TOKEN, kind, body);
    (status, json(&text))
}

/// Asserts a 422 by `rule`, at `at`, whose message names `names`.
fn refused(reply: (u16, serde_json::Value), rule: &str, at: &str, names: &str) {
    let (status, body) = reply;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["rule"], rule, "{body}");
    assert_eq!(body["at"], at, "{body}");
    let error = body["error"].as_str().unwrap();
    assert!(error.contains(names), "{error}");
}

fn plan(step: &str) -> String {
    format!(
        "name = \"hostile\"\n[schedule]\nrepeat = \"PT2S\"\n\
         [[endpoint]]\nname = \"A\"\naddress = \"::1\"\n[[endpoint]]\nname = \"B\"\naddress = \"::1\"\n\
         [[step]]\nname = \"x\"\n{step}\n"
    )
}

#[test]
fn no_way_in_reads_a_file_of_the_agent() {
    let (a, campaigns) = agent("files");
    let target = Target::start();
    let secret = a.dir.join("agent.toml");
    let url = format!("http://[::1]:{}/x", target.port);
    let path = secret.display();
    refused(
        post(
            a.port,
            "/api/v1/tests",
            &format!(
                r#"{{"test": "http", "url": "{url}", "method": "POST", "body_file": "{path}"}}"#
            ),
        ),
        "no_files",
        "/body_file",
        &path.to_string(),
    );
    refused(
        post(
            a.port,
            "/api/v1/tests",
            &format!(
                r#"{{"test": "ping", "host": "::1", "proto": "udp", "port": {}, "count": 2,
                    "key_file": "{path}"}}"#,
                target.port
            ),
        ),
        "no_files",
        "/key_file",
        "rule: no_files",
    );
    // Nested in a method.
    refused(
        post(
            a.port,
            "/api/v1/tests",
            &format!(
                r#"{{"method": "repeat", "test": {{"test": "http", "url": "{url}", "body_file": "{path}"}}}}"#
            ),
        ),
        "no_files",
        "/test/body_file",
        "no_files",
    );
    // In a campaign's step, written through the API: refused, and no plan
    // is written.
    refused(
        post(
            a.port,
            "/api/v1/campaigns",
            &plan(&format!(
                "test = \"http\"\nurl = \"{url}\"\nbody_file = \"{path}\""
            )),
        ),
        "no_files",
        "/step/1/body_file",
        "step 1 (x)",
    );
    assert_eq!(std::fs::read_dir(&campaigns).unwrap().count(), 0);
    assert!(
        target.untouched_after(Duration::from_secs(2)),
        "the agent's file reached the target"
    );
    // The refusals are counted by rule.
    let families = parse_metrics(&get(a.port, "/metrics").1);
    let refused = families["sonde_tests_refused"].as_array().unwrap();
    let by_rule = refused
        .iter()
        .find(|s| s[1]["reason"] == "no_files")
        .unwrap_or_else(|| panic!("{families}"));
    assert_eq!(by_rule[2], 4.0, "{by_rule}");
}

#[test]
fn traffic_goes_only_to_targets_that_agreed() {
    let (a, campaigns) = agent("consent");
    let target = Target::start();
    let v4 = format!("http://127.0.0.1:{}/", target.port);
    let v6 = format!("http://[::1]:{}/", target.port);
    for url in [&v4, &v6] {
        refused(
            post(
                a.port,
                "/api/v1/tests",
                &format!(r#"{{"test": "http", "url": "{url}", "time_s": 5, "connections": 4}}"#),
            ),
            "consent",
            "/host",
            "targets.http",
        );
    }
    refused(
        post(
            a.port,
            "/api/v1/tests",
            r#"{"test": "ping", "host": "127.0.0.1", "count": 3}"#,
        ),
        "consent",
        "/host",
        "targets.ping",
    );
    refused(
        post(
            a.port,
            "/api/v1/campaigns",
            &plan(&format!("test = \"http\"\nurl = \"{v6}\"\ntime_s = 2")),
        ),
        "consent",
        "/step/1/host",
        "step 1 (x)",
    );
    refused(
        post(
            a.port,
            "/api/v1/campaigns",
            &plan("test = \"ping\"\nhost = \"169.254.169.254\"\ncount = 2"),
        ),
        "consent",
        "/step/1/host",
        "169.254.169.254",
    );
    // A trace reaches every router on its way: targets.trace, not
    // targets.ping, and a plan's trace step the same.
    refused(
        post(
            a.port,
            "/api/v1/tests",
            r#"{"test": "trace", "host": "127.0.0.1", "queries": 1}"#,
        ),
        "consent",
        "/host",
        "targets.trace",
    );
    refused(
        post(
            a.port,
            "/api/v1/campaigns",
            &plan("test = \"trace\"\nhost = \"169.254.169.254\""),
        ),
        "consent",
        "/step/1/host",
        "169.254.169.254",
    );
    assert_eq!(std::fs::read_dir(&campaigns).unwrap().count(), 0);
    assert!(
        target.untouched_after(Duration::from_secs(2)),
        "traffic reached a target that did not agree"
    );
    // Where the operator allowed it, the same request runs.
    let (status, body) = post(
        a.port,
        "/api/v1/tests",
        r#"{"test": "ping", "host": "::1", "count": 2, "interval_s": 0.2}"#,
    );
    assert_eq!(status, 202, "{body}");
    let (status, body) = post(
        a.port,
        "/api/v1/tests",
        r#"{"test": "trace", "host": "::1", "queries": 1}"#,
    );
    assert_eq!(status, 202, "{body}");
    let (status, body) = post(
        a.port,
        "/api/v1/campaigns",
        &plan("test = \"ping\"\ncount = 2\ninterval_s = 0.1"),
    );
    assert_eq!(status, 201, "{body}");
    let written = std::fs::read_to_string(campaigns.join("hostile.toml")).unwrap();
    assert!(written.starts_with("# api-campaign hostile\n"), "{written}");
}

#[test]
fn limits_bound_the_whole_work_of_every_way_in() {
    let (a, campaigns) = agent("limits");
    // Five series that may each wait 600 s for answers: 50 min in all.
    refused(
        post(
            a.port,
            "/api/v1/tests",
            r#"{"test": "ping", "host": "::1", "count": 5, "interval_s": 0.2,
                "sizes": [56, 100, 200, 300, 400], "timeout_s": 600}"#,
        ),
        "max_duration",
        "/count",
        "every series and its timeout",
    );
    refused(
        post(
            a.port,
            "/api/v1/tests",
            r#"{"test": "ping", "host": "::1", "count": 0}"#,
        ),
        "max_duration",
        "/count",
        "no end",
    );
    // The plan from the report: 100,000 pings of 65,000 B at 1 ms, and an
    // hour of HTTP on 256 connections.
    refused(
        post(
            a.port,
            "/api/v1/campaigns",
            &plan("test = \"ping\"\ncount = 100000\ninterval_s = 0.001\nsizes = [65000]"),
        ),
        "max_duration",
        "/step/1/count",
        "max_duration",
    );
    // The same hidden in the plan's desk form, which its operator may
    // run with `--quick`: the plan as written is harmless.
    let desk = plan(
        "test = \"ping\"\ncount = 5\nquick = { count = 100000, interval_s = 0.001, sizes = [65000] }",
    )
    .replacen("[[endpoint]]", "[quick]\nmax_runs = 1\n[[endpoint]]", 1);
    refused(
        post(a.port, "/api/v1/campaigns", &desk),
        "max_duration",
        "/step/1/count",
        "quick form: step 1",
    );
    // And a desk form that does not read is named as such.
    let (status, body) = post(
        a.port,
        "/api/v1/campaigns",
        &desk.replace("count = 100000", "count = \"many\""),
    );
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("the plan's quick form"),
        "{body}"
    );
    refused(
        post(
            a.port,
            "/api/v1/tests",
            r#"{"test": "tcp", "host": "::1", "time_s": 5, "parallel": 64}"#,
        ),
        "max_streams",
        "/",
        "max_streams",
    );
    // A multipath trace counts 16 rounds of flows a hop: the 30 hops
    // that one flow may probe in 30 s are 480 s here.
    refused(
        post(
            a.port,
            "/api/v1/tests",
            r#"{"test": "trace", "host": "::1", "proto": "udp", "multipath": true}"#,
        ),
        "max_duration",
        "/max_hops",
        "max_duration",
    );
    // A method: every trial together, against max_work (60 s).
    refused(
        post(
            a.port,
            "/api/v1/tests",
            r#"{"method": "repeat", "test": {"test": "tcp", "host": "::1", "time_s": 20},
                "step": {"repeat": {"rule": "times", "runs": 5}}}"#,
        ),
        "max_work",
        "/",
        "5 trials",
    );
    assert_eq!(std::fs::read_dir(&campaigns).unwrap().count(), 0);
    // A mistake is named by its pointer.
    let (status, body) = post(
        a.port,
        "/api/v1/tests",
        r#"{"method": "ndr", "trial": {"host": "::1", "bitrate_bps": "fast"}}"#,
    );
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["at"], "/trial/bitrate_bps", "{body}");
}

#[test]
fn a_running_api_test_is_stopped_and_kept_as_interrupted() {
    let (a, _campaigns) = agent("stop");
    let (status, body) = post(
        a.port,
        "/api/v1/tests",
        r#"{"test": "ping", "host": "::1", "count": 100, "interval_s": 0.2}"#,
    );
    assert_eq!(status, 202, "{body}");
    let id = body["run_id"].as_str().unwrap().to_string();
    let running = || {
        json(&get(a.port, "/api/v1/live").1)
            .as_array()
            .is_some_and(|l| l.iter().any(|t| t["run_id"] == id.as_str()))
    };
    assert!(wait_for(10, running), "the test never showed as running");
    let path = format!("/api/v1/tests/{id}");
    let (status, body) = send(a.port, "DELETE", &path, TOKEN, "text/plain", "");
    assert_eq!(status, 202, "{body}");
    assert!(wait_for(10, || !running()), "still running after its stop");
    // Kept, as far as it went: fewer than the 100 asked.
    let kept = || {
        let (_, body) = get_as(a.port, "/api/v1/results?test=ping", TOKEN);
        json(&body).as_array().and_then(|r| r.first().cloned())
    };
    assert!(wait_for(10, || kept().is_some()), "no result kept");
    let r = kept().unwrap();
    assert_eq!(r["interrupted"], true, "{r}");
    // Gone: nothing to stop; without a token: not allowed.
    let (status, _) = send(a.port, "DELETE", &path, TOKEN, "text/plain", "");
    assert_eq!(status, 404);
    let (status, _) = send(a.port, "DELETE", &path, "", "text/plain", "");
    assert_eq!(status, 401);
}

/// A central agent whose plan aims a member outside its `mesh.targets`:
/// by a step's own host, and by a peer registered with a victim's address.
#[test]
fn a_mesh_share_aimed_outside_the_targets_never_runs() {
    let d = common::TempDir::new("gate-mesh");
    std::fs::create_dir_all(d.join("plans")).unwrap();
    let target = Target::start();
    let token = |n: &str| format!("{n}-token-0123456789abcdef");
    let tokens: Vec<String> = ["a", "victim"]
        .iter()
        .map(|n| {
            format!(
                "{{ name = \"{n}\", token = \"{}\", may = [\"ingest\", \"mesh\"] }}",
                token(n)
            )
        })
        .collect();
    std::fs::write(
        d.join("central.toml"),
        format!(
            "[http]\ninterface_interval = \"0s\"\ntokens = [{}]\n\
             [mesh]\nplans = \"{}\"\nevery = \"1s\"\n",
            tokens.join(", "),
            d.join("plans").display()
        ),
    )
    .unwrap();
    // Step "own-host" aims its HTTP load at the target by its own url;
    // the pair with "victim" aims at the address it registered.
    std::fs::write(
        d.join("plans/aim.toml"),
        format!(
            "name = \"aim\"\n[schedule]\nrepeat = \"PT2S\"\n[mesh]\ngroup = \"all-pairs\"\n\
             agents = [\"a\", \"victim\"]\n\
             [[step]]\nname = \"own-host\"\ntest = \"http\"\nurl = \"http://127.0.0.1:{}/\"\n\
             time_s = 1\n",
            target.port
        ),
    )
    .unwrap();
    let hub = ServerProc::start(&[
        "--no-reflector",
        "--http",
        "[::1]:0",
        "--archive",
        d.join("central.db").to_str().unwrap(),
        "--config",
        d.join("central.toml").to_str().unwrap(),
    ]);
    let port = http_port(&hub);
    // The victim's registration: an address the member never allowed.
    let (status, body) = send(
        port,
        "POST",
        "/api/v1/mesh/register",
        &token("victim"),
        "application/json",
        r#"{"name": "victim", "addresses": ["127.0.0.1"]}"#,
    );
    assert_eq!(status, 200, "{body}");
    let home = d.join("a");
    std::fs::create_dir_all(home.join("campaigns")).unwrap();
    std::fs::write(home.join("token"), token("a")).unwrap();
    std::fs::write(
        home.join("agent.toml"),
        format!(
            "[mesh]\nname = \"a\"\ncentral = \"http://[::1]:{port}\"\ntoken_file = \"{}\"\n\
             addresses = [\"::1\"]\ntargets = [\"::1/128\"]\nevery = \"1s\"\n",
            home.join("token").display()
        ),
    )
    .unwrap();
    let member = ServerProc::start(&[
        "--no-reflector",
        "--archive",
        home.join("agent.db").to_str().unwrap(),
        "--config",
        home.join("agent.toml").to_str().unwrap(),
        "--campaigns",
        home.join("campaigns").to_str().unwrap(),
    ]);
    assert!(
        member.wait_for_log("share refused"),
        "the member took the share: {}\n--- central:\n{}",
        member.log(),
        hub.log()
    );
    let log = member.log();
    assert!(
        log.contains("127.0.0.1") && log.contains("outside mesh.targets"),
        "{log}"
    );
    assert_eq!(
        std::fs::read_dir(home.join("campaigns")).unwrap().count(),
        0,
        "a refused share was written"
    );
    assert!(
        target.untouched_after(Duration::from_secs(3)),
        "the share's traffic reached the target"
    );
}

/// Authenticated STAMP from a remote request: the key is named, as the
/// operator's `[keys]` calls it, never by path. The agent reads it; the
/// result keeps the name, not the file; an unknown name is refused.
#[test]
fn a_remote_ping_names_its_key_and_never_its_file() {
    let d = common::TempDir::new("gate-keys");
    let key = d.join("stamp.key");
    std::fs::write(
        &key,
        "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n",
    )
    .unwrap();
    let reflector = ServerProc::start(&[
        "--reflector-port",
        "0",
        "--reflector-key-file",
        key.to_str().unwrap(),
    ]);
    let stamp_port = reflector.reflector_port();
    let b = Agent::builder("gate-keys-agent");
    let a = b.start(&format!(
        "[targets]\nping = [\"::1/128\"]\n[keys]\nlab = \"{}\"\n\
         [http]\ninterface_interval = \"0s\"\n\
         tokens = [{{ name = \"ops\", token = \"{TOKEN}\", may = [\"run_now\"] }}]\n",
        key.display()
    ));
    let ping = |key: &str| {
        format!(
            r#"{{"test": "ping", "host": "::1", "proto": "udp", "port": {stamp_port},
                "count": 3, "interval_s": 0.1, "key": "{key}"}}"#
        )
    };
    refused(
        post(a.port, "/api/v1/tests", &ping("nope")),
        "not_permitted",
        "/key",
        "[keys]",
    );
    let (status, body) = post(a.port, "/api/v1/tests", &ping("lab"));
    assert_eq!(status, 202, "{body}");
    let kept = || {
        let (_, body) = get(a.port, "/api/v1/results?test=ping");
        json(&body).as_array().and_then(|r| r.first().cloned())
    };
    assert!(wait_for(20, || kept().is_some()), "no result kept");
    let r = kept().unwrap();
    assert_eq!(
        r["summary"]["round_trip"]["received_packets"], 3,
        "the keyed reflector answered every request: {r}"
    );
    assert_eq!(r["spec"]["key"], "lab", "{r}");
    assert!(r["spec"]["key_file"].is_null(), "{r}");
    assert!(
        !r.to_string().contains("stamp.key"),
        "the path left the agent: {r}"
    );
}
