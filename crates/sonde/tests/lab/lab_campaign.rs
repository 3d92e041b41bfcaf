//! The GEANT/sTESTA battery (examples/campaigns/geant-stesta.toml) on the
//! sTESTA-like lab (examples/lab/stesta-like.toml: 9 Mbit/s each way,
//! 47 ms each way), scaled to 10 s steps and run once into SQLite (the
//! study ran it hourly; two runs gave the same means and took another
//! 80 s of CI, and repeated runs are tested on loopback in
//! tests/cli/campaign_cli.rs); `sonde results stats` then gives the
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

#[test]
fn the_studys_battery_on_the_stesta_lab_gives_the_studys_means() {
    if !lab_allowed() {
        return;
    }
    // Light traffic (TCP through a 9 Mbit/s shaper, 1 Mbit/s UDP, pings):
    // runs beside the measuring tests (see common::lab_cli::serial), on
    // an sTESTA lab of its own name.
    let _lab = example_up_as("stesta-like.toml", "stestacamp");
    let _server = KillOnDrop(serve_in("stestacamp", "b", B));
    let dir = common::TempDir::new("lab-campaign");
    let archive = format!("--archive={}", dir.join("stesta.db").display());
    let plan = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/campaigns/geant-stesta.toml"
    );
    let out = sonde()
        .args(["lab", "exec", "--lab", "stestacamp", "a", "--"])
        .arg(env!("CARGO_BIN_EXE_sonde"))
        .args([
            "campaign",
            "run",
            plan,
            "--scale",
            "1/30",
            "--max-runs",
            "1",
        ])
        .args([&archive])
        .args([
            "--endpoint",
            &format!("A={A}"),
            "--endpoint",
            &format!("B={B}"),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!("{text}");
    assert!(out.status.success(), "{}", stderr(&out));
    // Node a is endpoint A (its address is a's); B's ping leg is B's.
    assert_eq!(
        text.matches("run done: 7 results kept").count(),
        1,
        "{text}"
    );
    assert_eq!(text.matches("skipped: led by B").count(), 1, "{text}");

    let tcp = means(&archive, "throughput");
    for step in ["TCP A to B", "TCP B to A"] {
        let (mean, n) = tcp[step];
        assert_eq!(n, 1, "{step}");
        assert!((7.0e6..=8.7e6).contains(&mean), "{step}: {mean} bit/s");
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
        assert_eq!(n, 1, "{step}");
        assert!(mean >= 99.9, "{step}: PDR {mean} %");
    }
    let rtt = means(&archive, "rtt");
    let (mean, n) = rtt["ping A to B"];
    assert_eq!(n, 1);
    // The path's 94 ms: never less (the emulator is never early), and a
    // loaded machine's late wake-ups add to a mean of ten pings.
    assert!((93.0..=99.0).contains(&mean), "RTT {mean} ms");

    let status = sonde()
        .args(["campaign", "status", &archive])
        .output()
        .unwrap();
    let status = String::from_utf8_lossy(&status.stdout).to_string();
    assert!(status.contains("runs: 1 done"), "{status}");
}
