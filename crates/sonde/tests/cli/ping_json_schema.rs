//! Real `sonde ping -J` output, and the latency under load of `sonde tcp`
//! and `sonde udp --latency`, validate against the published schema of
//! the result document (docs/schema/result-v3.schema.json).

use crate::common;
use common::schema::{assert_rejects, assert_valid, remove, result_v3};
use common::{sonde, stderr, tcp_json, u, ServerProc};
use serde_json::{json, Value};

fn ping_json(args: &[&str]) -> Value {
    let o = sonde().arg("ping").args(args).arg("-J").output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn ping_output_matches_the_schema() {
    let v = result_v3();
    let icmp = ping_json(&[
        "::1",
        "-c",
        "5",
        "-i",
        "5ms",
        "--sizes",
        "56,1000",
        "--report-interval",
        "10ms",
    ]);
    assert_valid(&v, &icmp);
    assert_eq!(icmp["format_version"], 3);
    assert_eq!(icmp["test"], "ping");
    assert_eq!(icmp["spec"]["test"], "ping");
    assert_eq!(icmp["env"]["target"], "::1");
    assert!(
        icmp["env"]["method"]
            .as_str()
            .is_some_and(|m| m.starts_with("icmp-")),
        "{}",
        icmp["env"]
    );
    let intervals = icmp["intervals"].as_array().unwrap();
    assert!(intervals.len() >= 2, "{icmp}");
    for size in [56, 1000] {
        assert!(
            intervals.iter().any(|i| i["size_bytes"] == size),
            "no interval of the {size}-byte series: {intervals:?}"
        );
    }
    let sizes: Vec<u64> = icmp["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| u(&s["size_bytes"]))
        .collect();
    assert_eq!(sizes, [56, 1000]);
    let rt = &icmp["summary"]["round_trip"];
    assert_eq!(u(&rt["sent_packets"]), 10, "{rt}");
    assert_eq!(u(&rt["received_packets"]), 10, "loopback answers: {rt}");
    assert_eq!(u(&rt["lost_packets"]), 0, "{rt}");
    assert!(rt["rtt_ms"]["p50"].is_number(), "{rt}");

    let server = ServerProc::start(&["--reflector-port", "0"]);
    let port = server.reflector_port();
    let stamp = ping_json(&[
        "127.0.0.1",
        "--proto",
        "udp",
        "-p",
        &port.to_string(),
        "-c",
        "3",
        "-i",
        "5ms",
    ]);
    assert_valid(&v, &stamp);
    assert_eq!(stamp["env"]["method"], "stamp");
    assert_eq!(stamp["env"]["target"], "127.0.0.1");
    assert_eq!(
        stamp["series"][0]["size_bytes"], 44,
        "the smallest STAMP packet"
    );
    assert!(stamp["series"][0]["one_way"]["dwell_ms"]["avg"].is_number());
    assert_eq!(u(&stamp["summary"]["round_trip"]["received_packets"]), 3);
}

#[test]
fn the_ping_schema_rejects_a_broken_document() {
    let v = result_v3();
    let icmp = ping_json(&["::1", "-c", "2", "-i", "5ms"]);
    assert_valid(&v, &icmp);
    assert_rejects(&v, &icmp, "a string RTT", |d| {
        d["summary"]["round_trip"]["rtt_ms"]["p50"] = json!("fast");
    });
    assert_rejects(&v, &icmp, "a ping result without its series", |d| {
        remove(d, "series");
    });
    assert_rejects(&v, &icmp, "a ping result without its round trips", |d| {
        remove(&mut d["summary"], "round_trip");
    });
    assert_rejects(&v, &icmp, "a ping result without its target", |d| {
        remove(&mut d["env"], "target");
    });
    assert_rejects(&v, &icmp, "a ping result without its method", |d| {
        remove(&mut d["env"], "method");
    });
    assert_rejects(&v, &icmp, "an unknown probe method", |d| {
        d["env"]["method"] = json!("carrier-pigeon");
    });
    assert_rejects(&v, &icmp, "format 1's top-level counts", |d| {
        d["sent"] = json!(2);
    });
    assert_rejects(&v, &icmp, "format 1's series size", |d| {
        d["series"][0]["size"] = json!(56);
    });
    assert_rejects(&v, &icmp, "format 1's interval size", |d| {
        d["intervals"][0]["size"] = json!(56);
    });
    assert_rejects(&v, &icmp, "a round trip without its count", |d| {
        remove(&mut d["summary"]["round_trip"], "sent_packets");
    });
    assert_rejects(&v, &icmp, "TCP streams in a ping result", |d| {
        d["streams"] = json!([{"stream": 0, "direction": "forward"}]);
    });
    assert_rejects(&v, &icmp, "a spec of another test", |d| {
        d["spec"]["test"] = json!("tcp");
    });
}

#[test]
fn latency_under_load_is_reported_and_valid() {
    let v = result_v3();
    let server = ServerProc::start(&[]);
    let tcp = tcp_json("::1", server.port, &["-t", "2s", "--latency"]);
    assert_valid(&v, &tcp);
    assert_eq!(tcp["spec"]["latency"], true);
    let l = &tcp["summary"]["latency"];
    assert!(l["method"].is_string(), "{l}");
    assert_eq!(l["idle"]["sent_packets"], 10, "{l}");
    assert_eq!(l["idle"]["received_packets"], 10, "{l}");
    // 100 ms apart through the 2 s test: about 20 under load, all
    // answered (the pings run from the connection to the result
    // exchange, so a slow machine sends a few more).
    let loaded = u(&l["loaded"]["sent_packets"]);
    assert!((15..=30).contains(&loaded), "{l}");
    assert_eq!(l["loaded"]["received_packets"], loaded, "{l}");
    assert!(l["increase_ms"].is_number());
    assert_rejects(&v, &tcp, "--latency without its section", |d| {
        remove(&mut d["summary"], "latency");
    });
    assert_rejects(&v, &tcp, "format 1's idle counts", |d| {
        d["summary"]["latency"]["idle"]["sent"] = json!(10);
    });

    let o = sonde()
        .args([
            "udp",
            "127.0.0.1",
            "-p",
            &server.port.to_string(),
            "-t",
            "1s",
            "--latency",
            "-J",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let udp: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_valid(&v, &udp);
    assert!(u(&udp["summary"]["latency"]["loaded"]["sent_packets"]) >= 5);
    // Without the flag there is no latency section.
    let plain = tcp_json("::1", server.port, &["-t", "1s"]);
    assert!(
        plain["summary"].get("latency").is_none(),
        "{}",
        plain["summary"]
    );
    assert!(plain.get("latency").is_none());
}
