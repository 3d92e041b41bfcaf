//! `sonde tune` on loopback against a real server: one document with the
//! four trials it ran and advice of four sysctl lines, both hosts' buffers
//! read from the kernel; and bad flags as usage errors naming them.

use crate::common;
use common::{sonde, stderr, ServerProc};

#[test]
fn tune_on_loopback_reads_both_ends_and_advises() {
    let server = ServerProc::start(&["--no-reflector"]);
    let out = sonde()
        .args(["tune", "::1", "-p", &server.port.to_string()])
        .args([
            "-t",
            "1s",
            "--bottleneck-time",
            "1s",
            "--pings",
            "3",
            "--gap",
            "0s",
            "-J",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    common::schema::assert_method_v1(&doc);
    let t = &doc["tune"];
    assert_eq!(doc["trials"].as_array().unwrap().len(), 4);
    assert_eq!(t["trials"].as_array().unwrap().len(), 4);
    assert_eq!(t["sysctl"].as_array().unwrap().len(), 4);
    // This host is both ends: the same buffers, read from /proc.
    let rmem: u64 = std::fs::read_to_string("/proc/sys/net/core/rmem_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(t["client"]["rmem_max"], rmem);
    assert_eq!(t["server"]["rmem_max"], rmem);
    // Loopback's RTT is microseconds; 20 ms leaves a loaded machine its
    // late wake-ups and still shows a unit wrong by a thousand.
    assert!(t["rtt_ms"].as_f64().unwrap() < 20.0, "{t}");
    assert!(t["verified_bps"].as_f64().unwrap() > 0.0);
}

#[test]
fn bad_flags_are_usage_errors() {
    for (args, needle) in [
        (&["tune", "::1", "--pings", "0"][..], "pings"),
        (&["tune", "::1", "--rtts", "1ms"][..], "--lab"),
        (
            &["tune", "::1", "--lab", "x", "--rtts", "1ms"][..],
            "--windows",
        ),
        (&["lab", "set", "nolab", "1"][..], "--delay"),
        (
            &["lab", "set", "nolab", "1", "--mpls", "16005"][..],
            "--mpls",
        ),
        (
            &[
                "lab",
                "set",
                "nolab",
                "1",
                "--mpls",
                "{ labels = [2000000] }",
            ][..],
            "mpls.labels[1]: '2000000' is not an MPLS label",
        ),
    ] {
        let out = sonde().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
    }
}
