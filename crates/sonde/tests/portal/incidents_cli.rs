//! `sonde incident` against an archive: constituencies, the owner of an
//! address, an incident opened, changed, commented and imported, a
//! template mailed to a real SMTP server (aiosmtpd), and bad input
//! refused with exit code 2 naming what is wrong.

use crate::common;
use common::cli::{json, run};
use common::smtp::SmtpSink;
use common::stderr;

fn ok(args: &[&str]) -> String {
    let out = run(args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn refused(args: &[&str]) -> String {
    let out = run(args);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    stderr(&out)
}

#[test]
fn incidents_on_the_command_line() {
    let dir = common::TempDir::new("incidents-cli");
    let archive = format!("--archive={}", dir.join("a.db").display());
    let a = archive.as_str();
    let inc = |rest: &[&str]| -> Vec<String> {
        let mut v = vec!["incident".to_string(), a.to_string()];
        v.extend(rest.iter().map(|s| s.to_string()));
        v
    };
    let ok_ = |rest: &[&str]| ok(&inc(rest).iter().map(String::as_str).collect::<Vec<_>>());
    let refused_ =
        |rest: &[&str]| refused(&inc(rest).iter().map(String::as_str).collect::<Vec<_>>());

    ok_(&[
        "constituency",
        "add",
        "basnet",
        "--name",
        "BASNET",
        "--network",
        "2001:db8::/32",
        "--network",
        "192.0.2.0/24",
    ]);
    ok_(&[
        "constituency",
        "add",
        "sigmanet",
        "--name",
        "SigmaNet",
        "--network",
        "2001:db8:5::/48",
    ]);
    ok_(&["network", "add", "sigmanet", "192.0.2.64/26"]);
    ok_(&[
        "contact",
        "add",
        "sigmanet",
        "--name",
        "SigmaNet NOC",
        "--email",
        "noc@sigmanet.example",
    ]);
    assert_eq!(
        ok_(&["owner", "192.0.2.70"]),
        "192.0.2.70: sigmanet (SigmaNet) by 192.0.2.64/26\n"
    );
    assert_eq!(
        ok_(&["owner", "2001:db8:6::1"]),
        "2001:db8:6::1: basnet (BASNET) by 2001:db8::/32\n"
    );
    assert_eq!(
        ok_(&["owner", "198.51.100.1"]),
        "198.51.100.1: no constituency owns it\n"
    );
    // Changed and taken back; what is not there is refused by name.
    ok_(&[
        "constituency",
        "set",
        "sigmanet",
        "--notes",
        "peers at AMS-IX",
    ]);
    assert!(
        ok_(&["constituency", "list"]).contains("sigmanet (SigmaNet)\n  notes: peers at AMS-IX\n"),
        "notes not changed"
    );
    let e = refused_(&["constituency", "set", "sigmanet"]);
    assert!(e.contains("nothing to change"), "{e}");
    ok_(&["network", "remove", "sigmanet", "192.0.2.64/26"]);
    assert_eq!(
        ok_(&["owner", "192.0.2.70"]),
        "192.0.2.70: basnet (BASNET) by 192.0.2.0/24\n"
    );
    ok_(&["network", "add", "sigmanet", "192.0.2.64/26"]);
    assert_eq!(
        ok_(&["owner", "192.0.2.70"]),
        "192.0.2.70: sigmanet (SigmaNet) by 192.0.2.64/26\n"
    );
    let e = refused_(&["contact", "remove", "sigmanet", "nobody@sigmanet.example"]);
    assert!(e.contains("nobody@sigmanet.example of sigmanet"), "{e}");
    ok_(&[
        "constituency",
        "add",
        "gone",
        "--name",
        "Gone",
        "--network",
        "203.0.113.0/24",
    ]);
    ok_(&["constituency", "remove", "gone"]);
    assert_eq!(
        ok_(&["owner", "203.0.113.1"]),
        "203.0.113.1: no constituency owns it\n"
    );
    let e = refused_(&["constituency", "remove", "gone"]);
    assert!(e.contains("gone"), "{e}");

    let e = refused_(&["network", "add", "sigmanet", "2001:db8::/32"]);
    assert!(
        e.contains("2001:db8::/32 is owned by both basnet and sigmanet"),
        "{e}"
    );
    let e = refused_(&["owner", "192.0.2"]);
    assert!(
        e.contains("address: '192.0.2' is not an IPv6 or IPv4 address"),
        "{e}"
    );
    let e = refused_(&[
        "contact", "add", "sigmanet", "--name", "x", "--email", "not-mail",
    ]);
    assert!(e.contains("email: 'not-mail' is not a mail address"), "{e}");

    assert_eq!(
        ok_(&[
            "open",
            "--type",
            "loss-high",
            "--summary",
            "loss 7%",
            "--severity",
            "high",
            "--target",
            "2001:db8:5::9",
            "--source",
            "192.0.2.10"
        ]),
        "incident 1 opened\n"
    );
    let e = refused_(&[
        "open",
        "--type",
        "loss-high",
        "--summary",
        "x",
        "--severity",
        "urgent",
    ]);
    assert!(
        e.contains("severity: 'urgent' is not one of low, medium, high, critical"),
        "{e}"
    );
    ok_(&["set", "1", "--state", "confirmed"]);
    let e = refused_(&["set", "1", "--status", "done"]);
    assert!(
        e.contains("status: 'done' is not one of open, stalled, closed"),
        "{e}"
    );
    let e = refused_(&["set", "7", "--status", "closed"]);
    assert!(e.contains("incident 7 does not exist"), "{e}");
    ok_(&["comment", "1", "asked SigmaNet", "--author", "ana"]);

    let report = dir.join("report.json");
    std::fs::write(
        &report,
        r#"[{"type": "ddos", "summary": "flood", "addresses": [{"address": "192.0.2.200", "role": "target"}]},
            {"type": "scan", "severity": "low", "summary": "scan", "description": "seen by the IDS",
             "addresses": [{"address": "2001:db8:5::1", "role": "source"}]}]"#,
    )
    .unwrap();
    assert_eq!(
        ok_(&["import", report.to_str().unwrap()]),
        "incident 2 opened\nincident 3 opened\n"
    );
    std::fs::write(
        &report,
        r#"{"type": "scan", "summary": "s", "addresses": []}"#,
    )
    .unwrap();
    let e = refused_(&["import", report.to_str().unwrap()]);
    assert!(e.contains("addresses: 1 to 256 addresses"), "{e}");

    let list = json(&run(&inc(&["list", "--json", "--owner", "sigmanet"])
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()));
    let ids: Vec<i64> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, [3, 1]);

    // A template mailed through a real SMTP server.
    let e = refused_(&[
        "template",
        "add",
        "x",
        "--subject",
        "s",
        "--body",
        "{contact.name}",
    ]);
    assert!(
        e.contains("body: unknown placeholder {contact.name}"),
        "{e}"
    );
    ok_(&[
        "template",
        "add",
        "notice",
        "--subject",
        "#{incident.id} {incident.type} in {constituency.name}",
        "--body",
        "{address} is {incident.state}; we wait for you.",
        "--set-state",
        "notified",
        "--set-status",
        "stalled",
    ]);
    let e = refused_(&["mail", "1", "notice"]);
    assert!(e.contains("where does mail go?"), "{e}");
    let smtp = SmtpSink::start(&dir);
    let sent = ok_(&[
        "mail",
        "1",
        "notice",
        "--smtp",
        &smtp.server(),
        "--from",
        "irt@sonde.example",
    ]);
    assert_eq!(sent, "mailed sigmanet: noc@sigmanet.example\n");
    let mails = smtp.received();
    assert_eq!(mails.len(), 1);
    assert_eq!(mails[0].header("subject"), Some("#1 loss-high in SigmaNet"));
    assert_eq!(
        mails[0].body.trim_end(),
        "2001:db8:5::9 is confirmed; we wait for you."
    );
    // BASNET has no contact: it gets no mail, and the rest still goes.
    let show = ok_(&["show", "1"]);
    assert!(
        show.contains("state notified, status stalled, severity high"),
        "{show}"
    );
    assert!(
        show.contains("mail notice to noc@sigmanet.example"),
        "{show}"
    );
    assert!(
        show.contains("2001:db8:5::9                            target sigmanet"),
        "{show}"
    );
    assert!(
        show.contains("192.0.2.10                               source basnet"),
        "{show}"
    );
    // The same through a server configuration's [smtp].
    let config = dir.join("agent.toml");
    std::fs::write(
        &config,
        format!(
            "[smtp]\nserver = \"{}\"\nfrom = \"irt@sonde.example\"\n",
            smtp.server()
        ),
    )
    .unwrap();
    let sent = ok_(&["mail", "3", "notice", "--config", config.to_str().unwrap()]);
    assert_eq!(sent, "mailed sigmanet: noc@sigmanet.example\n");
    let mails = smtp.received();
    assert_eq!(mails.len(), 2);
    assert!(
        mails
            .iter()
            .any(|m| m.header("subject") == Some("#3 scan in SigmaNet")),
        "{mails:?}"
    );
    let i = json(&run(&inc(&["show", "1", "--json"])
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()));
    assert_eq!(i["comments"][0]["text"], "asked SigmaNet");
    let _ = std::fs::remove_dir_all(&dir);
}
