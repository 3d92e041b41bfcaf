//! Store-and-forward between real agents: an agent runs a campaign (a
//! ping and a trace each run) and forwards every result to a central agent's API over TLS (the central
//! keeping them in the real PostgreSQL) and straight into a second
//! PostgreSQL archive. The central agent is stopped for a while and
//! started again; the agent itself is killed and started again. In the
//! end both destinations hold exactly the agent's results, each once.

use crate::common;
use common::http::{http_port, json, send, wait_for};
use common::{cli, sonde, ServerProc};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const PG: &str = "postgres://root@127.0.0.1:5432/test";
const AGENT_TOKEN: &str = "agent-a-0123456789abcdef";

fn dir(test: &str) -> common::TempDir {
    let d = common::TempDir::new(&format!("mesh-{test}"));
    std::fs::create_dir_all(d.join("campaigns")).unwrap();
    d
}

/// A PostgreSQL schema for one archive, empty.
fn schema(name: &str) -> (String, postgres::Client) {
    let schema = format!("sonde_mesh_{}_{name}", std::process::id());
    let mut admin = postgres::Client::connect(PG, postgres::NoTls).expect("PostgreSQL");
    admin
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .unwrap();
    (schema, admin)
}

fn ids_in(admin: &mut postgres::Client, schema: &str) -> BTreeSet<String> {
    admin
        .query(&format!("SELECT id FROM {schema}.results"), &[])
        .map(|rows| rows.iter().map(|r| r.get::<_, String>(0)).collect())
        .unwrap_or_default()
}

/// `sonde status --json` of the agent's archive: forwarding by name.
fn forwarding(db: &Path) -> serde_json::Value {
    let mut by_name = serde_json::Map::new();
    for f in cli::status(db)["forwarding"].as_array().unwrap() {
        by_name.insert(f["destination"].as_str().unwrap().to_string(), f.clone());
    }
    serde_json::Value::Object(by_name)
}

/// A free TCP port on ::1 (the central agent comes back on the same one).
fn free_port() -> u16 {
    std::net::TcpListener::bind("[::1]:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A self-signed certificate for ::1, its key, in `dir`.
fn certificate(dir: &Path) -> (PathBuf, PathBuf) {
    let names = ["localhost", "::1"].map(String::from).to_vec();
    let key = rcgen::generate_simple_self_signed(names).unwrap();
    let (cert, private) = (dir.join("central.crt"), dir.join("central.key"));
    std::fs::write(&cert, key.cert.pem()).unwrap();
    std::fs::write(&private, key.signing_key.serialize_pem()).unwrap();
    (cert, private)
}

fn central(config: &Path, port: u16, archive: &str) -> ServerProc {
    ServerProc::start(&[
        "--no-reflector",
        "--http",
        &format!("[::1]:{port}"),
        "--archive",
        archive,
        "--config",
        config.to_str().unwrap(),
    ])
}

fn agent(config: &Path, db: &Path, campaigns: Option<&Path>) -> ServerProc {
    let mut args = vec![
        "--no-reflector".to_string(),
        "--archive".into(),
        db.display().to_string(),
        "--config".into(),
        config.display().to_string(),
    ];
    if let Some(c) = campaigns {
        args.push("--campaigns".into());
        args.push(c.display().to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ServerProc::start(&args)
}

#[test]
fn every_result_reaches_both_destinations_once_through_an_outage_and_a_kill() {
    let d = dir("outage");
    let (cert, key) = certificate(&d);
    let (central_schema, mut admin) = schema("central");
    let (direct_schema, _) = schema("direct");
    let central_archive = format!("{PG}?sslmode=disable&schema={central_schema}");
    let central_config = d.join("central.toml");
    std::fs::write(
        &central_config,
        format!(
            "[http]\ntls_cert = \"{}\"\ntls_key = \"{}\"\ninterface_interval = \"0s\"\n\
             tokens = [{{ name = \"agent-a\", token = \"{AGENT_TOKEN}\", may = [\"ingest\", \"mesh\"] }}]\n",
            cert.display(),
            key.display()
        ),
    )
    .unwrap();
    let port = free_port();
    let token_file = d.join("token");
    std::fs::write(&token_file, format!("{AGENT_TOKEN}\n")).unwrap();
    let agent_config = d.join("agent.toml");
    std::fs::write(
        &agent_config,
        format!(
            "[[forward]]\nname = \"central\"\nto = \"https://[::1]:{port}\"\ntoken_file = \"{}\"\n\
             ca_file = \"{}\"\nretry_max = \"2s\"\n\
             [[forward]]\nname = \"direct\"\nto = \"{PG}?sslmode=disable&schema={direct_schema}\"\nretry_max = \"2s\"\n",
            token_file.display(),
            cert.display()
        ),
    )
    .unwrap();
    std::fs::write(
        d.join("campaigns/mesh.toml"),
        "name = \"mesh\"\n[schedule]\nrepeat = \"PT1S\"\n\
         [[endpoint]]\nname = \"A\"\naddress = \"::1\"\n[[endpoint]]\nname = \"B\"\naddress = \"::1\"\n\
         [[step]]\nname = \"ping A to B\"\ntest = \"ping\"\ncount = 2\ninterval_s = 0.05\n\
         [[step]]\nname = \"path A to B\"\ntest = \"trace\"\nqueries = 1\n",
    )
    .unwrap();
    let db = d.join("agent.db");

    let hub = central(&central_config, port, &central_archive);
    let mut a = agent(&agent_config, &db, Some(&d.join("campaigns")));
    assert!(
        wait_for(60, || ids_in(&mut admin, &central_schema).len() >= 2),
        "nothing reached the central agent; agent log:\n{}\ncentral log:\n{}",
        a.log(),
        hub.log()
    );

    // The central agent goes away: the backlog grows, the error shows.
    drop(hub);
    let before = ids_in(&mut admin, &central_schema).len();
    assert!(
        wait_for(60, || {
            let f = forwarding(&db);
            f["central"]["backlog"].as_i64().unwrap_or(0) >= 3
                && f["central"]["last_error"].is_string()
        }),
        "no backlog while the central agent was away: {}",
        forwarding(&db)
    );
    let away = forwarding(&db);
    assert!(away["central"]["oldest_id"].is_string(), "{away}");
    assert!(away["central"]["attempts"].as_i64().unwrap() >= 1, "{away}");
    // The direct destination is not held up by the other one.
    assert!(
        away["direct"]["backlog"].as_i64().unwrap() <= 5,
        "the direct destination waited too: {away}"
    );

    // Back on the same port: the backlog drains.
    let hub = central(&central_config, port, &central_archive);
    assert!(
        wait_for(60, || ids_in(&mut admin, &central_schema).len()
            > before + 2),
        "the backlog did not drain: {}",
        forwarding(&db)
    );

    // The agent killed mid-campaign, then started again without its
    // campaigns: what it kept before dying is still delivered.
    assert!(a.is_running());
    drop(a);
    let kept = cli::result_ids(&db);
    let a = agent(&agent_config, &db, None);
    assert!(
        wait_for(60, || {
            let f = forwarding(&db);
            f["central"]["backlog"] == 0 && f["direct"]["backlog"] == 0
        }),
        "backlog left after the restart: {}\n{}",
        forwarding(&db),
        a.log()
    );
    let central_ids = ids_in(&mut admin, &central_schema);
    assert_eq!(
        central_ids, kept,
        "the central archive is not the agent's results"
    );
    assert_eq!(ids_in(&mut admin, &direct_schema), kept);
    let done = forwarding(&db);
    assert_eq!(
        done["central"]["delivered"].as_u64().unwrap(),
        kept.len() as u64,
        "each result delivered once: {done}"
    );
    // Each result is labelled with the agent that forwarded it.
    let labelled: i64 = admin
        .query_one(
            &format!(
                "SELECT COUNT(*) FROM {central_schema}.result_labels \
                 WHERE key = 'agent' AND value = 'agent-a'"
            ),
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(labelled, kept.len() as i64);
    // The campaign's traces came over too, with their hops: one per run,
    // loopback's one hop.
    let traces: Vec<(i64, i64)> = admin
        .query(
            &format!(
                "SELECT (SELECT COUNT(*) FROM {central_schema}.results WHERE test = 'trace'), \
                        (SELECT COUNT(*) FROM {central_schema}.results WHERE test = 'ping')"
            ),
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let (traces, pings) = traces[0];
    assert!(
        traces >= 1 && (traces - pings).abs() <= 1,
        "{traces} traces, {pings} pings"
    );
    let doc: String = admin
        .query_one(
            &format!("SELECT doc FROM {central_schema}.results WHERE test = 'trace' LIMIT 1"),
            &[],
        )
        .unwrap()
        .get(0);
    let doc: serde_json::Value = serde_json::from_str(&doc).unwrap();
    assert_eq!(doc["trace"]["hops"][0]["probes"][0]["from"], "::1", "{doc}");
    drop(hub);
    for s in [&central_schema, &direct_schema] {
        let _ = admin.batch_execute(&format!("DROP SCHEMA IF EXISTS {s} CASCADE"));
    }
}

#[test]
fn the_central_agent_refuses_what_it_cannot_keep_by_name() {
    let d = dir("refuse");
    let (schema, mut admin) = schema("refuse");
    let config = d.join("central.toml");
    std::fs::write(
        &config,
        format!(
            "[http]\ninterface_interval = \"0s\"\nmax_ingest_bytes = 20000\n\
             tokens = [{{ name = \"agent-a\", token = \"{AGENT_TOKEN}\", may = [\"ingest\", \"mesh\"] }}]\n"
        ),
    )
    .unwrap();
    let hub = ServerProc::start(&[
        "--no-reflector",
        "--http",
        "[::1]:0",
        "--archive",
        &format!("{PG}?sslmode=disable&schema={schema}"),
        "--config",
        config.to_str().unwrap(),
    ]);
    let port = http_port(&hub);
    let ingest = |token: &str, body: &str| {
        send(
            port,
            "POST",
            "/api/v1/ingest",
            token,
            "application/json",
            body,
        )
    };
    assert_eq!(ingest("", r#"{"items": []}"#).0, 401);
    assert_eq!(
        ingest("agent-b-0123456789abcdef", r#"{"items": []}"#).0,
        403
    );
    let (status, body) = ingest(AGENT_TOKEN, r#"{"items": [{"kind": "parcel"}]}"#);
    assert_eq!(status, 400, "{body}");
    assert!(
        json(&body)["error"].as_str().unwrap().contains("parcel"),
        "{body}"
    );
    let big = format!(r#"{{"items": [], "pad": "{}"}}"#, "x".repeat(30_000));
    assert_eq!(ingest(AGENT_TOKEN, &big).0, 413);
    let (status, body) = ingest(AGENT_TOKEN, r#"{"items": []}"#);
    assert_eq!(status, 200, "{body}");
    assert_eq!(json(&body), serde_json::json!({"received": 0, "new": 0}));
    // A result the agent made, sent twice: kept once.
    let out = sonde()
        .args(["ping", "::1", "-c", "2", "-i", "50ms", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result = json(&String::from_utf8_lossy(&out.stdout));
    let batch = serde_json::json!({"items": [{"kind": "result", "result": result}]}).to_string();
    let (status, body) = ingest(AGENT_TOKEN, &batch);
    assert_eq!(
        (status, json(&body)["new"].clone()),
        (200, 1.into()),
        "{body}"
    );
    let (status, body) = ingest(AGENT_TOKEN, &batch);
    assert_eq!(
        (status, json(&body)["new"].clone()),
        (200, 0.into()),
        "{body}"
    );
    assert_eq!(ids_in(&mut admin, &schema).len(), 1);
    // An agent cannot pass a result off as another agent's.
    let mut other = result.clone();
    other["id"] = "00000000-0000-4000-8000-00000000000a".into();
    let posing = serde_json::json!({"items": [{"kind": "result", "result": other,
        "placement": {"labels": {"agent": "agent-z"}}}]})
    .to_string();
    assert_eq!(ingest(AGENT_TOKEN, &posing).0, 200);
    let label: String = admin
        .query_one(
            &format!(
                "SELECT value FROM {schema}.result_labels WHERE key = 'agent' \
                 AND result_id = '00000000-0000-4000-8000-00000000000a'"
            ),
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(label, "agent-a");
    // A method that does not read is refused whole.
    let method = serde_json::json!({"items": [
        {"kind": "result", "result": result},
        {"kind": "method", "method": {"bogus": true}}
    ]})
    .to_string();
    let (status, body) = ingest(AGENT_TOKEN, &method);
    assert_eq!(status, 400, "{body}");
    drop(hub);
    let _ = admin.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
}
