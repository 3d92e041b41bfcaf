//! The studies reproduced on their labs (examples/studies/, docs/studies.md):
//! each runs its plan in its `--quick` form on its own lab and checks the
//! study's headline findings against what the lab was built to do.
//! Light traffic (a few Mbit/s at most): they run beside the measuring
//! tests, each on a lab of its own name.

use crate::common;
use common::lab_cli::{example_up_as, json_of, num, serve_in, udp_spawn, KillOnDrop};
use common::{lab_allowed, sonde, stderr};
use sonde_model::method::QosStep;
use sonde_model::profile::FrameKind;

const AF: &str = "2001:2:0:3::2";
const BE: &str = "2001:2:0:4::2";

fn frame_loss(s: &QosStep, k: FrameKind) -> f64 {
    s.fg_frames
        .iter()
        .find(|f| f.frame == k)
        .map(|f| f.class.loss_pct)
        .unwrap_or_else(|| panic!("no {k} frames in {s:?}"))
}

/// Seed 004 §5.1: DiffServ-aware video through RIO against best effort,
/// at three loads (Table 7), and RIO's colours in order.
#[test]
fn study_004_af_video_keeps_its_anchor_frames_and_decodes_more_than_best_effort() {
    if !lab_allowed() {
        return;
    }
    let _lab = example_up_as("004-6net-qos/af-lab.toml", "af004");
    let _af = KillOnDrop(serve_in("af004", "af", AF));
    let _be = KillOnDrop(serve_in("af004", "be", BE));
    let dir = common::TempDir::new("lab-004");
    let db = dir.join("004.db");
    let archive = format!("--archive={}", db.display());
    let plan = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/studies/004-6net-qos/af-plan.toml"
    );
    let run = sonde()
        .args(["lab", "exec", "--lab", "af004", "vls", "--"])
        .arg(env!("CARGO_BIN_EXE_sonde"))
        .args(["campaign", "run", plan, "--quick", &archive])
        .args(["--endpoint", &format!("AF={AF}"), "--endpoint"])
        .arg(format!("BE={BE}"))
        .output()
        .unwrap();
    eprintln!("{}", String::from_utf8_lossy(&run.stdout));
    assert!(run.status.success(), "{}", stderr(&run));

    let mut store = sonde_archive::Store::open(&db.display().to_string()).unwrap();
    let methods = store
        .list_methods(Some("6net-af-video"), None, None, 10)
        .unwrap();
    assert_eq!(methods.len(), 6, "one scenario per step");
    // The steps in the plan's order: BE then AF at 1.1, 1.3 and 1.5 C.
    let steps: Vec<&QosStep> = methods.iter().map(|m| &m.qos_steps[0]).collect();
    for (i, load) in ["1.1", "1.3", "1.5"].into_iter().enumerate() {
        let (be, af) = (steps[2 * i], steps[2 * i + 1]);
        let (be_q, af_q) = (
            be.fg_decodable_pct.expect("BE decodable"),
            af.fg_decodable_pct.expect("AF decodable"),
        );
        let af_loss = FrameKind::ALL.map(|k| frame_loss(af, k));
        let be_loss = FrameKind::ALL.map(|k| frame_loss(be, k));
        eprintln!(
            "004 at {load} C: BE I/P/B loss {be_loss:.1?} %, decodable {be_q:.1} %; \
             AF I/P/B loss {af_loss:.1?} %, decodable {af_q:.1} %; background lost {:.1} % (BE), {:.1} % (AF)",
            be.bg_loss_pct.unwrap_or(f64::NAN),
            af.bg_loss_pct.unwrap_or(f64::NAN),
        );
        // RIO drops red (B frames, and the background, reset to 0) before
        // yellow (P) before green (I): the anchor frames come through.
        assert!(
            af_loss[0] < 1.0,
            "AF kept its I frames at {load} C: {af_loss:?}"
        );
        assert!(
            af_loss[0] <= af_loss[1] && af_loss[1] <= af_loss[2],
            "AF loss in colour order at {load} C: {af_loss:?}"
        );
        // The background is all red: it loses more than the video's green
        // and yellow frames together.
        assert!(af.bg_loss_pct.unwrap_or(0.0) > af_loss[1], "{af:?}");
        // The study's finding (Table 10): AF's video is better at every
        // load; from 1.3 C, where the tail-drop queue takes a packet of
        // nearly every I frame, by far.
        let margin = if load == "1.1" { 0.0 } else { 20.0 };
        assert!(
            af_q > be_q + margin,
            "decodable at {load} C: AF {af_q:.1} %, BE {be_q:.1} %"
        );
    }
    // Best effort loses every colour alike: at 1.5 C its I frames lose
    // packets too.
    assert!(frame_loss(steps[4], FrameKind::I) > 5.0, "{:?}", steps[4]);

    // RIO's colours against the line's truth: 500 kbit/s each of green,
    // yellow and red into 1 Mbit/s. The line carries its rate (1 Mbit/s
    // of Ethernet frames: 955 kbit/s of 1316-byte payloads); green alone
    // fits and loses nothing, green and yellow together do not (yellow
    // loses at least their excess), and red takes the rest of the loss.
    let flows: Vec<_> = ["AF11", "AF12", "AF13"]
        .into_iter()
        .map(|class| {
            udp_spawn(
                "af004",
                "vls",
                AF,
                &["-b", "500k", "-l", "1316", "-S", class, "-t", "6s"],
            )
        })
        .collect();
    let got: Vec<serde_json::Value> = flows
        .into_iter()
        .map(|f| json_of(f)["summary"]["forward"].clone())
        .collect();
    let loss: Vec<f64> = got.iter().map(|f| num(&f["loss_pct"])).collect();
    let carried: f64 = got.iter().map(|f| num(&f["throughput_bps"])).sum();
    let payload_rate = 1e6 * 1316.0 / 1378.0;
    eprintln!(
        "RIO at 1.5 C: green {:.2} %, yellow {:.2} %, red {:.2} % lost; {:.0} bit/s carried of {payload_rate:.0}",
        loss[0], loss[1], loss[2], carried
    );
    assert!(loss[0] < 1.0, "green: {loss:?}");
    let yellow_least = 100.0 * (1.0 - (payload_rate - 500e3) / 500e3) * 0.5;
    assert!(
        loss[1] > yellow_least && loss[1] < loss[2],
        "yellow loses at least half its share of the excess ({yellow_least:.1} %): {loss:?}"
    );
    assert!(
        (carried - payload_rate).abs() / payload_rate < 0.06,
        "the line carried {carried:.0} bit/s of payload, its rate is {payload_rate:.0}"
    );
}
