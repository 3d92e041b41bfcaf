//! `sonde ndr` on the real binary against a real `sonde serve` on
//! loopback: the document it prints (checked against
//! docs/schema/method-v1.schema.json), its text, its usage errors and
//! Ctrl-C. What it finds on a shaped path is checked in lab_ndr.rs.

use crate::common;
use common::cli::{json, run};
use common::schema::{assert_valid, method_v1};
use common::{sonde, stderr, ServerProc};
use std::process::Stdio;
use std::time::Duration;

fn ndr(port: u16, args: &[&str]) -> std::process::Output {
    let port = port.to_string();
    let mut all = vec!["ndr", "::1", "-p", &port];
    all.extend_from_slice(args);
    run(&all)
}

#[test]
fn a_path_that_keeps_up_passes_at_the_maximum_and_is_confirmed() {
    let server = ServerProc::start(&[]);
    // Loopback keeps up with 20 Mbit/s; what a loaded machine loses on it
    // (a stalled receiver overflowing its socket buffer, up to a tenth)
    // is the machine's, so a trial may lose that much and still pass.
    let args = [
        "--payloads",
        "1400",
        "--max-rate",
        "20M",
        "--loss",
        "10%",
        "--trial",
        "0.5s",
        "--confirm",
        "1s",
        "--gap",
        "0s",
        "--link-rate",
        "1G",
        "-J",
    ];
    let out = ndr(server.port, &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = json(&out);
    assert_valid(&method_v1(), &doc);
    assert_eq!(doc["method"], "ndr");
    assert_eq!(doc["spec"]["search"], "informed");
    assert_eq!(doc["spec"]["max_rate_bps"], 20_000_000);
    let size = &doc["results"][0];
    assert_eq!(size["payload_bytes"], 1400);
    assert_eq!(size["frame_bytes"], 1466, "IPv6: 1400 + 8 + 40 + 18");
    assert_eq!(
        size["trials"], 2,
        "the first trial, then its confirmation: {size}"
    );
    assert_eq!(size["confirmed"], true);
    let rate = size["rate_bps"].as_f64().unwrap();
    assert!((rate / 20e6 - 1.0).abs() < 0.01, "{rate}");
    let max = size["max_pps"].as_f64().unwrap();
    assert!((max - 1e9 / (8.0 * 1486.0)).abs() < 0.01, "{max}");
    let trials = doc["trials"].as_array().unwrap();
    let ids: Vec<&str> = size["trial_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_str().unwrap())
        .collect();
    let kept: Vec<&str> = trials.iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert_eq!(ids, kept);
    // Each trial is a UDP test at the size searched.
    for t in trials {
        assert_eq!(t["spec"]["test"], "udp");
        assert_eq!(t["spec"]["length_bytes"], 1400);
    }
}

#[test]
fn the_text_has_a_line_per_trial_and_a_row_per_size() {
    let server = ServerProc::start(&[]);
    let args = [
        "--sizes",
        "64,1518",
        "--max-rate",
        "5M",
        "--trial",
        "0.3s",
        "--confirm",
        "0s",
        "--gap",
        "0s",
    ];
    let out = ndr(server.port, &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("IPv6    90 B  trial 1"), "{text}");
    assert!(
        text.contains("No-drop rate (RFC 2544 §26.1) to ::1"),
        "{text}"
    );
    assert!(text.contains("64-byte frames cannot carry"), "{text}");
    let rows = text.lines().filter(|l| l.starts_with("  IPv6 ")).count();
    assert_eq!(rows, 2, "{text}");
}

#[test]
fn bad_flags_are_usage_errors_naming_the_flag() {
    for (args, flag) in [
        (vec!["--resolution", "0"], "--resolution"),
        (vec!["--payloads", "10"], "--sizes/--payloads"),
        (vec!["--loss", "150%"], "--loss"),
        (vec!["--max-rate", "0"], "--max-rate"),
        (vec!["--trial", "10ms"], "--trial"),
        (vec!["--sizes", "64", "--payloads", "64"], "--payloads"),
        (vec!["--families", "6,5"], "--families"),
    ] {
        let out = ndr(9, &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(flag), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn ctrl_c_prints_the_trials_that_ran() {
    let server = ServerProc::start(&[]);
    let child = sonde()
        .args(["ndr", "::1", "-p", &server.port.to_string()])
        .args([
            "--payloads",
            "1400,1000,512",
            "--max-rate",
            "10M",
            "--trial",
            "1s",
        ])
        .args(["--confirm", "1s", "--gap", "0s", "-J"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = common::interrupt_after(child, Duration::from_millis(3500));
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let doc = json(&out);
    assert_valid(&method_v1(), &doc);
    assert_eq!(doc["interrupted"], true);
    let trials = doc["trials"].as_array().unwrap();
    assert!(!trials.is_empty() && trials.len() < 6, "{}", trials.len());
}

#[test]
fn sonde_run_takes_an_ndr_spec_and_names_its_keys() {
    let server = ServerProc::start(&[]);
    let dir = common::TempDir::new("ndr");
    let file = dir.join("ndr.toml");
    let spec = format!(
        "method = \"ndr\"\nsizes = [1000]\nsize_kind = \"payload\"\nmax_rate_bps = 10_000_000\n\
         trial_s = 0.3\nconfirm_s = 0.5\ngap_s = 0\n[trial]\nhost = \"::1\"\nport = {}\n",
        server.port
    );
    std::fs::write(&file, &spec).unwrap();
    let out = run(&["run", file.to_str().unwrap(), "-J"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = json(&out);
    assert_valid(&method_v1(), &doc);
    assert_eq!(doc["results"][0]["payload_bytes"], 1000);
    assert_eq!(doc["results"][0]["confirmed"], true);

    let bad = spec.replace("gap_s = 0\n", "gap_s = 0\nresolution_pct = 0\n");
    std::fs::write(&file, bad).unwrap();
    let out = run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("resolution_pct"), "{}", stderr(&out));
    let _ = std::fs::remove_dir_all(&dir);
}
