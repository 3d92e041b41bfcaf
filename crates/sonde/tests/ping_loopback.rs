//! `sonde ping` over ICMP on loopback: counts, sweeps, intervals, Ctrl-C.
//! ICMP needs root (raw sockets) or `net.ipv4.ping_group_range`.

mod common;
use common::{sonde, stderr};

fn ping_json(args: &[&str]) -> serde_json::Value {
    let o = sonde().arg("ping").args(args).arg("-J").output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn every_request_is_answered_once_on_loopback() {
    for host in ["::1", "127.0.0.1"] {
        let r = ping_json(&[host, "-c", "50", "-i", "1ms"]);
        assert_eq!(r["env"]["target"], host);
        let rt = &r["summary"]["round_trip"];
        assert_eq!(
            (rt["sent_packets"].as_u64(), rt["received_packets"].as_u64()),
            (Some(50), Some(50)),
            "{r}"
        );
        assert_eq!(rt["duplicates"], 0);
        assert_eq!(rt["loss_pct"], 0.0);
        let rtt = &rt["rtt_ms"];
        let (min, p50, max) = (
            rtt["min"].as_f64().unwrap(),
            rtt["p50"].as_f64().unwrap(),
            rtt["max"].as_f64().unwrap(),
        );
        assert!(
            min > 0.0 && min <= p50 && p50 <= max && max < 100.0,
            "{rtt}"
        );
    }
}

#[test]
fn a_sweep_gives_one_series_per_size_and_a_table() {
    let r = ping_json(&["::1", "-c", "5", "-i", "2ms", "--sizes", "64,512,1408"]);
    let sizes: Vec<u64> = r["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["size_bytes"].as_u64().unwrap())
        .collect();
    assert_eq!(sizes, vec![64, 512, 1408]);
    assert_eq!(r["summary"]["round_trip"]["sent_packets"], 15);
    let text = sonde()
        .args([
            "ping",
            "127.0.0.1",
            "-c",
            "3",
            "-i",
            "2ms",
            "--sizes",
            "64,1408",
            "-q",
        ])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&text.stdout);
    assert!(
        out.contains("size") && out.contains("1408") && out.contains("rtt p50/p90/p99"),
        "{out}"
    );
}

#[test]
fn ctrl_c_stops_an_endless_ping_and_prints_what_it_found() {
    let child = sonde()
        .args(["ping", "::1", "-c", "0", "-i", "10ms", "-J"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = common::interrupt_after(child, std::time::Duration::from_millis(1000));
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["interrupted"], true);
    let sent = r["summary"]["round_trip"]["sent_packets"].as_u64().unwrap();
    assert!(sent >= 20, "{r}");
    // Answers in flight at the stop are waited for, not counted lost.
    assert_eq!(
        r["summary"]["round_trip"]["received_packets"].as_u64(),
        Some(sent),
        "{r}"
    );
}

#[test]
fn an_unreachable_name_is_a_clear_error() {
    let o = sonde()
        .args(["ping", "no-such-host.invalid", "-c", "1"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("no-such-host.invalid"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn each_reply_line_shows_its_ttl() {
    for host in ["::1", "127.0.0.1"] {
        let o = sonde()
            .args(["ping", host, "-c", "2", "-i", "5ms"])
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(out.matches(" ttl=64 ").count(), 2, "{host}: {out}");
    }
}

#[test]
fn a_reader_that_goes_away_early_ends_the_run_quietly() {
    use std::io::BufRead;
    let mut child = sonde()
        .args(["ping", "::1", "-c", "20", "-i", "5ms"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The reader is dropped here, as `| head -1` would.
    let out = child.wait_with_output().unwrap();
    assert!(first.starts_with("PING"), "{first}");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
}
