//! `--repeat`, `--until-stddev` and their usage errors on the real
//! binary against a real `sonde serve` on loopback; every repeat
//! document is checked against docs/schema/method-v1.schema.json.

use crate::common;
use common::cli::{json, run};
use common::schema::{assert_rejects, assert_valid, method_v1, remove};
use common::{sonde, stderr, tcp, u, ServerProc};
use serde_json::Value;
use std::process::Stdio;
use std::time::Duration;

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn ids(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|id| id.as_str().expect("an id").to_string())
        .collect()
}

#[test]
fn tcp_repeat_three_keeps_every_run_and_its_statistics() {
    let server = ServerProc::start(&[]);
    let out = tcp("::1", server.port, &["-t", "1", "--repeat", "3", "-J"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = json(&out);
    let v = method_v1();
    assert_valid(&v, &doc);
    assert_eq!(doc["method"], "repeat");
    assert_eq!(doc["format_version"], 1);
    assert_eq!(doc["interrupted"], false);
    assert_eq!(doc["spec"]["step"]["repeat"]["rule"], "times");

    let trials = doc["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 3);
    let trial_ids: Vec<String> = trials
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_string())
        .collect();
    let mut distinct = trial_ids.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 3, "distinct ids: {trial_ids:?}");

    let runs = &doc["runs"];
    assert_eq!(runs["metric"], "throughput_bps");
    let stats = runs["stats"].as_array().unwrap();
    assert_eq!(stats.len(), 1, "one family, one direction: {runs}");
    assert_eq!(stats[0]["family"], "v6", "the family ::1 used");
    assert_eq!(ids(&stats[0]["result_ids"]), trial_ids, "in run order");

    let tp = &stats[0]["stats"]["throughput_bps"];
    assert_eq!(u(&tp["n"]), 3);
    let values: Vec<f64> = trials
        .iter()
        .map(|t| num(&t["summary"]["total"]["throughput_bps"]))
        .collect();
    let mean = values.iter().sum::<f64>() / 3.0;
    assert!(
        (num(&tp["mean"]) - mean).abs() <= 1e-6 * mean,
        "{tp} vs {values:?}"
    );
    let sd = (values.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
    assert!(
        (num(&tp["stddev"]) - sd).abs() <= 1e-6 * mean + 1e-6,
        "{tp}"
    );
    // Student's t for 2 degrees of freedom: 4.303.
    let ci = 4.303 * sd / 3f64.sqrt();
    assert!((num(&tp["ci95"]) - ci).abs() <= 1e-6 * mean + 1e-6, "{tp}");
    assert_eq!(
        num(&tp["min"]),
        values.iter().copied().fold(f64::MAX, f64::min)
    );
    assert_eq!(num(&tp["max"]), values.iter().copied().fold(0.0, f64::max));

    // The document reads back into the model, each trial findable by id.
    let back: sonde_model::MethodResult = serde_json::from_value(doc.clone()).unwrap();
    let outcome = back.runs.as_ref().unwrap();
    for id in &outcome.stats[0].result_ids {
        assert!(back.trial(*id).is_some());
    }

    // The schema is strict enough to refuse a broken document.
    assert_rejects(&v, &doc, "no trials", |d| remove(d, "trials"));
    assert_rejects(&v, &doc, "unknown metric", |d| {
        d["runs"]["metric"] = "speed".into();
    });
    assert_rejects(&v, &doc, "a trial without its id", |d| {
        remove(&mut d["trials"][0], "id");
    });
    assert_rejects(&v, &doc, "repeat without runs", |d| remove(d, "runs"));
}

#[test]
fn the_text_shows_a_line_per_run_then_the_table() {
    let server = ServerProc::start(&[]);
    let out = tcp("::1", server.port, &["-t", "1", "--repeat", "2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("run   1  IPv6  throughput "), "{text}");
    assert!(text.contains("run   2  IPv6  throughput "), "{text}");
    assert!(text.contains("Repeated: 2 runs"), "{text}");
    assert!(text.contains("95 % CI"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("throughput       2 ")),
        "{text}"
    );
}

#[test]
fn ping_until_stable_stops_within_its_bounds() {
    let out = run(&[
        "ping",
        "::1",
        "-c",
        "5",
        "-i",
        "10ms",
        "-W",
        "1s",
        "--until-stddev",
        "50%",
        "--min-runs",
        "3",
        "--max-runs",
        "5",
        "-J",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = json(&out);
    assert_valid(&method_v1(), &doc);
    let n = doc["trials"].as_array().unwrap().len();
    assert!((3..=5).contains(&n), "{n} runs");
    let s = &doc["runs"]["stats"][0];
    assert_eq!(doc["runs"]["metric"], "rtt_p50_ms");
    assert_eq!(u(&s["stats"]["rtt_p50_ms"]["n"]) as usize, n);
    // Stable, or it ran to the most it may.
    let stable = s["stable"].as_bool().expect("until-stable says whether");
    assert!(stable || n == 5, "{s}");
    if stable {
        assert!(num(&s["stats"]["rtt_p50_ms"]["stddev_pct"]) <= 50.0, "{s}");
    }
}

#[test]
fn bad_repeat_flags_are_usage_errors_naming_the_flag() {
    let cases: [(&[&str], &str); 7] = [
        (
            &[
                "tcp",
                "::1",
                "--until-stddev",
                "1%",
                "--min-runs",
                "10",
                "--max-runs",
                "5",
            ],
            "--min-runs/--max-runs",
        ),
        (&["tcp", "::1", "--repeat", "0"], "--repeat"),
        (
            &["udp", "::1", "--repeat", "2", "--json=iperf3"],
            "--json=iperf3",
        ),
        (&["tcp", "::1", "-4", "--families", "6,4"], "--families"),
        (&["ping", "::1", "--families", "5"], "--families"),
        // ::1 has no IPv4 address: refused before any run.
        (
            &["ping", "::1", "-c", "1", "--families", "6,4"],
            "--families",
        ),
        (&["tcp", "::1", "--until-stddev", "x"], "--until-stddev"),
    ];
    for (args, flag) in cases {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let all = stderr(&out) + &String::from_utf8_lossy(&out.stdout);
        assert!(all.contains(flag), "{args:?} should name {flag}: {all}");
    }
}

#[test]
fn an_until_stable_metric_the_test_lacks_is_refused() {
    let server = ServerProc::start(&[]);
    let out = tcp(
        "::1",
        server.port,
        &[
            "-t",
            "1",
            "--until-stddev",
            "1%",
            "--min-runs",
            "2",
            "--metric",
            "jitter_ms",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--metric"), "{}", stderr(&out));
}

#[test]
fn ctrl_c_prints_the_runs_that_finished() {
    let server = ServerProc::start(&[]);
    let child = sonde()
        .args(["tcp", "::1", "-p", &server.port.to_string()])
        .args(["-t", "1", "--repeat", "20", "-J"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = common::interrupt_after(child, Duration::from_millis(2500));
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let doc = json(&out);
    assert_valid(&method_v1(), &doc);
    assert_eq!(doc["interrupted"], true);
    let trials = doc["trials"].as_array().unwrap();
    assert!(!trials.is_empty() && trials.len() < 20, "{}", trials.len());
    // The run cut short is kept but not counted.
    let cut: Vec<&Value> = trials.iter().filter(|t| t["interrupted"] == true).collect();
    let counted = ids(&doc["runs"]["stats"][0]["result_ids"]);
    assert_eq!(counted.len() + cut.len(), trials.len());
}

#[test]
fn sonde_run_takes_a_repeat_method_spec() {
    let server = ServerProc::start(&[]);
    let dir = common::TempDir::new("repeat");
    let file = dir.join("repeat.toml");
    std::fs::write(
        &file,
        format!(
            "method = \"repeat\"\n[test]\ntest = \"udp\"\nhost = \"::1\"\nport = {}\ntime_s = 1\n\
             bitrate_bps = \"10M\"\n[step.repeat]\nrule = \"times\"\nruns = 2\n",
            server.port
        ),
    )
    .unwrap();
    let out = run(&["run", file.to_str().unwrap(), "-J"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = json(&out);
    assert_valid(&method_v1(), &doc);
    assert_eq!(doc["spec"]["test"]["test"], "udp");
    assert_eq!(doc["trials"].as_array().unwrap().len(), 2);
    let loss = &doc["runs"]["stats"][0]["stats"]["loss_pct"];
    assert_eq!(u(&loss["n"]), 2, "{loss}");

    // A broken plan in a file names the key, not a flag.
    std::fs::write(
        &file,
        "method = \"repeat\"\n[test]\ntest = \"udp\"\nhost = \"::1\"\n[step.repeat]\n\
         rule = \"until_stable\"\nstddev_pct = 1\nmin_runs = 9\nmax_runs = 3\n",
    )
    .unwrap();
    let out = run(&["run", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("step.repeat.min_runs"),
        "{}",
        stderr(&out)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
