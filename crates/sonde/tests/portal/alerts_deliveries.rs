//! Alerts evaluated as results arrive at a central agent (its archive in
//! the real PostgreSQL): ping results whose loss is known are forwarded
//! to it one by one through `POST /api/v1/ingest`; a threshold rule with
//! hysteresis raises once and clears once, and each notice reaches a real
//! webhook receiver as JSON, a real SMTP server (aiosmtpd) as mail with
//! its template filled, and the log; the raise opens an incident owned by
//! the constituency of the target's prefix, and the clear comments on it.
//! `GET /api/v1/alerts` and `/metrics` show it. The agent is then
//! restarted: the alert goes on from the state the archive kept, not from
//! scratch.

use crate::common;
use common::http::{get, get_as, http_agent, json, parse_metrics, send, wait_for};
use common::smtp::SmtpSink;
use common::webhook::WebhookSink;
use common::{sonde, ServerProc};
use serde_json::Value;
use std::path::PathBuf;

const PG: &str = "postgres://root@127.0.0.1:5432/test";
const TOKEN: &str = "agent-a-0123456789abcdef";
const HOOK_TOKEN: &str = "hook-secret-42";
const OPS_TOKEN: &str = "ops-0123456789abcdef";

fn dir(test: &str) -> common::TempDir {
    let d = common::TempDir::new(&format!("alerts-{test}"));
    d
}

/// A real ping result, to be given known losses.
fn ping_result() -> Value {
    let out = sonde()
        .args(["ping", "::1", "-c", "2", "-i", "50ms", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The result `template` with id number `n`, started `n` seconds after
/// it, with `loss_pct` of 100 packets lost.
fn with_loss(template: &Value, n: u32, loss_pct: u32) -> Value {
    let mut r = template.clone();
    r["id"] = format!("00000000-0000-4000-8000-{n:012}").into();
    let start = humantime::parse_rfc3339(r["start"].as_str().unwrap()).unwrap()
        + std::time::Duration::from_secs(u64::from(n));
    r["start"] = humantime::format_rfc3339_micros(start).to_string().into();
    let rt = &mut r["summary"]["round_trip"];
    rt["sent_packets"] = 100.into();
    rt["received_packets"] = (100 - loss_pct).into();
    rt["lost_packets"] = loss_pct.into();
    rt["loss_pct"] = f64::from(loss_pct).into();
    r
}

fn config(d: &std::path::Path, hook_port: u16, smtp: &str) -> PathBuf {
    let token_file = d.join("hook.token");
    std::fs::write(&token_file, format!("{HOOK_TOKEN}\n")).unwrap();
    let path = d.join("central.toml");
    std::fs::write(
        &path,
        format!(
            "[http]\nread_public = true\ninterface_interval = \"0s\"\n\
             tokens = [{{ name = \"agent-a\", token = \"{TOKEN}\", may = [\"ingest\"] }},\n\
             {{ name = \"ops\", token = \"{OPS_TOKEN}\", may = [\"incidents\"] }}]\n\
             [smtp]\nserver = \"{smtp}\"\nfrom = \"sonde <sonde@central.example>\"\n\
             [[alert]]\nname = \"lossy\"\nmetric = \"loss_pct\"\ntest = \"ping\"\n\
             above = 1.0\nfor = 2\nclear = 0.5\nclear_for = 2\n\
             notify = [\"log\", \"webhook\", \"email\", \"incident\"]\n\
             webhook = \"http://[::1]:{hook_port}/hooks/sonde?from=test\"\n\
             webhook_token_file = \"{}\"\n\
             email = [\"noc@central.example\"]\n\
             subject = \"[{{EDGE}}] {{alert}}: {{metric}} = {{value}} on {{target}}\"\n\
             incident = \"sla-breach\"\nseverity = \"high\"\n",
            token_file.display()
        ),
    )
    .unwrap();
    path
}

fn central(config: &std::path::Path, archive: &str) -> (ServerProc, u16) {
    http_agent(archive, config, &[])
}

fn forward(port: u16, result: &Value) {
    let batch = serde_json::json!({"items": [{"kind": "result", "result": result}]});
    let (status, body) = send(
        port,
        "POST",
        "/api/v1/ingest",
        TOKEN,
        "application/json",
        &batch.to_string(),
    );
    assert_eq!(status, 200, "{body}");
}

fn alerts(port: u16) -> Value {
    let (status, body) = get(port, "/api/v1/alerts");
    assert_eq!(status, 200, "{body}");
    json(&body)
}

#[test]
fn a_lossy_path_raises_one_alert_and_clears_it_and_each_notice_is_delivered() {
    let d = dir("deliveries");
    let hook = WebhookSink::start();
    let schema = format!("sonde_alerts_{}", std::process::id());
    let mut admin = postgres::Client::connect(PG, postgres::NoTls).expect("PostgreSQL");
    admin
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .unwrap();
    let archive = format!("{PG}?sslmode=disable&schema={schema}");
    let smtp = SmtpSink::start(&d);
    let config = config(&d, hook.port, &smtp.server());
    let (server, port) = central(&config, &archive);
    // ::1 belongs to the loopback's constituency, whose NOC gets mail.
    let (status, body) = send(
        port,
        "POST",
        "/api/v1/constituencies",
        OPS_TOKEN,
        "application/json",
        r#"{"code": "lo", "name": "Loopback", "networks": ["::1/128"],
            "contacts": [{"name": "LO NOC", "email": "noc@lo.example", "role": "noc"}]}"#,
    );
    assert_eq!(status, 201, "{body}");
    let template = ping_result();
    // Loss: clean, then 5 % three times (raised at the second), then
    // clean three times (cleared at the second).
    let losses = [0, 5, 5, 5, 0, 0, 0];
    for (i, loss) in losses.iter().enumerate() {
        forward(port, &with_loss(&template, i as u32, *loss));
    }
    let got = hook.wait_for(2, 30);
    assert_eq!(got.len(), 2, "{}", server.log());
    let raised: Value = serde_json::from_str(&got[0].body).unwrap();
    let cleared: Value = serde_json::from_str(&got[1].body).unwrap();
    assert_eq!(got[0].request_line, "POST /hooks/sonde?from=test HTTP/1.1");
    assert_eq!(
        got[0].authorization.as_deref(),
        Some(format!("Bearer {HOOK_TOKEN}").as_str())
    );
    assert_eq!(raised["alert"], "lossy");
    assert_eq!(raised["edge"], "raised");
    assert_eq!(raised["metric"], "loss_pct");
    assert_eq!(raised["value"], 5.0);
    assert_eq!(raised["path"]["test"], "ping");
    assert_eq!(raised["path"]["target"], "::1");
    assert_eq!(raised["result_id"], "00000000-0000-4000-8000-000000000002");
    assert_eq!(cleared["edge"], "cleared");
    assert_eq!(cleared["value"], 0.0);
    assert_eq!(cleared["result_id"], "00000000-0000-4000-8000-000000000005");
    // The raise opened an incident, owned by ::1's constituency; both
    // notices name it, and the clear commented on it.
    let incident = raised["incident_id"].as_i64().expect("an incident opened");
    assert_eq!(cleared["incident_id"], incident);
    // Incidents are personal data: read with a token.
    let (status, body) = get_as(port, &format!("/api/v1/incidents/{incident}"), OPS_TOKEN);
    assert_eq!(status, 200, "{body}");
    let i = json(&body);
    assert_eq!(i["type"], "sla-breach", "{i}");
    assert_eq!(i["severity"], "high");
    assert_eq!(i["source"], "alert:lossy");
    assert_eq!(i["addresses"][0]["address"], "::1", "{i}");
    assert_eq!(i["addresses"][0]["owner"], "lo", "{i}");
    assert!(
        wait_for(10, || {
            let i = json(&get_as(port, &format!("/api/v1/incidents/{incident}"), OPS_TOKEN).1);
            i["comments"].as_array().is_some_and(|c| {
                c.iter()
                    .any(|c| c["text"].as_str().unwrap_or("").contains("cleared"))
            })
        }),
        "{i}"
    );
    // Two mails, their subjects filled from the notices.
    assert!(
        wait_for(20, || smtp.received().len() >= 2),
        "{}",
        server.log()
    );
    let mails = smtp.received();
    assert_eq!(mails.len(), 2);
    assert_eq!(
        mails[0].header("subject"),
        Some("[RAISED] lossy: loss_pct = 5 on ::1")
    );
    assert_eq!(
        mails[1].header("subject"),
        Some("[CLEARED] lossy: loss_pct = 0 on ::1")
    );
    assert_eq!(mails[0].header("to"), Some("noc@central.example"));
    assert!(
        mails[0].body.contains(&format!("Incident:  {incident}")),
        "{}",
        mails[0].body
    );
    assert!(server.wait_for_log("alert raised"), "{}", server.log());
    assert!(server.wait_for_log("alert cleared"), "{}", server.log());

    let a = alerts(port);
    assert_eq!(a["raised"], 0, "{a}");
    assert_eq!(a["events"].as_array().unwrap().len(), 2, "{a}");
    assert_eq!(a["events"][0]["edge"], "cleared");
    let state = &a["states"][0];
    assert_eq!(state["rule"], "lossy");
    assert_eq!(state["up"], false);
    assert_eq!(state["run"], 0);
    // And in /metrics, as Prometheus's own parser reads it.
    let (status, text) = get(port, "/metrics");
    assert_eq!(status, 200);
    let m = parse_metrics(&text);
    let raised_gauge = &m["sonde_alert_raised"][0];
    assert_eq!(raised_gauge[1]["alert"], "lossy", "{m}");
    assert_eq!(raised_gauge[2], 0.0, "{m}");
    let notices: Vec<(String, f64)> = m["sonde_alert_notices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s[1]["edge"].as_str().unwrap().to_string(),
                s[2].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        notices,
        [("cleared".to_string(), 1.0), ("raised".to_string(), 1.0)],
        "{m}"
    );

    // Restarted, it goes on: two lossy results raise it again (a fresh
    // start would need them too, so one more lossy result first, then a
    // restart between the two).
    forward(port, &with_loss(&template, 7, 9));
    assert!(
        wait_for(20, || alerts(port)["states"][0]["run"] == 1),
        "{}",
        alerts(port)
    );
    drop(server);
    let (server, port) = central(&config, &archive);
    forward(port, &with_loss(&template, 8, 9));
    let got = hook.wait_for(3, 30);
    assert_eq!(got.len(), 3, "{}", server.log());
    let again: Value = serde_json::from_str(&got[2].body).unwrap();
    assert_eq!(again["edge"], "raised");
    assert_eq!(again["result_id"], "00000000-0000-4000-8000-000000000008");
    // A new episode, a new incident (not the first one's).
    let second = again["incident_id"].as_i64().expect("a second incident");
    assert_ne!(second, incident);
    assert_eq!(alerts(port)["raised"], 1);
    drop(server);
    admin
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .unwrap();
}

#[test]
fn a_rule_that_cannot_work_stops_the_agent_with_its_name_and_key() {
    let d = dir("bad-rule");
    let config = d.join("agent.toml");
    // `sonde serve` with `text` as its configuration: refused, exit 2;
    // what it said.
    let refused = |text: &str| {
        std::fs::write(&config, text).unwrap();
        let out = sonde()
            .args(["serve", "--no-reflector", "--bind", "::1", "--port", "0"])
            .arg("--config")
            .arg(&config)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    let err = refused("[[alert]]\nname = \"slow\"\nmetric = \"rtt_ms\"\npattern = \">50ms,*x*\"\n");
    // The file and the line of the key, as a parse error gives them.
    assert!(
        err.contains(&format!("{}:4: alert 'slow'", config.display()))
            && err.contains("pattern item 2"),
        "{err}"
    );
    // A value no path holds, on line 10 (the second rule's); a metric
    // that does not exist, read with the line where it is written.
    let err = refused(
        "[[alert]]\nname = \"ok\"\nmetric = \"loss_pct\"\nabove = 1.0\n\n\
         [[alert]]\nname = \"v7\"\nmetric = \"loss_pct\"\nabove = 1.0\nfamily = \"ipv7\"\n",
    );
    assert!(
        err.contains(":10: alert 'v7': family: 'ipv7' is not one of v6, v4"),
        "{err}"
    );
    let err = refused("[[alert]]\nname = \"typo\"\nmetric = \"los_pct\"\nabove = 1.0\n");
    assert!(err.contains("line 3, column 10"), "{err}");
}
