//! The GEANT/sTESTA battery (examples/studies/000-geant-stesta/plan.toml) run
//! from both of its ends, as docs/campaigns.md says: node a as endpoint A
//! and node b as endpoint B (its ping back to A), one SQLite archive, on
//! the sTESTA-like lab (examples/studies/000-geant-stesta/stesta-lab.toml: 9 Mbit/s each way,
//! 47 ms each way), scaled to 3 s steps and run three times. Every run
//! has all eight steps, each run by the endpoint the plan names, and
//! `campaign status` says 3 done; `sonde results stats` then gives the
//! study's Table 2 means: TCP about 7–8 Mbit/s, PDR 100 % at 1 Mbit/s, RTT
//! about 94 ms. Needs root; `SONDE_LAB=skip` skips elsewhere.

use crate::common;
use common::lab_cli::{example_up_as, serve_in, KillOnDrop};
use common::{lab_allowed, sonde, stderr};
use serde_json::Value;
use std::collections::BTreeMap;

const A: &str = "2001:2:0:1::1";
const B: &str = "2001:2:0:2::2";

/// `sonde results stats --by label:step -J` of `metric`: group → mean.
fn means(archive: &str, metric: &str) -> BTreeMap<String, (f64, u64)> {
    let out = sonde()
        .args([
            "results",
            archive,
            "stats",
            "--by",
            "label:step",
            "--metric",
            metric,
            "-J",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    eprintln!("{metric}: {}", String::from_utf8_lossy(&out.stdout));
    v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["group"].as_str().unwrap().to_string(),
                (g["mean"].as_f64().unwrap(), g["n"].as_u64().unwrap()),
            )
        })
        .collect()
}

/// `sonde campaign run` of the battery in `node` as endpoint `me`.
fn campaign_in(node: &str, me: &str, archive: &str) -> std::process::Child {
    let plan = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/studies/000-geant-stesta/plan.toml"
    );
    sonde()
        .args(["lab", "exec", "--lab", "stestacamp", node, "--"])
        .arg(env!("CARGO_BIN_EXE_sonde"))
        .args(["campaign", "run", plan, "--as", me, archive])
        // The plan's desk form: 5 min steps become 3 s ones; a run every
        // 30 s, three of them.
        .arg("--quick")
        .args([
            "--endpoint",
            &format!("A={A}"),
            "--endpoint",
            &format!("B={B}"),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn the_studys_battery_from_both_ends_keeps_every_step_of_every_run() {
    if !lab_allowed() {
        return;
    }
    // Light traffic (TCP through a 9 Mbit/s shaper, 1 Mbit/s UDP, pings):
    // runs beside the measuring tests (see common::lab_cli::serial), on
    // an sTESTA lab of its own name.
    let _lab = example_up_as("000-geant-stesta/stesta-lab.toml", "stestacamp");
    let _server = KillOnDrop(serve_in("stestacamp", "b", B));
    let dir = common::TempDir::new("lab-campaign");
    let db = dir.join("stesta.db");
    let archive = format!("--archive={}", db.display());
    let on_a = campaign_in("a", "A", &archive);
    let on_b = campaign_in("b", "B", &archive);
    let (a, b) = (
        on_a.wait_with_output().unwrap(),
        on_b.wait_with_output().unwrap(),
    );
    let (text_a, text_b) = (
        String::from_utf8_lossy(&a.stdout),
        String::from_utf8_lossy(&b.stdout),
    );
    eprintln!("on a:\n{text_a}\non b:\n{text_b}");
    assert!(a.status.success(), "{}", stderr(&a));
    assert!(b.status.success(), "{}", stderr(&b));
    // Each host took part in all three runs (one made each, the other
    // joined it) and ran its own steps there: A seven, B its ping.
    for (text, steps) in [(&text_a, 7), (&text_b, 1)] {
        assert_eq!(
            text.matches(&format!("{steps} step(s) to run here"))
                .count(),
            3,
            "{text}"
        );
    }

    let mut store = sonde_archive::Store::open(&db.display().to_string()).unwrap();
    let runs = store.runs("geant-stesta", 10).unwrap();
    assert_eq!(runs.len(), 3, "{runs:?}");
    for r in &runs {
        assert_eq!(r.state, sonde_archive::RunState::Done, "{r:?}");
        let steps = store.run_steps(&r.id).unwrap();
        assert_eq!(steps.len(), 8, "{steps:?}");
        for s in &steps {
            assert_eq!(s.state, sonde_archive::StepState::Done, "{s:?}");
            let by = if s.name == "ping B to A" { "B" } else { "A" };
            assert_eq!(s.endpoint, by, "{s:?}");
        }
    }
    let status = sonde()
        .args(["campaign", "status", &archive])
        .output()
        .unwrap();
    let status = String::from_utf8_lossy(&status.stdout).to_string();
    assert!(status.contains("runs: 3 done"), "{status}");
    assert!(status.contains("overrides: quick"), "{status}");

    // 3 s steps at 94 ms of RTT: slow start costs a little of the first
    // second, so the floor is below the study's 7 Mbit/s.
    let tcp = means(&archive, "throughput");
    for step in ["TCP A to B", "TCP B to A"] {
        let (mean, n) = tcp[step];
        assert_eq!(n, 3, "{step}");
        assert!((6.5e6..=8.7e6).contains(&mean), "{step}: {mean} bit/s");
    }
    let pdr = means(&archive, "pdr");
    // The bidirectional step is a figure per direction, never pooled,
    // each named by the campaign's endpoints.
    for step in [
        "UDP 1M A to B",
        "UDP 1M B to A",
        "UDP 1M both ways · A to B (with B to A)",
        "UDP 1M both ways · B to A (with A to B)",
    ] {
        let (mean, n) = pdr[step];
        assert_eq!(n, 3, "{step}");
        assert!(mean >= 99.9, "{step}: PDR {mean} %");
    }
    let rtt = means(&archive, "rtt");
    // The path's 94 ms from either end: never less (the emulator is never
    // early), and a loaded machine's late wake-ups add to a mean of a few
    // pings. B's ping runs while A's first TCP step fills the shaper's
    // queue (a probe runs beside a throughput test), so it waits in that
    // queue too: 98 ms here.
    for (step, most) in [("ping A to B", 99.0), ("ping B to A", 125.0)] {
        let (mean, n) = rtt[step];
        assert_eq!(n, 3, "{step}");
        assert!((93.0..=most).contains(&mean), "{step}: RTT {mean} ms");
    }
}
