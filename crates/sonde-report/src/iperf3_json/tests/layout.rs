//! Key layout and number types against real iperf3 output, and a
//! script written for iperf3 reading sonde's document.

use super::{converted, iperf3, CASES};
use crate::iperf3_json::ADDED_AFTER_3_12;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Every key path of `v`. Stream and connection positions are kept
/// (`end.streams[1].sender.bytes`); intervals, whose number depends on
/// timing, are written `intervals[]`; `collapse_all` writes every
/// position `[]`.
fn layout(v: &Value, collapse_all: bool) -> BTreeSet<String> {
    fn walk(v: &Value, path: String, key: &str, collapse_all: bool, out: &mut BTreeSet<String>) {
        match v {
            Value::Object(m) if !m.is_empty() => {
                for (k, x) in m {
                    let p = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    walk(x, p, k, collapse_all, out);
                }
            }
            Value::Array(a) if !a.is_empty() => {
                for (i, x) in a.iter().enumerate() {
                    let at = if collapse_all || key == "intervals" {
                        "[]".to_string()
                    } else {
                        format!("[{i}]")
                    };
                    walk(x, format!("{path}{at}"), key, collapse_all, out);
                }
            }
            _ => {
                out.insert(path);
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(v, String::new(), "", collapse_all, &mut out);
    out
}

/// "missing …/extra …" lines for two layouts, empty when equal.
fn differences(case: &str, ours: &BTreeSet<String>, theirs: &BTreeSet<String>) -> Vec<String> {
    let missing = theirs
        .difference(ours)
        .map(|k| format!("{case}: missing {k}"));
    let extra = ours
        .difference(theirs)
        .map(|k| format!("{case}: extra {k}"));
    missing.chain(extra).collect()
}

#[test]
fn layout_is_iperf3_3_21_for_every_case() {
    let problems: Vec<String> = CASES
        .iter()
        .flat_map(|case| {
            differences(
                case,
                &layout(&converted(case), false),
                &layout(&iperf3("3.21", case), false),
            )
        })
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn iperf3_3_12_lacks_only_the_listed_keys() {
    let listed: BTreeSet<String> = ADDED_AFTER_3_12.iter().map(|k| k.to_string()).collect();
    let mut seen = BTreeSet::new();
    for case in CASES {
        let ours = layout(&converted(case), true);
        let old = layout(&iperf3("3.12", case), true);
        let missing: Vec<_> = old.difference(&ours).collect();
        assert!(missing.is_empty(), "{case}: 3.12 has {missing:?}");
        let added: BTreeSet<String> = ours.difference(&old).cloned().collect();
        let unlisted: Vec<_> = added.difference(&listed).collect();
        assert!(unlisted.is_empty(), "{case}: not in 3.12: {unlisted:?}");
        seen.extend(added);
    }
    assert_eq!(seen, listed, "every listed key shows up in some case");
}

/// Keys iperf3 writes as integers, and as floats (rates, times, ratios).
const INTEGER_KEYS: &[&str] = &[
    "bytes",
    "packets",
    "lost_packets",
    "out_of_order",
    "retransmits",
    "reorder",
    "socket",
    "snd_cwnd",
    "snd_wnd",
    "rtt",
    "rttvar",
    "pmtu",
    "max_snd_cwnd",
    "max_snd_wnd",
    "max_rtt",
    "min_rtt",
    "mean_rtt",
    "local_port",
    "remote_port",
    "port",
    "num_streams",
    "blksize",
    "timesecs",
    "timemillisecs",
    "sndbuf_actual",
    "rcvbuf_actual",
    "tcp_mss_default",
    "target_bitrate",
];
const FLOAT_KEYS: &[&str] = &[
    "bits_per_second",
    "seconds",
    "start",
    "end",
    "jitter_ms",
    "lost_percent",
    "host_total",
    "remote_total",
];

#[test]
fn counts_are_integers_and_rates_are_floats() {
    fn check(v: &Value, key: &str, case: &str) {
        match v {
            Value::Object(m) => m.iter().for_each(|(k, x)| check(x, k, case)),
            Value::Array(a) => a.iter().for_each(|x| check(x, key, case)),
            Value::Number(n) if INTEGER_KEYS.contains(&key) => {
                assert!(n.is_u64(), "{case}: {key} = {n} is not an integer")
            }
            Value::Number(n) if FLOAT_KEYS.contains(&key) => {
                assert!(n.is_f64(), "{case}: {key} = {n} is not a float")
            }
            _ => {}
        }
    }
    for case in CASES {
        check(&converted(case), "", case);
    }
}

/// The Python checker that stands for "a script written for iperf3".
fn checker() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../sonde/tests/iperf3_json_check.py")
}

/// Runs the checker on `doc`: exit success, stdout, stderr; `None` when
/// there is no `python3` to run it.
fn run_checker(doc: &Value, name: &str, bidir: bool) -> Option<(bool, String, String)> {
    let path = std::env::temp_dir().join(format!(
        "sonde-iperf3-json-{}-{name}.json",
        std::process::id()
    ));
    std::fs::write(&path, doc.to_string()).expect("write a temporary file");
    let mut cmd = Command::new("python3");
    cmd.arg(checker());
    if bidir {
        cmd.arg("--bidir");
    }
    let out = cmd.arg(&path).output();
    let _ = std::fs::remove_file(&path);
    match out {
        Ok(o) => Some((
            o.status.success(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => panic!("python3: {e}"),
    }
}

#[test]
fn a_script_for_iperf3_reads_sonde_as_it_reads_iperf3() {
    for case in CASES {
        let bidir = case.contains("bidir");
        let mut shapes = Vec::new();
        for (name, doc) in [
            ("sonde", converted(case)),
            ("3.12", iperf3("3.12", case)),
            ("3.21", iperf3("3.21", case)),
        ] {
            let Some((ok, out, err)) = run_checker(&doc, &format!("{name}-{case}"), bidir) else {
                eprintln!("python3 not found: checker not run");
                return;
            };
            assert!(ok, "{name} {case}: {err}");
            let fields: Value = serde_json::from_str(&out).expect("one JSON line");
            assert_eq!(
                fields["num_streams"],
                if case.ends_with('2') { 2 } else { 1 }
            );
            shapes.push((name, layout(&fields, false)));
        }
        for (name, shape) in &shapes[1..] {
            let problems = differences(&format!("{case} vs {name}"), &shapes[0].1, shape);
            assert!(problems.is_empty(), "{}", problems.join("\n"));
        }
    }
}

#[test]
fn the_checker_names_a_missing_key() {
    let mut doc = converted("udp_fwd_1");
    if let Some(end) = doc["end"].as_object_mut() {
        end.remove("sum_received");
    }
    let Some((ok, _, err)) = run_checker(&doc, "missing", false) else {
        eprintln!("python3 not found: checker not run");
        return;
    };
    assert!(!ok);
    assert!(err.contains("end.sum_received"), "{err}");
}
