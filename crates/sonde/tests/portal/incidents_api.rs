//! Incidents through the API of a real agent, with its mail going to a
//! real SMTP server (aiosmtpd): constituencies with overlapping prefixes
//! of both families, the owner of an address, a report imported, a
//! template mailed to the owners' contacts with its placeholders filled,
//! and the state and status the template sets.

use crate::common;
use common::http::{get, get_as, json, send, Agent};
use common::smtp::SmtpSink;
use serde_json::Value;

const TOKEN: &str = "0123456789abcdef-irt";

fn post(port: u16, path: &str, body: &str) -> (u16, Value) {
    let (status, text) = send(port, "POST", path, TOKEN, "application/json", body);
    (status, json(&text))
}

fn patch(port: u16, path: &str, body: &str) -> (u16, Value) {
    let (status, text) = send(port, "PATCH", path, TOKEN, "application/json", body);
    (status, json(&text))
}

/// `POST /api/v1/constituencies` of `body`, which must be made.
fn add_constituency(port: u16, body: &str) {
    let (status, answer) = post(port, "/api/v1/constituencies", body);
    assert_eq!(status, 201, "{answer}");
}

/// A read with the token: constituencies, incidents and templates are
/// personal data, refused without one even where reading is public.
fn read(port: u16, path: &str) -> Value {
    let (status, text) = get_as(port, path, TOKEN);
    assert_eq!(status, 200, "{path}: {text}");
    json(&text)
}

#[test]
fn a_report_is_imported_owned_and_mailed_through_a_real_smtp_server() {
    let agent = Agent::builder("incidents-api");
    let smtp = SmtpSink::start(agent.dir());
    let Agent { server, port, dir } = agent.start(&format!(
        "[http]\nread_public = true\ntokens = [{{ name = \"irt\", token = \"{TOKEN}\", may = [\"incidents\"] }}]\n\
         [smtp]\nserver = \"{}\"\nfrom = \"BG-IRT <bg-irt@sonde.example>\"\n",
        smtp.server()
    ));

    // Writes need the token.
    let (status, _) = send(
        port,
        "POST",
        "/api/v1/constituencies",
        "",
        "application/json",
        "{}",
    );
    assert_eq!(status, 401);

    // LITNET owns a /32 and a /22; EENET a /48 and a /25 inside them.
    add_constituency(
        port,
        r#"{"code": "litnet", "name": "LITNET", "notes": "Lithuanian NREN",
            "networks": ["2001:db8::/32", "198.51.100.0/22"],
            "contacts": [{"name": "LITNET CERT", "email": "cert@litnet.example", "role": "abuse"}]}"#,
    );
    add_constituency(
        port,
        r#"{"code": "eenet", "name": "EENET", "networks": ["2001:db8:1::/48"]}"#,
    );
    let (status, body) = post(
        port,
        "/api/v1/constituencies/eenet/networks",
        r#"{"prefix": "198.51.101.128/25"}"#,
    );
    assert_eq!(
        (status, body["prefix"].as_str()),
        (201, Some("198.51.101.128/25"))
    );
    for (email, role) in [
        ("abuse@eenet.example", "abuse"),
        ("noc@eenet.example", "noc"),
    ] {
        let (status, body) = post(
            port,
            "/api/v1/constituencies/eenet/contacts",
            &format!(r#"{{"name": "EENET {role}", "email": "{email}", "role": "{role}"}}"#),
        );
        assert_eq!(status, 201, "{body}");
    }
    // A prefix another owns: 409 naming both; a bad one: 400 naming it.
    let (status, body) = post(
        port,
        "/api/v1/constituencies/eenet/networks",
        r#"{"prefix": "198.51.100.0/22"}"#,
    );
    assert_eq!(status, 409);
    assert_eq!(
        body["error"],
        "198.51.100.0/22 is owned by both litnet and eenet"
    );
    let (status, body) = post(
        port,
        "/api/v1/constituencies/eenet/networks",
        r#"{"prefix": "198.51.101.300/25"}"#,
    );
    assert_eq!(status, 400);
    assert!(body["error"]
        .as_str()
        .unwrap()
        .starts_with("prefix: '198.51.101.300/25'"));
    let (status, _) = post(
        port,
        "/api/v1/constituencies/nobody/networks",
        r#"{"prefix": "203.0.113.0/24"}"#,
    );
    assert_eq!(status, 404);

    // The longest prefix owns, in both families.
    for (addr, owner) in [
        ("2001:db8:1:7::1", Some("eenet")),
        ("2001:db8:2::1", Some("litnet")),
        ("198.51.101.200", Some("eenet")),
        ("198.51.101.7", Some("litnet")),
        ("203.0.113.1", None),
    ] {
        let v = read(port, &format!("/api/v1/owner?address={addr}"));
        assert_eq!(v["owner"]["code"].as_str(), owner, "{addr}: {v}");
    }

    // A report imported: its owners found, its description the first comment.
    let (status, body) = post(
        port,
        "/api/v1/incidents/import",
        r#"{"type": "scan", "severity": "high", "summary": "ssh scan from the campus",
            "description": "2000 tries in 10 minutes", "reporter": "cert@partner.example",
            "reported_at": "2026-11-26T05:00:00Z",
            "addresses": [{"address": "2001:db8:1:7::5", "role": "source"},
                          {"address": "198.51.100.9", "role": "target"},
                          {"address": "203.0.113.1", "role": "target"}]}"#,
    );
    assert_eq!(status, 201, "{body}");
    let id = body["ids"][0].as_i64().unwrap();
    let (status, body) = post(
        port,
        "/api/v1/incidents/import",
        r#"{"type": "scan", "summary": "s", "addresses": [{"address": "2001:db8::1", "role": "sender"}]}"#,
    );
    assert_eq!(status, 400);
    assert_eq!(
        body["error"],
        "addresses[0].role: 'sender' is not one of source, target"
    );
    let i = read(port, &format!("/api/v1/incidents/{id}"));
    let owners: Vec<&Value> = i["addresses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["owner"])
        .collect();
    assert_eq!(
        owners,
        [&Value::from("eenet"), &Value::from("litnet"), &Value::Null]
    );
    assert_eq!(
        (i["state"].as_str(), i["status"].as_str()),
        (Some("reported"), Some("open"))
    );
    assert_eq!(i["source"], "import");
    // The comment is the token's; the reporter is in what it says.
    assert_eq!(i["comments"][0]["author"], "irt");
    // A comment cannot say it is by someone else.
    let (status, body) = post(
        port,
        &format!("/api/v1/incidents/{id}/comments"),
        r#"{"text": "all clear", "author": "ops-lead (forged)"}"#,
    );
    assert_eq!(status, 400, "{body}");
    assert!(body["error"].as_str().unwrap().contains("token"), "{body}");
    assert_eq!(
        i["comments"][0]["text"],
        "reported by cert@partner.example; reported at 2026-11-26T05:00:00Z: 2000 tries in 10 minutes"
    );

    // Templates: an unknown placeholder is refused by name.
    let (status, body) = post(
        port,
        "/api/v1/mail-templates",
        r#"{"name": "bad", "subject": "{incident.owner}", "body": "b"}"#,
    );
    assert_eq!(status, 400);
    assert!(body["error"]
        .as_str()
        .unwrap()
        .starts_with("subject: unknown placeholder {incident.owner}"));
    let (status, body) = post(
        port,
        "/api/v1/mail-templates",
        r#"{"name": "first-notice", "subject": "[BG-IRT #{incident.id}] {incident.type} from {address}",
            "body": "Dear {constituency.name} ({constituency.code}),\n\n{addresses}\n\nSeverity {incident.severity}: {incident.summary}.\n",
            "set_state": "notified", "set_status": "stalled"}"#,
    );
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        read(port, "/api/v1/mail-templates")[0]["name"],
        "first-notice"
    );

    // Mailed to the abuse contacts of both owners (not EENET's noc).
    let (status, body) = post(
        port,
        &format!("/api/v1/incidents/{id}/mail"),
        r#"{"template": "first-notice", "role": "abuse"}"#,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (body["state"].as_str(), body["status"].as_str()),
        (Some("notified"), Some("stalled"))
    );
    let mut mails = smtp.received();
    assert_eq!(mails.len(), 2, "{mails:?}");
    mails.sort_by_key(|m| m.header("to").unwrap_or_default().to_string());
    let eenet = &mails[0];
    assert_eq!(eenet.header("to"), Some("abuse@eenet.example"));
    assert_eq!(eenet.header("from"), Some("BG-IRT <bg-irt@sonde.example>"));
    assert_eq!(
        eenet.header("subject"),
        Some(format!("[BG-IRT #{id}] scan from 2001:db8:1:7::5").as_str())
    );
    assert_eq!(
        eenet.body.trim_end(),
        "Dear EENET (eenet),\n\n2001:db8:1:7::5 (source)\n\nSeverity high: ssh scan from the campus."
    );
    let litnet = &mails[1];
    assert_eq!(litnet.header("to"), Some("cert@litnet.example"));
    assert_eq!(
        litnet.header("subject"),
        Some(format!("[BG-IRT #{id}] scan from 198.51.100.9").as_str())
    );
    assert!(
        litnet
            .body
            .starts_with("Dear LITNET (litnet),\n\n198.51.100.9 (target)\n"),
        "{}",
        litnet.body
    );

    // The incident took the template's state and status, on the record.
    let i = read(port, &format!("/api/v1/incidents/{id}"));
    assert_eq!(
        (i["state"].as_str(), i["status"].as_str()),
        (Some("notified"), Some("stalled"))
    );
    let what: Vec<&str> = i["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["what"].as_str().unwrap())
        .collect();
    assert_eq!(what, ["opened", "comment", "state", "status", "mail"]);
    assert_eq!(i["history"][4]["actor"], "irt");
    assert_eq!(
        i["history"][4]["new"],
        "first-notice to abuse@eenet.example, cert@litnet.example"
    );

    // Changed and commented by hand; listed by status and owner.
    let (status, body) = patch(
        port,
        &format!("/api/v1/incidents/{id}"),
        r#"{"status": "closed", "state": "resolved"}"#,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "closed");
    let (status, body) = patch(
        port,
        &format!("/api/v1/incidents/{id}"),
        r#"{"status": "done"}"#,
    );
    assert_eq!(status, 400, "{body}");
    let (status, _) = patch(port, "/api/v1/incidents/999", r#"{"status": "closed"}"#);
    assert_eq!(status, 404);
    let (status, body) = post(
        port,
        &format!("/api/v1/incidents/{id}/comments"),
        r#"{"text": "owner fixed it"}"#,
    );
    assert_eq!(status, 201, "{body}");
    let (status, body) = post(
        port,
        "/api/v1/incidents",
        r#"{"type": "loss-high", "summary": "loss 7%", "addresses": [{"address": "2001:db8:2::9", "role": "target"}]}"#,
    );
    assert_eq!(status, 201, "{body}");
    let second = body["ids"][0].as_i64().unwrap();
    let ids = |q: &str| -> Vec<i64> {
        read(port, &format!("/api/v1/incidents{q}"))
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].as_i64().unwrap())
            .collect()
    };
    assert_eq!(ids(""), [second, id]);
    assert_eq!(ids("?status=closed"), [id]);
    assert_eq!(ids("?status=open&owner=litnet"), [second]);
    assert_eq!(ids("?owner=eenet"), [id]);
    let (status, _) = get_as(port, "/api/v1/incidents?status=maybe", TOKEN);
    assert_eq!(status, 400);
    let (status, _) = get_as(port, "/api/v1/incidents/abc", TOKEN);
    assert_eq!(status, 400);
    // Without the token, incidents are not read at all.
    assert_eq!(get(port, "/api/v1/incidents").0, 401);
    // No contact of the role asked: nothing sent, and said so.
    let (status, body) = post(
        port,
        &format!("/api/v1/incidents/{second}/mail"),
        r#"{"template": "first-notice", "role": "noc"}"#,
    );
    assert_eq!(status, 409, "{body}");
    assert_eq!(smtp.received().len(), 2);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn constituencies_are_changed_and_removed_over_the_api() {
    let agent = Agent::builder("incidents-edit").start(&format!(
        "[http]\nread_public = true\ntokens = [{{ name = \"irt\", token = \"{TOKEN}\", may = [\"incidents\"] }}]\n"
    ));
    let port = agent.port;
    let delete = |path: &str, token: &str| send(port, "DELETE", path, token, "text/plain", "").0;
    let owner = |addr: &str| read(port, &format!("/api/v1/owner?address={addr}"));

    add_constituency(
        port,
        r#"{"code": "litnet", "name": "LITNET", "networks": ["2001:db8::/32"],
            "contacts": [{"name": "LITNET CERT", "email": "cert@litnet.example", "role": "abuse"}]}"#,
    );
    add_constituency(
        port,
        r#"{"code": "eenet", "name": "EENET", "networks": ["2001:db8:1::/48"]}"#,
    );

    // Changing and removing need the token.
    assert_eq!(delete("/api/v1/constituencies/eenet", ""), 401);
    assert_eq!(
        delete("/api/v1/constituencies/eenet", "wrong-token-0123456789"),
        403
    );
    let (status, _) = send(
        port,
        "PATCH",
        "/api/v1/constituencies/litnet",
        "",
        "application/json",
        r#"{"name": "x"}"#,
    );
    assert_eq!(status, 401);

    let (status, body) = patch(
        port,
        "/api/v1/constituencies/litnet",
        r#"{"name": "LITNET CERT", "notes": "the Lithuanian NREN"}"#,
    );
    assert_eq!(
        (status, body["code"].as_str()),
        (200, Some("litnet")),
        "{body}"
    );
    let (status, body) = patch(port, "/api/v1/constituencies/litnet", "{}");
    assert_eq!(status, 400, "{body}");
    let (status, _) = patch(port, "/api/v1/constituencies/nobody", r#"{"name": "x"}"#);
    assert_eq!(status, 404);
    let list = read(port, "/api/v1/constituencies");
    let lit = list
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["code"] == "litnet")
        .unwrap()
        .clone();
    assert_eq!(
        (&lit["name"], &lit["notes"]),
        (&"LITNET CERT".into(), &"the Lithuanian NREN".into()),
        "{lit}"
    );

    // EENET's /48 taken away: LITNET's /32 owns the address again.
    assert_eq!(owner("2001:db8:1::5")["owner"]["code"], "eenet");
    assert_eq!(
        delete(
            "/api/v1/constituencies/eenet/networks?prefix=2001:db8:1::%2F48",
            TOKEN
        ),
        204
    );
    assert_eq!(owner("2001:db8:1::5")["owner"]["code"], "litnet");
    assert_eq!(
        delete(
            "/api/v1/constituencies/eenet/networks?prefix=2001:db8:1::%2F48",
            TOKEN
        ),
        404
    );
    assert_eq!(
        delete(
            "/api/v1/constituencies/eenet/networks?prefix=nonsense",
            TOKEN
        ),
        400
    );
    assert_eq!(
        delete(
            "/api/v1/constituencies/litnet/contacts?email=cert@litnet.example",
            TOKEN
        ),
        204
    );
    assert_eq!(
        delete(
            "/api/v1/constituencies/litnet/contacts?email=cert@litnet.example",
            TOKEN
        ),
        404
    );
    assert_eq!(delete("/api/v1/constituencies/litnet", TOKEN), 204);
    assert_eq!(delete("/api/v1/constituencies/litnet", TOKEN), 404);
    assert_eq!(owner("2001:db8:1::5")["owner"], Value::Null);
    let left = read(port, "/api/v1/constituencies");
    assert_eq!(list_codes(&left), ["eenet"]);
    drop(agent);
}

fn list_codes(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["code"].as_str())
        .collect()
}
