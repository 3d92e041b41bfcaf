//! Real `sonde ping -J` output, and `--latency` sections of `sonde tcp`
//! and `sonde udp`, validate against the published schemas.

mod common;
use common::schema::{assert_valid, validator};
use common::{sonde, stderr, tcp_json, ServerProc};

fn ping_json(args: &[&str]) -> serde_json::Value {
    let o = sonde().arg("ping").args(args).arg("-J").output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn ping_output_matches_its_schema() {
    let v = validator("ping-result-v1.schema.json");
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
    assert!(icmp["intervals"].as_array().unwrap().len() >= 2, "{icmp}");
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
    assert!(stamp["series"][0]["one_way"]["dwell_ms"]["avg"].is_number());
    // A broken document fails.
    let mut broken = icmp.clone();
    broken["rtt_ms"]["p50"] = serde_json::json!("fast");
    assert!(v.iter_errors(&broken).next().is_some());
}

#[test]
fn latency_under_load_is_reported_and_valid() {
    let server = ServerProc::start(&[]);
    let tcp = tcp_json("::1", server.port, &["-t", "2s", "--latency"]);
    assert_valid(&validator("tcp-result-v1.schema.json"), &tcp);
    let l = &tcp["latency"];
    assert_eq!(l["idle"]["sent"], 10, "{l}");
    assert_eq!(l["idle"]["received"], 10, "{l}");
    // 100 ms apart for the 2 s test: about 20 under load, all answered.
    let loaded = l["loaded"]["sent"].as_u64().unwrap();
    assert!((15..=25).contains(&loaded), "{l}");
    assert_eq!(l["loaded"]["received"], loaded, "{l}");
    assert!(l["increase_ms"].is_number());
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
    let udp: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_valid(&validator("udp-result-v1.schema.json"), &udp);
    assert!(udp["latency"]["loaded"]["sent"].as_u64().unwrap() >= 5);
    // Without the flag there is no latency section.
    let plain = tcp_json("::1", server.port, &["-t", "1s"]);
    assert!(plain.get("latency").is_none());
}
