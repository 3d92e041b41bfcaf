//! `sonde ndr` in the lab against the configured truth: a router shaping
//! a → b to 50 Mbit/s with TBF (its default 50 ms queue). TBF counts each
//! frame as the kernel hands it over: the IP packet and its 14-byte
//! Ethernet header, no FCS or preamble. So the link carries
//! 50e6 / (8 × (payload + 8 + 40 + 14)) frames per second of IPv6 UDP
//! payloads of each size, and the no-drop rate must come within 2 % of
//! that, in at most 6 trials per size (the confirmation included).
//! Needs root; `SONDE_LAB=skip` skips elsewhere.

use crate::common;
use common::{lab_allowed, lab_json, lab_server};
use sonde_lab::{Chain, Link};
use sonde_model::Rate;

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn ndr_finds_what_a_50_megabit_link_carries_at_three_sizes() {
    if !lab_allowed() {
        return;
    }
    let _one = common::lab_cli::serial();
    let shaped = Link {
        rate: Some(Rate::from_bps(50_000_000)),
    };
    let chain = Chain::new(60, shaped, Link::default()).expect("build the lab chain");
    let server = lab_server(&chain.b, &[&chain.b6]);
    let r = lab_json(
        &chain.a,
        "ndr",
        &chain.b6,
        server.port,
        &[
            "--payloads",
            "64,512,1400",
            "--max-rate",
            "100M",
            "--trial",
            "2s",
            "--confirm",
            "5s",
            "--gap",
            "0.5s",
        ],
    );
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
        eprintln!(
            "payload {payload} B: {got:.0} frames/s against {truth:.0} ({:+.2} %), {n} trials, \
             loss {} %, confirmed {}",
            100.0 * (got / truth - 1.0),
            size["loss_pct"],
            size["confirmed"]
        );
        assert!((got / truth - 1.0).abs() < 0.02, "{size}");
        assert!(n <= 6, "{n} trials at {payload} B");
        assert_eq!(size["confirmed"], true, "{size}");
        assert_eq!(f(&size["loss_pct"]), 0.0);
        assert_eq!(f(&size["frame_bytes"]), payload + 66.0);
        let bps = f(&size["rate_bps"]);
        assert!((bps / (got * 8.0 * (payload + 66.0)) - 1.0).abs() < 1e-6);
    }
    assert_eq!(trials.len() as u64, counted, "every trial kept");
}
