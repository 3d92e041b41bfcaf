//! `--json=iperf3`: sonde's output in iperf3's layout parses with the same
//! script as iperf3's own `-J` output for the same test, and gives the
//! same fields (crates/sonde/tests/iperf3_json_check.py stands for a
//! script written for iperf3). Readers no one here wrote — the PyPI
//! `iperf3` package and the fields perfSONAR pScheduler's parser reads
//! (crates/sonde/tests/iperf3_consumers.py) — read every document, a
//! failure's too, and find in it what the run measured. Loopback only.

use crate::common;
use common::{sonde, stderr, Iperf3Server, ServerProc};
use std::process::{Command, Output};

fn checker(doc: &[u8], bidir: bool, what: &str) -> serde_json::Value {
    let dir = common::TempDir::new("iperf3-json");
    let file = dir.join(format!("{}.json", what.replace(' ', "_")));
    std::fs::write(&file, doc).unwrap();
    let mut cmd = Command::new("python3");
    cmd.arg(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/iperf3_json_check.py"
    ));
    if bidir {
        cmd.arg("--bidir");
    }
    let o = cmd.arg(&file).output().expect("python3");
    assert!(o.status.success(), "{what}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// The keys of a JSON value, recursively, with array members merged.
fn shape(v: &serde_json::Value, at: &str, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                let path = format!("{at}.{k}");
                out.push(path.clone());
                shape(v, &path, out);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|v| shape(v, &format!("{at}[]"), out)),
        _ => {}
    }
}

fn keys(v: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    shape(v, "", &mut out);
    out.sort();
    out.dedup();
    out
}

fn ok(o: Output, what: &str) -> Vec<u8> {
    assert!(o.status.success(), "{what}: {}", stderr(&o));
    o.stdout
}

#[test]
fn scripts_for_iperf3_read_sonde_as_they_read_iperf3() {
    let sonde_server = ServerProc::start(&["--no-reflector"]);
    let iperf3 = Iperf3Server::start_on(15_211);
    let iperf3_port = iperf3.port;
    let cases: [(&str, &[&str]); 6] = [
        ("tcp", &[]),
        ("tcp", &["-R", "-P", "2"]),
        ("tcp", &["--bidir"]),
        ("udp", &["-b", "10M"]),
        ("udp", &["-b", "10M", "-R"]),
        ("udp", &["-b", "10M", "--bidir", "-P", "2"]),
    ];
    for (proto, args) in cases {
        let what = format!("{proto} {}", args.join(" "));
        let bidir = args.contains(&"--bidir");
        let theirs = ok(
            Command::new("iperf3")
                .args(["-c", "::1", "-p", &iperf3_port.to_string(), "-t", "1", "-J"])
                .args(if proto == "udp" { &["-u"][..] } else { &[][..] })
                .args(args)
                .output()
                .unwrap(),
            &format!("iperf3 {what}"),
        );
        let ours = ok(
            sonde()
                .args([
                    proto,
                    "::1",
                    "-p",
                    &sonde_server.port.to_string(),
                    "-t",
                    "1s",
                    "--json=iperf3",
                ])
                .args(args)
                .output()
                .unwrap(),
            &format!("sonde {what}"),
        );
        let (a, b) = (
            checker(&theirs, bidir, &format!("iperf3 {what}")),
            checker(&ours, bidir, &format!("sonde {what}")),
        );
        assert_eq!(keys(&a), keys(&b), "{what}: the script finds other fields");
        for k in ["protocol", "num_streams", "reverse"] {
            assert_eq!(a[k], b[k], "{what}: {k}");
        }
        assert_eq!(
            a["connected"].as_array().map(Vec::len),
            b["connected"].as_array().map(Vec::len),
            "{what}: connected streams"
        );
    }
    // A document without a field a script reads is refused by name.
    let mut broken: serde_json::Value = serde_json::from_slice(&ok(
        sonde()
            .args([
                "tcp",
                "::1",
                "-p",
                &sonde_server.port.to_string(),
                "-t",
                "1s",
                "--json=iperf3",
            ])
            .output()
            .unwrap(),
        "sonde tcp",
    ))
    .unwrap();
    broken["end"].as_object_mut().unwrap().remove("sum_sent");
    let file =
        std::env::temp_dir().join(format!("sonde-iperf3-broken-{}.json", std::process::id()));
    std::fs::write(&file, serde_json::to_vec(&broken).unwrap()).unwrap();
    let o = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/iperf3_json_check.py"
        ))
        .arg(&file)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(stderr(&o).contains("sum_sent"), "{}", stderr(&o));
    drop(iperf3);
}

/// Both foreign readers' view of `doc` (iperf3_consumers.py), given the
/// exit status of the run that printed it.
fn consumers(doc: &[u8], status: i32, what: &str) -> serde_json::Value {
    let dir = common::TempDir::new("iperf3-consumers");
    let file = dir.join(format!("{}.json", what.replace([' ', '/'], "_")));
    std::fs::write(&file, doc).unwrap();
    let o = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/iperf3_consumers.py"
        ))
        .arg(&file)
        .arg(status.to_string())
        .output()
        .expect("python3");
    assert!(o.status.success(), "{what}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{what}: {e}"))
}

fn num(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// `a` and `b` equal to a part in a million (a reader's unit conversion).
fn same(a: f64, b: f64, what: &str) {
    assert!(
        (a - b).abs() <= 1e-6 * b.abs().max(1.0),
        "{what}: {a} vs {b}"
    );
}

#[test]
fn the_pypi_package_and_pscheduler_read_every_document() {
    let server = ServerProc::start(&["--no-reflector"]);
    let port = server.port.to_string();
    let cases: [(&str, &[&str]); 6] = [
        ("tcp", &[]),
        ("tcp", &["-R"]),
        ("tcp", &["--bidir"]),
        ("tcp", &["-P", "4"]),
        ("udp", &["-b", "10M"]),
        ("udp", &["-b", "10M", "-R"]),
    ];
    for (proto, args) in cases {
        let what = format!("{proto} {}", args.join(" "));
        let o = sonde()
            .args([proto, "127.0.0.1", "-p", &port, "-t", "1s", "--json=iperf3"])
            .args(args)
            .output()
            .unwrap();
        let text = ok(o, &what);
        let doc: serde_json::Value = serde_json::from_slice(&text).unwrap();
        let seen = consumers(&text, 0, &what);
        let (pypi, ps) = (&seen["pypi"], &seen["pscheduler"]);
        // What the run was asked for.
        let streams = if args.contains(&"-P") { 4 } else { 1 };
        assert_eq!(pypi["error"], serde_json::Value::Null, "{what}");
        assert_eq!(pypi["protocol"], proto.to_uppercase(), "{what}");
        assert_eq!(pypi["num_streams"], streams, "{what}");
        assert_eq!(pypi["reverse"], args.contains(&"-R"), "{what}");
        assert_eq!(pypi["type"], "client", "{what}");
        assert_eq!(pypi["remote_host"], "127.0.0.1", "{what}");
        assert_eq!(pypi["duration"], 1, "{what}");
        let end = &doc["end"];
        if proto == "tcp" {
            // The package's figures are the document's, in its units.
            let (sent, received) = (&end["sum_sent"], &end["sum_received"]);
            assert_eq!(pypi["sent_bytes"], sent["bytes"], "{what}");
            assert_eq!(pypi["received_bytes"], received["bytes"], "{what}");
            assert_eq!(pypi["retransmits"], sent["retransmits"], "{what}");
            same(
                num(&pypi["sent_Mbps"]),
                num(&sent["bits_per_second"]) / 1e6,
                &what,
            );
            same(
                num(&pypi["received_Mbps"]),
                num(&received["bits_per_second"]) / 1e6,
                &what,
            );
            // TCP delivers what was sent, none that was not: within the
            // bytes still in flight or unread when the test ended, which
            // a receiver stalled on a loaded machine makes up to a fifth
            // of this 1 s test (a fifth of a second).
            let (s, r) = (num(&pypi["sent_bytes"]), num(&pypi["received_bytes"]));
            assert!(
                r > 0.0 && r <= s && r > 0.8 * s,
                "{what}: sent {s} received {r}"
            );
        } else {
            let sum = &end["sum"];
            for k in ["bytes", "packets", "lost_packets"] {
                assert_eq!(pypi[k], sum[k], "{what}: {k}");
            }
            same(num(&pypi["jitter_ms"]), num(&sum["jitter_ms"]), &what);
            same(num(&pypi["lost_percent"]), num(&sum["lost_percent"]), &what);
            same(
                num(&pypi["Mbps"]),
                num(&sum["bits_per_second"]) / 1e6,
                &what,
            );
            // 10 Mbit/s of 1400-byte payloads for 1 s: 893 packets.
            let packets = num(&pypi["packets"]);
            assert!((packets - 893.0).abs() <= 45.0, "{what}: {packets} packets");
            let lost = num(&pypi["lost_percent"]);
            assert!((0.0..=100.0).contains(&lost), "{what}: {lost} %");
        }
        // pScheduler: an interval per interval, its summary from
        // end.sum_sent (present for UDP too since 3.11), a stream
        // summary per stream and direction.
        assert_eq!(ps["succeeded"], true, "{what}");
        let per_direction = if args.contains(&"--bidir") { 2 } else { 1 };
        let intervals = ps["intervals"].as_array().unwrap();
        assert_eq!(intervals.len(), doc["intervals"].as_array().unwrap().len());
        assert!(!intervals.is_empty(), "{what}");
        for (mine, theirs) in intervals.iter().zip(doc["intervals"].as_array().unwrap()) {
            assert_eq!(mine["summary"]["throughput-bytes"], theirs["sum"]["bytes"]);
            let n = mine["streams"].as_array().unwrap().len();
            assert_eq!(n, streams * per_direction, "{what}");
        }
        let summary = &ps["summary"]["summary"];
        assert_eq!(
            summary["throughput-bits"],
            end["sum_sent"]["bits_per_second"]
        );
        assert_eq!(summary["throughput-bytes"], end["sum_sent"]["bytes"]);
        let stream_summaries = ps["summary"]["streams"].as_array().unwrap();
        assert_eq!(stream_summaries.len(), streams * per_direction, "{what}");
        if proto == "tcp" {
            assert!(summary["retransmits"].is_u64(), "{what}: {summary}");
            assert!(stream_summaries.iter().all(|s| s["rtt"].is_u64()), "{what}");
        } else {
            assert!(stream_summaries
                .iter()
                .all(|s| s["lost"].is_u64() && s["jitter"].is_f64()));
        }
    }
    // A failure: both read `error`, as they do iperf3's.
    for proto in ["tcp", "udp"] {
        let o = sonde()
            .args([
                proto,
                "127.0.0.1",
                "-p",
                "17398",
                "-t",
                "1s",
                "--json=iperf3",
            ])
            .output()
            .unwrap();
        let status = o.status.code().unwrap();
        assert_eq!(status, 1, "{}", stderr(&o));
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let error = doc["error"].as_str().unwrap();
        assert!(error.contains("refused"), "{error}");
        let seen = consumers(&o.stdout, status, &format!("{proto} failure"));
        assert_eq!(seen["pypi"]["error"], error);
        assert_eq!(seen["pscheduler"]["succeeded"], false);
        assert_eq!(
            seen["pscheduler"]["error"],
            format!("iperf3 returned an error: {error}")
        );
    }
}
