//! `sonde trace` as a test like the others, on loopback: its result is a
//! format-3 document with the hops, kept by `--archive`, listed and shown
//! again by `sonde results` and drawn as a path table by `sonde report`,
//! and a spec file with `test = "trace"` runs
//! the same trace (a mistake in it named by its key). The path through
//! routers is tests/lab/lab_trace.rs's.

use crate::common;
use common::schema::{assert_valid, result_v3};
use common::{sonde, stderr, TempDir};
use serde_json::Value;

fn run(args: &[&str], archive: &std::path::Path) -> std::process::Output {
    sonde()
        .args(args)
        .env("SONDE_ARCHIVE", archive)
        .output()
        .unwrap()
}

#[test]
fn a_trace_is_a_result_kept_listed_and_shown_again() {
    let dir = TempDir::new("trace-cli");
    let db = dir.join("sonde.db");
    let out = run(
        &[
            "trace",
            "::1",
            "-q",
            "2",
            "-J",
            "--archive",
            "--title",
            "lo",
        ],
        &db,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_valid(&result_v3(), &doc);
    assert_eq!(
        (&doc["test"], &doc["format_version"], &doc["title"]),
        (&Value::from("trace"), &Value::from(3), &Value::from("lo"))
    );
    let t = &doc["trace"];
    assert_eq!(
        (&t["target"], &t["arrived"]),
        (&"::1".into(), &true.into()),
        "{t}"
    );
    // Loopback is one hop: the target itself, both probes answered.
    let hops = t["hops"].as_array().unwrap();
    assert_eq!(hops.len(), 1, "{t}");
    for p in hops[0]["probes"].as_array().unwrap() {
        assert_eq!(
            (&p["from"], &p["answer"]),
            (&"::1".into(), &"echo_reply".into())
        );
    }
    assert_eq!(doc["env"]["target"], "::1");

    let id = doc["id"].as_str().unwrap();
    let listed = run(&["results", "list", "--test", "trace", "-J"], &db);
    assert!(listed.status.success(), "{}", stderr(&listed));
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let ids: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["id"].as_str())
        .collect();
    assert_eq!(ids, [id]);
    let shown = run(&["results", "show", id], &db);
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.status.success(), "{}", stderr(&shown));
    assert!(text.starts_with(&format!("trace {id} to ::1")), "{text}");
    assert!(
        text.contains("trace to ::1 (::1), 30 hops max, 2 probes each, ICMPv6 echo"),
        "{text}"
    );
    assert!(text.lines().any(|l| l.starts_with(" 1  ::1  ")), "{text}");
    let again = run(&["results", "show", id, "-J"], &db);
    let again: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(again["trace"], doc["trace"]);

    // The report draws it as 004's Table 2: a row per hop, each probe's
    // round trip in its column, under the group's name.
    let md = run(&["report", "--format", "md"], &db);
    assert!(md.status.success(), "{}", stderr(&md));
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(
        md.contains("### trace to ::1: the path to ::1 (::1), traced "),
        "{md}"
    );
    assert!(
        md.contains("| hop | address | probe 1 (ms) | probe 2 (ms) | DSCP arrived |"),
        "{md}"
    );
    assert!(md.lines().any(|l| l.starts_with("| 1 | ::1 | ")), "{md}");
    assert!(md.contains("one trace: no route to compare"), "{md}");
}

#[test]
fn a_spec_file_runs_a_trace_and_names_a_wrong_key() {
    let spec = common::TempFile::new(
        "trace.toml",
        "test = \"trace\"\nhost = \"127.0.0.1\"\nqueries = 1\nwait_s = \"500ms\"\n",
    );
    let out = sonde()
        .args(["run", spec.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("trace to 127.0.0.1 (127.0.0.1), 30 hops max, 1 probe each, ICMP echo"),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.starts_with(" 1  127.0.0.1  ")),
        "{text}"
    );
    let bad = common::TempFile::new("bad.toml", "test = \"trace\"\nhost = \"::1\"\nhops = 3\n");
    let out = sonde()
        .args(["run", bad.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("hops"), "{}", stderr(&out));
}
