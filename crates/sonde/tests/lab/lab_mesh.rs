//! The mesh in the lab (docs/mesh.md): a central agent and four agents,
//! each in its own network namespace behind one router. The central agent
//! keeps its archive in the real PostgreSQL, which it reaches through
//! PostgreSQL's Unix socket (network namespaces do not separate sockets
//! in the file system); the agents reach the central agent's API over the
//! lab's routed links. A mesh plan (all pairs, each side leading its own
//! direction, every 10 s) runs until the grid is full, the central agent
//! has been stopped for 20 s (two rounds of the plan) and started again,
//! and one agent has been killed and come back; then it is withdrawn. In
//! the end the central archive holds every agent's results, each
//! delivered once; the killed agent's cells turned unknown while it was
//! away; a wrong token was refused and logged. Needs root.

use crate::common;
use common::http::wait_for;
use common::lab_cli::{lab_up, KillOnDrop};
use common::{cli, lab_allowed, sonde};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

const LAB: &str = "mesh";
const AGENTS: [&str; 4] = ["a", "b", "c", "d"];
const HUB: &str = "2001:2:0:1::1";
const PORT: u16 = 8443;
/// PostgreSQL through its Unix socket (the central agent is in a namespace).
const PG_SOCKET: &str = "postgres://root@%2Fvar%2Frun%2Fpostgresql/test";
const PG: &str = "postgres://root@127.0.0.1:5432/test";

const TOPOLOGY: &str = r#"
[[node]]
name = "hub"
[[node]]
name = "r"
kind = "router"
[[node]]
name = "a"
[[node]]
name = "b"
[[node]]
name = "c"
[[node]]
name = "d"
[[link]]
a = "hub"
b = "r"
[[link]]
a = "a"
b = "r"
[[link]]
a = "b"
b = "r"
[[link]]
a = "c"
b = "r"
[[link]]
a = "d"
b = "r"
"#;

const PLAN: &str = r#"
name = "lab"
[schedule]
repeat = "PT10S"
[mesh]
group = "all-pairs"
lead = "both"
[[step]]
name = "rtt"
test = "ping"
count = 3
interval_s = 0.1
[[step]]
name = "udp"
test = "udp"
bitrate_bps = "1M"
time_s = 1
"#;

/// Agent `name`'s address: its end of link 2, 3, 4 or 5.
fn address(name: &str) -> String {
    let n = AGENTS.iter().position(|a| *a == name).unwrap() + 2;
    format!("2001:2:0:{n}::1")
}

fn token(name: &str) -> String {
    format!("{name}-lab-token-0123456789abcdef")
}

/// `sonde serve ARGS` in node `node`, its log in `log`. Started by `ip
/// netns exec`, which becomes the server (`sonde lab exec` waits for its
/// command as a child): killing the process kills the server.
fn serve(node: &str, log: &Path, args: &[String]) -> KillOnDrop {
    let file = std::fs::File::create(log).unwrap();
    KillOnDrop(
        sonde_lab::lab::node(LAB, node)
            .expect("the lab's node")
            .command(env!("CARGO_BIN_EXE_sonde"))
            .env_remove("SONDE_SERVE_CONFIG")
            .arg("serve")
            .args(args)
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .unwrap(),
    )
}

struct Mesh {
    dir: PathBuf,
    schema: String,
}

impl Mesh {
    fn central(&self) -> KillOnDrop {
        let tokens: Vec<String> = AGENTS
            .iter()
            .map(|n| {
                format!(
                    "{{ name = \"{n}\", token = \"{}\", may = [\"ingest\", \"mesh\"] }}",
                    token(n)
                )
            })
            .collect();
        let config = self.dir.join("central.toml");
        std::fs::write(
            &config,
            format!(
                "[http]\ninterface_interval = \"0s\"\ntokens = [{}]\n\
                 [mesh]\nplans = \"{}\"\nunknown_after = \"15s\"\nevery = \"2s\"\n",
                tokens.join(", "),
                self.dir.join("plans").display()
            ),
        )
        .unwrap();
        let args = [
            "--bind",
            HUB,
            "-p",
            "5201",
            "--no-reflector",
            "--http",
            &format!("[{HUB}]:{PORT}"),
            "--archive",
            &format!("{PG_SOCKET}?schema={}", self.schema),
            "--config",
            config.to_str().unwrap(),
        ]
        .map(String::from);
        let log = self.dir.join("central.log");
        let p = serve("hub", &log, &args);
        assert!(
            wait_for(20, || read(&log).contains("HTTP API")),
            "the central agent did not start: {}",
            read(&log)
        );
        p
    }

    fn agent(&self, name: &str) -> KillOnDrop {
        let home = self.dir.join(name);
        std::fs::create_dir_all(home.join("campaigns")).unwrap();
        let token_file = home.join("token");
        std::fs::write(&token_file, token(name)).unwrap();
        let config = home.join("agent.toml");
        let central = format!("http://[{HUB}]:{PORT}");
        std::fs::write(
            &config,
            format!(
                "[mesh]\nname = \"{name}\"\ncentral = \"{central}\"\ntoken_file = \"{tf}\"\n\
                 addresses = [\"{addr}\"]\ntargets = [\"2001:2::/32\"]\nlocation = \"lab node {name}\"\nevery = \"2s\"\n\
                 [[forward]]\nname = \"central\"\nto = \"{central}\"\ntoken_file = \"{tf}\"\n\
                 retry_max = \"5s\"\n",
                tf = token_file.display(),
                addr = address(name)
            ),
        )
        .unwrap();
        let args = [
            "--bind",
            &address(name),
            "-p",
            "5201",
            "--no-reflector",
            "--archive",
            home.join("agent.db").to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
            "--campaigns",
            home.join("campaigns").to_str().unwrap(),
        ]
        .map(String::from);
        serve(name, &home.join("agent.log"), &args)
    }

    /// A GET of the central agent's API, from node a.
    /// A read of the central agent's API from node a, with a's token
    /// (the mesh agents' addresses are not read without one).
    fn api(&self, path: &str) -> serde_json::Value {
        let out = sonde()
            .args([
                "lab", "exec", "--lab", LAB, "a", "--", "curl", "-s", "-m", "5", "-H",
            ])
            .arg(format!("Authorization: Bearer {}", token("a")))
            .arg(format!("http://[{HUB}]:{PORT}{path}"))
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null)
    }

    fn central_ids(&self, admin: &mut postgres::Client) -> BTreeSet<String> {
        admin
            .query(&format!("SELECT id FROM {}.results", self.schema), &[])
            .map(|rows| rows.iter().map(|r| r.get::<_, String>(0)).collect())
            .unwrap_or_default()
    }

    /// Agent `name`'s archive.
    fn db(&self, name: &str) -> PathBuf {
        self.dir.join(name).join("agent.db")
    }

    /// Agent `name`'s forwarding to the central agent (`sonde status`).
    fn forwarding(&self, name: &str) -> serde_json::Value {
        cli::forwarding(&self.db(name), "central")
    }
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

/// The ping grid's halves: (source, target, forward?, status, why).
fn halves(grid: &serde_json::Value) -> Vec<(String, String, bool, String, String)> {
    let mut out = Vec::new();
    for c in grid["cells"].as_array().into_iter().flatten() {
        for (half, forward) in [("forward", true), ("reverse", false)] {
            if let Some(s) = c[half]["status"].as_str() {
                out.push((
                    c["source"].as_str().unwrap_or("").to_string(),
                    c["target"].as_str().unwrap_or("").to_string(),
                    forward,
                    s.to_string(),
                    c[half]["why"].as_str().unwrap_or("").to_string(),
                ));
            }
        }
    }
    out
}

#[test]
fn a_mesh_of_four_agents_delivers_every_result_through_an_outage_and_a_death() {
    if !lab_allowed() {
        return;
    }
    // Light traffic (pings and 1 Mbit/s of UDP every 10 s, the agents'
    // API calls): runs beside the measuring tests (see
    // common::lab_cli::serial).
    let start = Instant::now();
    let _lab = lab_up(LAB, TOPOLOGY);
    let dir = common::TempDir::new("lab-mesh");
    std::fs::create_dir_all(dir.join("plans")).unwrap();
    std::fs::write(dir.join("plans/lab.toml"), PLAN).unwrap();
    let mesh = Mesh {
        dir: dir.to_path_buf(),
        schema: format!("sonde_labmesh_{}", std::process::id()),
    };
    let mut admin = postgres::Client::connect(PG, postgres::NoTls).expect("PostgreSQL");
    admin
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", mesh.schema))
        .unwrap();

    let hub = mesh.central();
    let mut agents: Vec<(&str, KillOnDrop)> = AGENTS.iter().map(|n| (*n, mesh.agent(n))).collect();

    // Every ordered pair measured and forwarded: 12 ping halves green.
    assert!(
        wait_for(90, || {
            let g = mesh.api("/api/v1/mesh?test=ping&metric=rtt_ms");
            halves(&g).iter().filter(|h| h.3 == "ok").count() == 12
        }),
        "the grid did not fill: {}\ncentral log:\n{}\nagent a log:\n{}",
        mesh.api("/api/v1/mesh?test=ping&metric=rtt_ms"),
        read(&dir.join("central.log")),
        read(&dir.join("a/agent.log"))
    );
    eprintln!("grid full after {:?}", start.elapsed());

    // A wrong token is refused, and the central agent logs it.
    let out = sonde()
        .args([
            "lab", "exec", "--lab", LAB, "b", "--", "curl", "-s", "-m", "5",
        ])
        .args(["-o", "/dev/null", "-w", "%{http_code}", "-X", "POST"])
        .args(["-H", "Authorization: Bearer b-not-the-token-0123456789"])
        .args(["-H", "Content-Type: application/json"])
        .args(["-d", r#"{"name": "b", "addresses": ["2001:2:0:3::1"]}"#])
        .arg(format!("http://[{HUB}]:{PORT}/api/v1/mesh/register"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "403");
    assert!(read(&dir.join("central.log")).contains("wrong token"));

    // The central agent away for 20 s: every agent's backlog grows.
    drop(hub);
    let before = mesh.central_ids(&mut admin).len();
    let away = Instant::now();
    assert!(
        wait_for(60, || AGENTS.iter().all(|n| {
            let f = mesh.forwarding(n);
            f["backlog"].as_i64().unwrap_or(0) > 0 && f["last_error"].is_string()
        })),
        "no backlog and error while the central agent was away: {:?}",
        AGENTS.map(|n| mesh.forwarding(n))
    );
    std::thread::sleep(Duration::from_secs(20).saturating_sub(away.elapsed()));
    let waiting: i64 = AGENTS
        .iter()
        .map(|n| mesh.forwarding(n)["backlog"].as_i64().unwrap_or(0))
        .sum();
    eprintln!("after 20 s away: {waiting} results waiting, {before} delivered before");
    let hub = mesh.central();
    let back = Instant::now();
    assert!(
        wait_for(60, || AGENTS
            .iter()
            .all(|n| mesh.forwarding(n)["backlog"].as_i64() == Some(0))),
        "the backlog did not drain"
    );
    eprintln!(
        "backlog drained {:?} after the central agent came back",
        back.elapsed()
    );

    // Agent d killed: the halves it leads turn unknown within
    // unknown_after (15 s) and a heartbeat (2 s).
    let killed = Instant::now();
    agents.retain(|(n, _)| *n != "d");
    let d_unknown = |g: &serde_json::Value| {
        halves(g)
            .iter()
            .filter(|h| h.3 == "unknown" && h.4.contains("agent d not heard"))
            .count()
    };
    assert!(
        wait_for(30, || d_unknown(
            &mesh.api("/api/v1/mesh?test=ping&metric=rtt_ms")
        ) == 3),
        "d's cells did not turn unknown: {}",
        mesh.api("/api/v1/mesh?test=ping&metric=rtt_ms")
    );
    let took = killed.elapsed();
    eprintln!("d's cells unknown {took:?} after it was killed");
    assert!(mesh.api("/api/v1/mesh/agents")["agents"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a["name"] == "d" && a["status"] == "unknown"));
    // d comes back, takes its share again, and delivers what it kept
    // before it died and what it measures now.
    agents.push(("d", mesh.agent("d")));
    let d_back = mesh.forwarding("d")["delivered"].as_u64().unwrap_or(0);
    assert!(
        wait_for(60, || mesh.forwarding("d")["delivered"]
            .as_u64()
            .unwrap_or(0)
            > d_back),
        "d delivered nothing after it came back: {}",
        mesh.forwarding("d")
    );

    // Then the plan is withdrawn.
    std::fs::remove_file(dir.join("plans/lab.toml")).unwrap();
    assert!(
        wait_for(60, || AGENTS.iter().all(|n| !dir
            .join(n)
            .join(format!("campaigns/mesh-lab-{n}.toml"))
            .exists())),
        "shares not withdrawn"
    );
    // Runs in progress end, their results drain.
    let mut last = 0;
    assert!(
        wait_for(60, || {
            let n = mesh.central_ids(&mut admin).len();
            let settled = n == last
                && AGENTS
                    .iter()
                    .all(|a| mesh.forwarding(a)["backlog"].as_i64() == Some(0));
            last = n;
            if !settled {
                std::thread::sleep(Duration::from_secs(3));
            }
            settled
        }),
        "the mesh did not settle"
    );
    drop(agents);
    drop(hub);

    let mut kept = BTreeSet::new();
    let mut delivered = 0;
    for n in AGENTS {
        let ids = cli::result_ids(&mesh.db(n));
        eprintln!("{n}: {} results", ids.len());
        assert!(!ids.is_empty(), "{n} kept nothing");
        kept.extend(ids);
        delivered += mesh.forwarding(n)["delivered"].as_u64().unwrap();
    }
    let central = mesh.central_ids(&mut admin);
    eprintln!(
        "central: {} results; delivered {delivered}; the test took {:?}",
        central.len(),
        start.elapsed()
    );
    assert_eq!(
        central, kept,
        "the central archive is not the agents' results"
    );
    assert_eq!(delivered, kept.len() as u64, "each result delivered once");
    let _ = admin.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", mesh.schema));
}
