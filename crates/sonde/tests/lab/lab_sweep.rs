//! `sonde sweep` in the lab: the studies' limiters found where the
//! example labs set them and classified, each direction on its own.
//!
//! - sTESTA-like (examples/studies/000-geant-stesta/stesta-lab.toml): TBF shapers of 9 Mbit/s
//!   with their default queue each way: a *TBF shaper with a queue* →
//!   `shaper`, forward and reverse.
//! - GEANT-like (examples/studies/000-geant-stesta/geant-lab.toml): the emulator's UDP
//!   policer of 88 Mbit/s, punishing A → B to 5 %, plain B → A: an
//!   *emulator policer* → `policer` (reverse), and `punisher` (forward).
//!
//! Truths in the sweep's unit (UDP payload bit/s, 1400-byte payloads over
//! IPv6): a TBF `rate` counts frames without FCS (IP packet + 14 bytes),
//! 9e6 × 1400 / 1462; the emulator's policer counts IP packets,
//! 88e6 × 1400 / 1448. The sweeps are docs/methods.md's walkthroughs
//! `stesta` and `geant`, run as written. Needs root; `SONDE_LAB=skip`
//! skips elsewhere.

use crate::common;
use common::lab_allowed;
use common::lab_cli::num;
use common::walkthrough::Walkthrough;
use serde_json::Value;

/// The sweep of a walkthrough, run as written (its sweep line given
/// `-J`): the method's document.
fn walked_sweep(walk: Walkthrough) -> (common::walkthrough::Walked, Value) {
    let walked = walk.run(&["sweep"]);
    let sweeps = walked.of("sweep");
    assert_eq!(sweeps.len(), 1, "one sweep in the walkthrough");
    let doc = sweeps[0].json();
    common::schema::assert_method_v1(&doc);
    (walked, doc)
}

/// The limiter found for `direction`, printed for the record.
fn limiter<'a>(r: &'a Value, direction: &str) -> &'a Value {
    let l = r["limiters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["direction"] == direction)
        .unwrap_or_else(|| panic!("no {direction} limiter in {}", r["limiters"]));
    eprintln!("{direction}: {l}");
    l
}

/// The knee found against the limiter's rate: never more than 2 % above
/// it (a limiter passes no more than its rate, so no step above it looks
/// clean), and no more than 4 % below, where a loaded machine moves it: a
/// sender short of a step's rate, or a drop on the host, makes a step
/// below the rate look limited.
fn assert_knee(l: &Value, truth_bps: f64) {
    let knee = num(&l["knee_bps"]);
    let off = (knee / truth_bps - 1.0) * 100.0;
    eprintln!(
        "knee {:.3} Mbit/s, truth {:.3} Mbit/s ({off:+.2} %)",
        knee / 1e6,
        truth_bps / 1e6
    );
    assert!(
        (-4.0..=2.0).contains(&off),
        "knee {knee} off the truth by {off:.2} %"
    );
}

#[test]
fn a_tbf_shaper_with_a_queue_is_found_at_9_mbit_and_named_shaper_each_way() {
    if !lab_allowed() {
        return;
    }
    let _one = common::lab_cli::serial();
    let (walked, r) = walked_sweep(Walkthrough::named("docs/methods.md", "stesta"));
    assert_eq!(r["method"], "sweep");
    assert_eq!(r["steps"].as_array().unwrap().len(), 16);
    assert_eq!(r["trials"].as_array().unwrap().len(), 16);
    let truth = 9e6 * 1400.0 / 1462.0;
    for d in ["forward", "reverse"] {
        let l = limiter(&r, d);
        assert_eq!(l["class"], "shaper", "{l}");
        assert_knee(l, truth);
        assert!(num(&l["evidence"]["delay_rise_ms"]) > 2.0, "{l}");
    }
    let svg = std::fs::read_to_string(walked.dir.join("stesta.svg")).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("forward: PDR") && svg.contains("reverse: goodput")
    );
}

#[test]
fn the_geant_punisher_and_its_plain_policer_are_told_apart_at_88_mbit() {
    if !lab_allowed() {
        return;
    }
    let _one = common::lab_cli::serial();
    let (_walked, r) = walked_sweep(Walkthrough::named("docs/methods.md", "geant"));
    let truth = 88e6 * 1400.0 / 1448.0;
    let fwd = limiter(&r, "forward");
    assert_eq!(fwd["class"], "punisher", "{fwd}");
    assert_knee(fwd, truth);
    // The emulator's punisher charges every packet offered and lets a
    // flow run a burst into debt: just over the rate a 2 s step is only
    // partly punished; well over it (92M) the flow is cut to near 5 %.
    let top = r["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["direction"] == "forward")
        .max_by(|a, b| num(&a["value"]).total_cmp(&num(&b["value"])))
        .unwrap();
    let f = num(&top["goodput_bps"]) / num(&fwd["knee_bps"]);
    eprintln!(
        "A → B at {} bit/s delivers {:.1} % of the knee",
        top["value"],
        f * 100.0
    );
    assert!(f < 0.15, "A → B delivered {f} of the knee at the top step");
    let rev = limiter(&r, "reverse");
    assert_eq!(rev["class"], "policer", "{rev}");
    assert_knee(rev, truth);
}
