//! `sonde qos` on loopback against real servers: the checks read real
//! results (loopback keeps every marking and polices nothing), the
//! background goes through a real third-party agent, the document follows
//! docs/schema/method-v1.schema.json, and bad flags are usage errors that
//! name what is wrong.

use crate::common;
use common::{sonde, stderr, ServerProc};

fn qos(args: &[&str]) -> std::process::Output {
    sonde().arg("qos").args(args).output().unwrap()
}

fn valid(out: &std::process::Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", stderr(out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    common::schema::assert_method_v1(&doc);
    doc
}

#[test]
fn loopback_keeps_every_marking_and_polices_nothing() {
    let b = ServerProc::start(&["--no-reflector"]);
    let c = ServerProc::start(&["--no-reflector", "--third-party-allow", "::1/128"]);
    let port = b.port.to_string();
    let via = format!("[::1]:{}", c.port);
    let out = qos(&[
        "check",
        "::1",
        "-p",
        &port,
        "--via",
        &via,
        "--checks",
        "marking,policing",
        "--classes",
        "CS0,EF",
        "-t",
        "1s",
        "--gap",
        "0s",
        "-J",
    ]);
    let doc = valid(&out);
    assert_eq!(doc["method"], "qos_check");
    let checks = doc["checks"].as_array().unwrap();
    let got: Vec<(&str, u64, &str)> = checks
        .iter()
        .map(|c| {
            (
                c["from"].as_str().unwrap(),
                c["class"].as_u64().unwrap(),
                c["verdict"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("this host", 0, "kept"),
            ("this host", 46, "kept"),
            (via.as_str(), 0, "kept"),
            (via.as_str(), 46, "kept"),
            ("this host", 46, "not_policed"),
        ]
    );
    // 10 Mbit/s offered for 1 s: it arrives. `not_policed` above allows
    // at most 1 % lost (a loaded machine's stall on loopback may take a
    // packet or two); nothing arrives that was not sent, so what was
    // admitted is never more than what was offered; and, short of that
    // 1 % and an arrival span stretched by a late receiver, it is the
    // rate offered.
    let p = &checks[4]["figures"];
    let (loss, offered, admitted) = (
        p["loss_pct"].as_f64().unwrap(),
        p["offered_bps"].as_f64().unwrap(),
        p["admitted_bps"].as_f64().unwrap(),
    );
    assert!((0.0..=1.0).contains(&loss), "{p}");
    assert!(admitted <= offered, "{p}");
    assert!(admitted >= 0.95 * 10e6, "{p}");
    // Each check names trials that are in the document.
    let ids: Vec<&str> = doc["trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 5);
    for c in checks {
        for t in c["trials"].as_array().unwrap() {
            assert!(ids.contains(&t.as_str().unwrap()));
        }
    }
}

#[test]
fn a_scenario_runs_its_background_through_the_agent() {
    let b = ServerProc::start(&["--no-reflector"]);
    let c = ServerProc::start(&["--no-reflector", "--third-party-allow", "::1/128"]);
    let port = b.port.to_string();
    let via = format!("[::1]:{}", c.port);
    let out = qos(&[
        "scenario",
        "::1",
        "-p",
        &port,
        "--via",
        &via,
        "--background",
        "20M",
        "--fg-rates",
        "1M,2M",
        "-t",
        "1s",
        "--lead",
        "0.2s",
        "--gap",
        "0s",
        "-J",
    ]);
    let doc = valid(&out);
    let steps = doc["qos_steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    for (s, rate) in steps.iter().zip([1e6, 2e6]) {
        // On loopback beside the background: at most a tenth lost (a
        // stalled receiver on a loaded machine), the machine's loss.
        let loss = s["fg_loss_pct"].as_f64().unwrap();
        assert!((0.0..=10.0).contains(&loss), "{s}");
        // UDP rates: the pacer never sends more than its rate (over a
        // second, one packet more: its departures start at 0), so what
        // arrived is at most 2 % over; less by what was lost (a tenth at
        // most) and an arrival span a late receiver stretches (5 %).
        let fg = s["fg_achieved_bps"].as_f64().unwrap();
        assert!((0.85 * rate..=1.02 * rate).contains(&fg), "{s}");
        // 70 % of 20 Mbit/s of UDP, 30 % of TCP.
        let bg = s["bg_achieved_bps"].as_f64().unwrap();
        assert!((0.85 * 14e6..=1.02 * 14e6).contains(&bg), "{s}");
        // TCP's goodput is the receiver's: a tenth either way for threads
        // a loaded machine wakes late (a receiver's late first read
        // shortens its clock, a sender's late end is not caught up).
        let tcp = s["bg_tcp_bps"].as_f64().unwrap();
        assert!((0.9 * 6e6..=1.1 * 6e6).contains(&tcp), "{s}");
    }
    assert!(c.wait_for_log("third-party test"), "{}", c.log());
    // The text: Table 5's columns, a row per step.
    let out = qos(&[
        "scenario",
        "::1",
        "-p",
        &port,
        "--background",
        "5M",
        "--tcp-share",
        "0",
        "--fg-rates",
        "1M",
        "-t",
        "1s",
        "--lead",
        "0.2s",
        "--gap",
        "0s",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        text.contains("fg loss %") && text.contains("from this host"),
        "{text}"
    );
}

#[test]
fn bad_flags_are_usage_errors_that_name_what_is_wrong() {
    let cases: [(&[&str], &str); 5] = [
        (&["check", "::1", "--checks", "marking,colour"], "colour"),
        (&["check", "::1", "--checks", "priority"], "background_rate"),
        (&["scenario", "::1", "--background", "80M"], "--fg-rates"),
        (
            &[
                "scenario",
                "::1",
                "--background",
                "80M",
                "--fg-streams",
                "0:3",
            ],
            "fg_streams",
        ),
        (
            &["check", "::1", "--via", "nl:0", "--checks", "marking"],
            "'0' is not a port",
        ),
    ];
    for (args, needle) in cases {
        let out = qos(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
    }
}
