//! `sonde sweep` on loopback: the JSON document, the text tables and the
//! chart file of a short sweep, and usage errors naming their flag.

use crate::common;
use common::{sonde, stderr, ServerProc};

fn sweep(port: u16, args: &[&str]) -> std::process::Output {
    sonde()
        .args([
            "sweep",
            "::1",
            "-p",
            &port.to_string(),
            "--gap",
            "0.1s",
            "-t",
            "0.5s",
        ])
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_rate_sweep_on_loopback_has_its_steps_trials_and_limiter() {
    let server = ServerProc::start(&[]);
    let out = sweep(
        server.port,
        &[
            "--rates",
            "2M:6M:2M",
            "--directions",
            "forward,reverse",
            "-J",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["method"], "sweep");
    assert_eq!(r["spec"]["method"], "sweep");
    let steps = r["steps"].as_array().unwrap();
    let trials = r["trials"].as_array().unwrap();
    assert_eq!((steps.len(), trials.len()), (6, 6));
    for (s, t) in steps.iter().zip(trials) {
        assert_eq!(s["runs"]["result_ids"][0], t["id"]);
        let offered = s["offered_bps"].as_f64().unwrap();
        let asked = s["value"].as_f64().unwrap();
        assert!((offered / asked - 1.0).abs() < 0.02, "{s}");
    }
    let limiters = r["limiters"].as_array().unwrap();
    assert_eq!(limiters.len(), 2);
    for l in limiters {
        assert_eq!(
            l["class"], "none",
            "loopback has no limiter at 6 Mbit/s: {l}"
        );
    }
}

#[test]
fn the_text_has_a_table_per_direction_and_the_chart_is_written() {
    let server = ServerProc::start(&[]);
    let chart_dir = common::TempDir::new("swp-cli");
    let chart = chart_dir.join("swp-cli.svg");
    let out = sweep(
        server.port,
        &[
            "--payloads",
            "200,1400",
            "-b",
            "5M",
            "--chart",
            chart.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text.lines().filter(|l| l.starts_with("forward ")).count(),
        2,
        "{text}"
    );
    assert!(text.contains("\nforward\n  payload"), "{text}");
    assert!(
        !text.contains("limiter"),
        "a payload sweep names no limiter: {text}"
    );
    let svg = std::fs::read_to_string(&chart).unwrap();
    let _ = std::fs::remove_file(&chart);
    assert!(
        svg.contains("payload (B)") && svg.contains("forward: PDR"),
        "{svg}"
    );
}

#[test]
fn bad_sweeps_are_usage_errors_naming_the_flag() {
    for (args, flag) in [
        (vec!["--rates", "5M:1M"], "--rates"),
        (vec!["--rates", "0,1M"], "--rates"),
        (vec!["--windows", "64K", "--udp"], "--udp"),
        (vec!["--rates", "1M", "--directions", "up"], "--directions"),
        (vec!["--rates", "1M", "--payloads", "64"], "--payloads"),
        (
            vec!["--rates", "1M", "--chart", "/nonexistent/dir/x.svg"],
            "--chart",
        ),
    ] {
        let out = sweep(9, &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(flag), "{args:?}: {}", stderr(&out));
    }
    let out = sonde().args(["sweep", "::1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
