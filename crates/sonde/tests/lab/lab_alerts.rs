//! An alert in a lab campaign: an agent in node a pings b every 2 s
//! (20 packets) as a campaign, with a loss rule (above 5 % for 2 runs,
//! cleared below 1 % for 2 runs). Midway the link's loss is set to 30 %
//! each way with `sonde lab set --loss` (about 51 % of round trips lost):
//! the alert is raised once; the loss set back to 0 clears it once.
//! `sonde status` on the agent's archive shows both. The raise opens an
//! incident naming the path's two addresses, each with its owner (node a's
//! /128 and the lab's /64 as constituencies). Needs root; `SONDE_LAB=skip`
//! skips elsewhere.

use crate::common;
use common::cli;
use common::lab_cli::{agent_in, lab, serve_in, write_topology, Down, KillOnDrop};
use common::{lab_allowed, sonde, stderr};
use serde_json::Value;

const A: &str = "2001:2:0:1::1";
const B: &str = "2001:2:0:1::2";

fn set_loss(pct: u32) {
    let o = lab(&["set", "la1", "1", "--loss", &format!("{pct}%")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let said = String::from_utf8_lossy(&o.stdout).to_string();
    assert_eq!(said.contains(&format!("loss {pct} %")), pct > 0, "{said}");
}

#[test]
fn a_loss_change_mid_campaign_raises_one_alert_and_clearing_it_clears_it_once() {
    if !lab_allowed() {
        return;
    }
    // Light traffic (a ping every 2 s): runs beside the measuring tests
    // (see common::lab_cli::serial).
    let topology = write_topology(
        "la1",
        "[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n\
         [[link]]\na = \"a\"\nb = \"b\"\ndelay = \"2ms\"\n",
    );
    let _down = Down("la1");
    let up = lab(&["up", topology.to_str().unwrap()]);
    assert!(up.status.success(), "{}", stderr(&up));
    let _b = KillOnDrop(serve_in("la1", "b", B));

    let dir = common::TempDir::new("lab-alerts");
    std::fs::create_dir_all(dir.join("campaigns")).unwrap();
    std::fs::write(
        dir.join("campaigns/lossy.toml"),
        format!(
            "name = \"lossy\"\n[schedule]\nrepeat = \"PT2S\"\n\
             [[endpoint]]\nname = \"A\"\naddress = \"{A}\"\n\
             [[endpoint]]\nname = \"B\"\naddress = \"{B}\"\n\
             [[step]]\nname = \"ping A to B\"\nfrom = \"A\"\nto = \"B\"\ntest = \"ping\"\n\
             count = 20\ninterval_s = 0.05\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("agent.toml"),
        "[[alert]]\nname = \"lossy-link\"\nmetric = \"loss_pct\"\ntest = \"ping\"\n\
         above = 5.0\nfor = 2\nclear = 1.0\nclear_for = 2\nnotify = [\"log\", \"incident\"]\n\
         incident = \"loss-high\"\n",
    )
    .unwrap();
    let db = dir.join("agent.db");
    let archive = format!("--archive={}", db.display());
    for (code, network) in [
        ("node-a", format!("{A}/128")),
        ("lab", "2001:2::/32".into()),
    ] {
        let o = sonde()
            .args(["incident", "constituency", "add", code, "--name", code])
            .args(["--network", &network, &archive])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let _agent = agent_in("la1", "a", A, &dir, &db);
    let results = |s: &Value| s["results"].as_u64().unwrap_or(0);
    let raised = |s: &Value| s["alerts"]["raised"].as_array().map_or(0, Vec::len);
    let events = |s: &Value| {
        s["alerts"]["events"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };

    // What follows holds on a loaded machine as well as an idle one: the
    // waits are deadlines (60 s for runs every 2 s), and the rule's
    // margins are wide. Clean, a raise needs more than one echo of 20
    // lost (5 %) in two runs in a row, which a 2 ms link does not do; at
    // 30 % each way, 51 % of round trips are lost, and a run loses at
    // most one of 20 with a chance of about 1e-5, none (to clear) with
    // 0.49^20 ≈ 6e-7. A reply a loaded host delivers late only adds loss:
    // it can delay the clear, which the 60 s wait allows for; a second
    // raise would take two late replies in each of two runs in a row.

    // Clean runs first: nothing raised.
    let s = cli::status_until(&db, 60, |s| results(s) >= 3);
    assert!(results(&s) >= 3, "{s}");
    assert_eq!(raised(&s), 0, "{s}");

    set_loss(30);
    let s = cli::status_until(&db, 60, |s| raised(s) == 1);
    assert_eq!(raised(&s), 1, "{s}");
    let alert = &s["alerts"]["raised"][0];
    assert_eq!(alert["rule"], "lossy-link");
    // The path by its addresses, labelled by the campaign's names.
    assert!(
        alert["label"]
            .as_str()
            .unwrap()
            .contains(&format!("ping A ({A}) → B ({B})")),
        "{alert}"
    );
    // The raise opened an incident with both ends and their owners.
    let shown = sonde()
        .args(["incident", "show", "1", "--json", &archive])
        .output()
        .unwrap();
    assert!(shown.status.success(), "{}", stderr(&shown));
    let incident: Value = serde_json::from_slice(&shown.stdout).unwrap();
    let ends: Vec<(&str, &str, &str)> = incident["addresses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["address"].as_str().unwrap(),
                a["role"].as_str().unwrap(),
                a["owner"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        ends,
        [(A, "source", "node-a"), (B, "target", "lab")],
        "{incident}"
    );

    set_loss(0);
    let s = cli::status_until(&db, 60, |s| raised(s) == 0 && events(s).len() >= 2);
    let ev = events(&s);
    assert_eq!(raised(&s), 0, "{s}");
    // Newest first: one raise, then one clear, and nothing else.
    let edges: Vec<&str> = ev.iter().map(|e| e["edge"].as_str().unwrap()).collect();
    assert_eq!(edges, ["cleared", "raised"], "{s}");
    // Each edge carries the run's loss that crossed the rule: above 5 %
    // to raise, below 1 % to clear, by the rule's own definition.
    assert!(ev[1]["value"].as_f64().unwrap() > 5.0, "{s}");
    assert!(ev[0]["value"].as_f64().unwrap() < 1.0, "{s}");
}
