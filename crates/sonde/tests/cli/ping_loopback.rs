//! `sonde ping` over ICMP on loopback: counts, sweeps, intervals, Ctrl-C,
//! and the flags iputils users reach for (-t, -w, -I, -n, -D).
//! ICMP needs root (raw sockets) or `net.ipv4.ping_group_range`.

use crate::common;
use common::{sonde, stderr, ServerProc};

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
        // Loopback answers in microseconds: the median well under 10 ms
        // (a unit wrong by a thousand shows), while one answer a loaded
        // machine holds up only has to come within the run's -W (2 s).
        assert!(
            min > 0.0 && min <= p50 && p50 <= max && p50 < 10.0 && max < 1000.0,
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
    // It pinged until the signal: 5 of the 100 a second allows, so a
    // start-up as slow as 0.95 s on a loaded machine still passes.
    assert!(sent >= 5, "{r}");
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

/// `sonde ping ARGS` as text; panics unless it succeeds.
fn ping_text(args: &[&str]) -> String {
    let o = sonde().arg("ping").args(args).output().unwrap();
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The sequence numbers of the answer lines, in order (`label=N`).
fn seqs(out: &str, label: &str) -> Vec<u64> {
    out.lines()
        .filter_map(|l| l.split(&format!(" {label}=")).nth(1))
        .filter_map(|rest| rest.split(' ').next()?.parse().ok())
        .collect()
}

#[test]
fn sequence_numbers_start_at_1_as_iputils_counts() {
    for host in ["::1", "127.0.0.1"] {
        let out = ping_text(&[host, "-c", "3", "-i", "5ms"]);
        assert_eq!(seqs(&out, "icmp_seq"), vec![1, 2, 3], "{host}: {out}");
    }
    // STAMP to the reflector of `sonde serve`: the lines count from 1 too
    // (the wire's STAMP numbers from 0, as RFC 8762 has it).
    let server = ServerProc::start(&["--reflector-port", "0"]);
    let port = server.reflector_port().to_string();
    let out = ping_text(&["::1", "--proto", "udp", "-p", &port, "-c", "3", "-i", "5ms"]);
    assert_eq!(seqs(&out, "seq"), vec![1, 2, 3], "{out}");
}

#[test]
fn a_ttl_of_1_still_reaches_loopback_and_256_is_a_usage_error() {
    for host in ["::1", "127.0.0.1"] {
        let r = ping_json(&[host, "-c", "3", "-i", "5ms", "-t", "1"]);
        assert_eq!(r["spec"]["ttl"], 1);
        assert_eq!(r["summary"]["round_trip"]["received_packets"], 3, "{r}");
    }
    for bad in ["0", "256"] {
        let o = sonde()
            .args(["ping", "::1", "-c", "1", "-t", bad])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("-t/--ttl"), "{}", stderr(&o));
    }
}

#[test]
fn a_deadline_ends_the_run_before_the_count() {
    // 1000 requests 10 ms apart take 10 s; the deadline stops it at 0.3 s.
    let r = ping_json(&["::1", "-c", "1000", "-i", "10ms", "-w", "300ms"]);
    let rt = &r["summary"]["round_trip"];
    let received = rt["received_packets"].as_u64().unwrap();
    assert!(received > 0 && received < 1000, "{r}");
    assert!(rt["sent_packets"].as_u64().unwrap() < 1000, "{r}");
    assert_eq!(r["spec"]["deadline_s"], 0.3);
    assert_eq!(r["interrupted"], false);
    // With a deadline far off, the count is of answers and ends the run.
    let r = ping_json(&["127.0.0.1", "-c", "5", "-i", "5ms", "-w", "1m"]);
    assert_eq!(r["summary"]["round_trip"]["received_packets"], 5, "{r}");
}

#[test]
fn requests_leave_from_the_interface_or_address_asked_for() {
    for (host, from) in [
        ("::1", "lo"),
        ("127.0.0.1", "lo"),
        ("::1", "::1"),
        ("127.0.0.1", "127.0.0.1"),
    ] {
        let r = ping_json(&[host, "-c", "3", "-i", "5ms", "-I", from]);
        assert_eq!(r["spec"]["interface"], from);
        assert_eq!(r["summary"]["round_trip"]["received_packets"], 3, "{r}");
    }
    // A source address picks the target's family.
    let r = ping_json(&["localhost", "-c", "1", "-I", "127.0.0.1"]);
    assert_eq!(r["env"]["target"], "127.0.0.1", "{r}");
    let o = sonde()
        .args(["ping", "::1", "-c", "1", "-I", "nosuchif"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no network interface named 'nosuchif'"),
        "{}",
        stderr(&o)
    );
    // Not an interface name at all: a usage error naming -I.
    let o = sonde()
        .args(["ping", "::1", "-c", "1", "-I", "a/b"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("-I/--interface"), "{}", stderr(&o));
}

#[test]
fn d_puts_the_unix_time_before_each_answer_and_n_changes_nothing() {
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
    };
    let before = now();
    let out = ping_text(&["::1", "-c", "3", "-i", "5ms", "-D", "-n"]);
    let after = now();
    let stamps: Vec<f64> = out
        .lines()
        .filter(|l| l.contains("icmp_seq="))
        .map(|l| {
            let inner = l
                .strip_prefix('[')
                .and_then(|l| l.split_once("] "))
                .unwrap_or_else(|| panic!("no timestamp: {l}"))
                .0;
            // Microseconds, as iputils: 6 decimals.
            assert_eq!(inner.split_once('.').map(|(_, f)| f.len()), Some(6), "{l}");
            inner.parse().unwrap()
        })
        .collect();
    assert_eq!(stamps.len(), 3, "{out}");
    assert!(
        stamps.windows(2).all(|w| w[0] <= w[1]) && before <= stamps[0] && stamps[2] <= after,
        "{before} {stamps:?} {after}"
    );
    // Without -D, no timestamps; -n is what sonde always does.
    let plain = ping_text(&["::1", "-c", "1", "-n"]);
    assert!(
        plain
            .lines()
            .any(|l| l.starts_with("64 bytes from ::1: icmp_seq=1 ")),
        "{plain}"
    );
}
