//! Central plans over real agents on loopback: three agents register with
//! a central agent, take their share of an all-pairs mesh plan, run it
//! through their own schedulers and forward the results; the central
//! agent's grid fills; an agent killed turns unknown there, not green.
//! An agent may register itself only.

use crate::common;
use common::http::{get, get_as, http_port, json, send, wait_for};
use common::{cli, ServerProc};
use std::path::Path;

fn token(name: &str) -> String {
    format!("{name}-token-0123456789abcdef")
}

fn dir(test: &str) -> common::TempDir {
    let d = common::TempDir::new(&format!("meshp-{test}"));
    std::fs::create_dir_all(d.join("plans")).unwrap();
    d
}

const PLAN: &str = r#"
name = "loop"
[schedule]
repeat = "PT2S"
[mesh]
group = "all-pairs"
agents = ["a", "b", "c"]
[[step]]
name = "rtt"
test = "ping"
count = 2
interval_s = 0.05
"#;

fn central(d: &Path) -> (ServerProc, u16) {
    let tokens: Vec<String> = ["a", "b", "c"]
        .iter()
        .map(|n| {
            format!(
                "{{ name = \"{n}\", token = \"{}\", may = [\"ingest\", \"mesh\"] }}",
                token(n)
            )
        })
        .collect();
    let config = d.join("central.toml");
    std::fs::write(
        &config,
        format!(
            "[http]\ninterface_interval = \"0s\"\ntokens = [{}]\n\
             [mesh]\nplans = \"{}\"\nunknown_after = \"10s\"\nevery = \"1s\"\n",
            tokens.join(", "),
            d.join("plans").display()
        ),
    )
    .unwrap();
    std::fs::write(d.join("plans/loop.toml"), PLAN).unwrap();
    let db = d.join("central.db").display().to_string();
    let hub = ServerProc::start(&[
        "--no-reflector",
        "--http",
        "[::1]:0",
        "--archive",
        &db,
        "--config",
        config.to_str().unwrap(),
    ]);
    let port = http_port(&hub);
    (hub, port)
}

fn member(d: &Path, name: &str, port: u16) -> ServerProc {
    let home = d.join(name);
    std::fs::create_dir_all(home.join("campaigns")).unwrap();
    let token_file = home.join("token");
    std::fs::write(&token_file, token(name)).unwrap();
    let config = home.join("agent.toml");
    std::fs::write(
        &config,
        format!(
            "[mesh]\nname = \"{name}\"\ncentral = \"http://[::1]:{port}\"\ntoken_file = \"{tf}\"\n\
             addresses = [\"::1\"]\ntargets = [\"::1/128\"]\nlocation = \"rack {name}\"\nevery = \"1s\"\n\
             [[forward]]\nname = \"central\"\nto = \"http://[::1]:{port}\"\ntoken_file = \"{tf}\"\n\
             retry_max = \"2s\"\n",
            tf = token_file.display()
        ),
    )
    .unwrap();
    ServerProc::start(&[
        "--no-reflector",
        "--archive",
        home.join("agent.db").to_str().unwrap(),
        "--config",
        config.to_str().unwrap(),
        "--campaigns",
        home.join("campaigns").to_str().unwrap(),
    ])
}

/// The grid's cells by (source, target): the forward half's status.
fn grid(port: u16) -> Vec<(String, String, String)> {
    let (status, body) = get(port, "/api/v1/mesh?metric=rtt_ms");
    assert_eq!(status, 200, "{body}");
    json(&body)["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| {
            let s = c["forward"]["status"].as_str()?;
            Some((
                c["source"].as_str().unwrap().to_string(),
                c["target"].as_str().unwrap().to_string(),
                s.to_string(),
            ))
        })
        .collect()
}

fn agent_status(port: u16, name: &str) -> String {
    let (_, body) = get_as(port, "/api/v1/mesh/agents", &token("a"));
    json(&body)["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == name)
        .map_or_else(String::new, |a| a["status"].as_str().unwrap().to_string())
}

#[test]
fn agents_take_their_share_fill_the_grid_and_a_dead_one_turns_unknown() {
    let d = dir("grid");
    let (hub, port) = central(&d);
    let a = member(&d, "a", port);
    let _b = member(&d, "b", port);
    let _c = member(&d, "c", port);

    // Each agent's share: a leads a-b and a-c, b leads b-c, c leads none.
    let share = |n: &str| {
        d.join(n)
            .join("campaigns/mesh-loop-".to_string() + n + ".toml")
    };
    assert!(
        // A peer joins a share once it has registered: a's share has
        // both of its pairs when all three have.
        wait_for(30, || {
            std::fs::read_to_string(share("a")).is_ok_and(|t| t.matches("[[step]]").count() == 2)
                && share("b").exists()
        }),
        "no shares written; central log:\n{}\nagent a:\n{}",
        hub.log(),
        a.log()
    );
    let a_plan = std::fs::read_to_string(share("a")).unwrap();
    assert_eq!(a_plan.matches("[[step]]").count(), 2, "{a_plan}");
    assert!(!share("c").exists(), "c leads no pair in all-pairs");
    let (_, body) = get_as(port, "/api/v1/mesh/share", &token("c"));
    assert_eq!(json(&body)["shares"], serde_json::json!([]), "{body}");

    // Every pair measured, forwarded, and green on the central grid.
    let expected = [("a", "b"), ("a", "c"), ("b", "c")];
    assert!(
        wait_for(60, || {
            let g = grid(port);
            expected.iter().all(|(s, t)| {
                g.iter()
                    .any(|(gs, gt, st)| gs == s && gt == t && st == "ok")
            })
        }),
        "the grid did not fill: {:?}\ncentral log:\n{}",
        grid(port),
        hub.log()
    );
    // The agents' addresses are read with a token.
    let (_, body) = get_as(port, "/api/v1/mesh/agents", &token("a"));
    let listed = json(&body);
    assert_eq!(listed["agents"].as_array().unwrap().len(), 3, "{listed}");
    assert_eq!(listed["agents"][0]["location"], "rack a");
    assert_eq!(agent_status(port, "a"), "up");

    // a killed: its agent and its cells turn unknown within
    // unknown_after (10 s) and a heartbeat; the others stay. Ten missed
    // heartbeats (1 s) are a dead agent; a live one on a loaded machine,
    // beside several servers and the database, can miss two or three.
    drop(a);
    assert!(
        wait_for(30, || agent_status(port, "a") == "unknown"),
        "a still up: {}",
        get_as(port, "/api/v1/mesh/agents", &token("a")).1
    );
    let g = grid(port);
    let from_a: Vec<&String> = g.iter().filter(|c| c.0 == "a").map(|c| &c.2).collect();
    assert_eq!(from_a.len(), 2, "{g:?}");
    assert!(from_a.iter().all(|st| *st == "unknown"), "{g:?}");
    assert!(
        g.iter()
            .any(|(s, t, st)| s == "b" && t == "c" && st == "ok"),
        "{g:?}"
    );
    assert_eq!(agent_status(port, "b"), "up");
    // The overview says so too.
    let (_, body) = get(port, "/api/v1/overview");
    let paths = json(&body)["paths"].as_array().unwrap().clone();
    let a_paths: Vec<&serde_json::Value> = paths.iter().filter(|p| p["source"] == "a").collect();
    assert!(!a_paths.is_empty(), "{body}");
    assert!(
        a_paths.iter().all(|p| p["status"] == "unknown"
            && p["why"].as_str().unwrap().contains("agent a not heard")),
        "{body}"
    );
}

#[test]
fn an_agent_registers_only_itself_and_only_with_its_token() {
    let d = dir("register");
    let (_hub, port) = central(&d);
    let me = r#"{"name": "a", "addresses": ["::1"]}"#;
    let register = |token: &str, body: &str| {
        send(
            port,
            "POST",
            "/api/v1/mesh/register",
            token,
            "application/json",
            body,
        )
    };
    assert_eq!(register("", me).0, 401);
    assert_eq!(register("not-a-token-of-ours-at-all", me).0, 403);
    let (status, body) = register(&token("b"), me);
    assert_eq!(status, 403, "{body}");
    assert!(json(&body)["error"]
        .as_str()
        .unwrap()
        .contains("may register b only"));
    let (status, body) = register(&token("a"), r#"{"name": "a", "addresses": []}"#);
    assert_eq!(status, 400, "{body}");
    let (status, body) = register(
        &token("a"),
        r#"{"name": "a", "addresses": ["::1"], "x": 1}"#,
    );
    assert_eq!(status, 400, "{body}");
    let (status, body) = register(&token("a"), me);
    assert_eq!(status, 200, "{body}");
    assert_eq!(json(&body)["agent"], "a");
    // An agent's token does what an agent does, and no more.
    let spec = r#"{"test": "ping", "host": "::1", "count": 1}"#;
    let (status, body) = send(
        port,
        "POST",
        "/api/v1/tests",
        &token("a"),
        "application/json",
        spec,
    );
    assert_eq!(status, 403, "{body}");
    assert!(
        json(&body)["error"]
            .as_str()
            .unwrap()
            .contains("may not run_now"),
        "{body}"
    );
    // A share is asked for with a token, never without.
    assert_eq!(get(port, "/api/v1/mesh/share").0, 401);
    let (status, body) = get_as(port, "/api/v1/mesh/share", &token("a"));
    assert_eq!(status, 200, "{body}");
    // b is not registered: a's share has no pair yet.
    assert_eq!(json(&body)["shares"], serde_json::json!([]), "{body}");
}

#[test]
fn an_agents_campaigns_prove_its_token_to_a_peer_that_requires_one() {
    let d = dir("client-token");
    let secret = "0123456789abcdef-mesh-a";
    let peer_config = d.join("peer.toml");
    std::fs::write(
        &peer_config,
        format!(
            "[auth]\nrequired = true\n[[auth.tokens]]\nname = \"mesh-a\"\nsecret = \"{secret}\"\n"
        ),
    )
    .unwrap();
    let peer = ServerProc::start(&["--no-reflector", "--config", peer_config.to_str().unwrap()]);
    let plan = format!(
        "name = \"to-peer\"\n[schedule]\nrepeat = \"PT2S\"\nmax_runs = 1\n\
         [[endpoint]]\nname = \"A\"\naddress = \"::1\"\n[[endpoint]]\nname = \"B\"\naddress = \"::1\"\n\
         [[step]]\nname = \"tcp\"\ntest = \"tcp\"\ntime_s = 1\nport = {}\n",
        peer.port
    );
    let agent = |name: &str, token: bool| {
        let home = d.join(name);
        std::fs::create_dir_all(home.join("campaigns")).unwrap();
        std::fs::write(home.join("campaigns/to-peer.toml"), &plan).unwrap();
        let token_file = home.join("mesh.token");
        std::fs::write(&token_file, format!("mesh-a:{secret}\n")).unwrap();
        let config = home.join("agent.toml");
        let client = if token {
            format!("[client]\ntoken_file = \"{}\"\n", token_file.display())
        } else {
            String::new()
        };
        std::fs::write(&config, client).unwrap();
        let db = home.join("agent.db");
        let p = ServerProc::start(&[
            "--no-reflector",
            "--archive",
            db.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
            "--campaigns",
            home.join("campaigns").to_str().unwrap(),
        ]);
        (p, db)
    };
    let (_with, with_db) = agent("with", true);
    let (_without, without_db) = agent("without", false);
    let runs = |db: &Path| cli::status(db)["campaigns"][0]["runs"].clone();
    assert!(
        wait_for(60, || runs(&with_db)["done"] == 1
            && runs(&without_db)["failed"] == 1),
        "runs: with {} / without {}\npeer log:\n{}",
        runs(&with_db),
        runs(&without_db),
        peer.log()
    );
    assert_eq!(cli::status(&with_db)["results"], 1);
    let without = cli::status(&without_db);
    assert_eq!(without["results"], 0, "{without}");
    assert!(
        without.to_string().contains("requires a token"),
        "the refusal is not named: {without}"
    );
}
