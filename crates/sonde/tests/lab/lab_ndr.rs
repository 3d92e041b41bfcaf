//! `sonde ndr` in the lab against the configured truth: a router shaping
//! a → b to 50 Mbit/s with TBF (its default 50 ms queue). TBF counts each
//! frame as the kernel hands it over: the IP packet and its 14-byte
//! Ethernet header, no FCS or preamble. So the link carries
//! 50e6 / (8 × (payload + 8 + 40 + 14)) frames per second of IPv6 UDP
//! payloads of each size (the frames of docs/methods.md's walkthrough
//! `ndrl`, 64 (searched at 90), 512 and 1518 bytes, run as written). The
//! no-drop rate found is never above that by
//! more than 2 % (a longer trial there would overflow the queue), and is
//! no more than 2 % below it (10 % at 90 bytes, 72.7 kpps, where the
//! sender itself is near its limit on a loaded machine), or below what
//! the sender reached, if that is less. At most 8 trials per size, the
//! confirmation included (the search brackets a steady rate in 3).
//! Needs root; `SONDE_LAB=skip` skips elsewhere.

use crate::common;
use common::lab_allowed;
use common::walkthrough::Walkthrough;

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn ndr_finds_what_a_50_megabit_link_carries_at_three_sizes() {
    if !lab_allowed() {
        return;
    }
    let _one = common::lab_cli::serial();
    let walked = Walkthrough::named("docs/methods.md", "ndrl").run(&["ndr"]);
    let runs = walked.of("ndr");
    assert_eq!(runs.len(), 1, "one search");
    let r = runs[0].json();
    assert_eq!(r["method"], "ndr");
    common::schema::assert_valid(&common::schema::method_v1(), &r);
    let results = r["results"].as_array().expect("results");
    assert_eq!(results.len(), 3);
    let trials = r["trials"].as_array().expect("trials");
    let mut counted = 0;
    for size in results {
        let payload = f(&size["payload_bytes"]);
        let truth = 50e6 / (8.0 * (payload + 62.0));
        let got = f(&size["rate_pps"]);
        let n = size["trials"].as_u64().unwrap();
        counted += n;
        // The size's first trial, at --max-rate: the most this sender
        // reached at this size (in frames/s of offered payload).
        let first = trials
            .iter()
            .find(|t| t["id"] == size["trial_ids"][0])
            .unwrap_or_else(|| panic!("no first trial for {size}"));
        let reach = f(&first["summary"]["forward"]["sender_throughput_bps"]) / (8.0 * payload);
        eprintln!(
            "payload {payload} B: {got:.0} frames/s against {truth:.0} ({:+.2} %), {n} trials, \
             loss {} %, confirmed {}; the sender reached {reach:.0}",
            100.0 * (got / truth - 1.0),
            size["loss_pct"],
            size["confirmed"]
        );
        // The shaper's invariant: a 5 s confirmation at more than 1 %
        // above the rate overflows TBF's 50 ms queue, so nothing confirmed
        // lies 2 % above the truth on any machine.
        assert!(got <= truth * 1.02, "above the shaper: {size}");
        // Below, a loaded machine moves it: the rate is what the link or
        // the sender carries, whichever is less, and a drop on the host
        // sends the search lower. 2 % at 512 and 1518 bytes (4 to 12 kpps);
        // 10 % at 90, where the sender is near its limit and the reach of
        // its first trial may not hold for the confirmation.
        let margin = if payload < 100.0 { 0.10 } else { 0.02 };
        assert!(
            got >= truth.min(reach) * (1.0 - margin),
            "{got:.0} frames/s, below {:.0} ({reach:.0} reached): {size}",
            truth.min(reach)
        );
        // 3 trials bracket a steady rate and 1 confirms it; 8 allows a
        // search trial or a confirmation failed by a drop on the loaded
        // host, and still fails a bisecting search (8 trials and more).
        // At 90 bytes the sender is near its limit and a loaded host drops
        // now and then, each drop a failed trial that sends the search
        // lower (CI saw 13 with the other tests running beside): there the
        // search must only end, well within its bound.
        let most = if payload < 100.0 { 20 } else { 8 };
        assert!(n <= most, "{n} trials at {payload} B");
        // A failed confirmation sends the search lower, three times over:
        // one of them holds unless the host drops in every one.
        assert_eq!(size["confirmed"], true, "{size}");
        assert_eq!(f(&size["loss_pct"]), 0.0);
        assert_eq!(f(&size["frame_bytes"]), payload + 66.0);
        let bps = f(&size["rate_bps"]);
        assert!((bps / (got * 8.0 * (payload + 66.0)) - 1.0).abs() < 1e-6);
    }
    assert_eq!(trials.len() as u64, counted, "every trial kept");
}
