//! `sonde tcp` against `sonde serve` on loopback, both address families,
//! with parallel streams, reverse and bidirectional tests.

use crate::common;
use common::{tcp_json, u, ServerProc};

/// The summary must be the sum of its streams, and goodput must be the
/// bytes over the time they took.
fn check_consistent(r: &serde_json::Value) {
    let streams = r["streams"].as_array().unwrap();
    let received: u64 = streams.iter().map(|s| u(&s["received_bytes"])).sum();
    assert_eq!(received, u(&r["summary"]["total"]["received_bytes"]));
    assert!(received > 0, "no data moved: {r}");
    for d in ["forward", "reverse"] {
        let ds = &r["summary"][d];
        if ds.is_null() {
            continue;
        }
        let bps =
            u(&ds["received_bytes"]) as f64 * 8.0 / ds["receiver_duration_s"].as_f64().unwrap();
        let reported = u(&ds["throughput_bps"]) as f64;
        assert!(
            (bps - reported).abs() / reported < 0.01,
            "{d}: {bps} vs {reported}"
        );
    }
}

#[test]
fn ipv6_and_ipv4_loopback() {
    let server = ServerProc::start(&[]);
    for (host, v6) in [("::1", true), ("127.0.0.1", false)] {
        let r = tcp_json(host, server.port, &["-t", "1s"]);
        check_consistent(&r);
        let remote = r["streams"][0]["client_socket"]["remote"].as_str().unwrap();
        assert_eq!(
            remote.starts_with('['),
            v6,
            "{host}: stream went to {remote}"
        );
        assert_eq!(r["test"], "tcp");
        assert!(r["summary"]["reverse"].is_null());
        // Nothing was lost: with no warm-up every byte sent was received.
        let s = &r["streams"][0];
        assert_eq!(u(&s["sent_bytes"]), u(&s["received_bytes"]));
    }
}

#[test]
fn four_parallel_streams_each_carry_data() {
    let server = ServerProc::start(&[]);
    let r = tcp_json("::1", server.port, &["-t", "1s", "-P", "4"]);
    check_consistent(&r);
    let streams = r["streams"].as_array().unwrap();
    assert_eq!(streams.len(), 4);
    let mut ports: Vec<&str> = streams
        .iter()
        .map(|s| s["client_socket"]["local"].as_str().unwrap())
        .collect();
    ports.sort_unstable();
    ports.dedup();
    assert_eq!(ports.len(), 4, "four distinct connections");
    for s in streams {
        assert!(u(&s["received_bytes"]) > 0, "stream {} idle", s["stream"]);
    }
    // Interval sums add up their streams.
    for i in r["intervals"].as_array().unwrap() {
        let per_stream: u64 = i["streams"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| u(&s["received_bytes"]))
            .sum();
        assert_eq!(per_stream, u(&i["sums"][0]["received_bytes"]));
    }
}

#[test]
fn reverse_moves_data_from_server_to_client() {
    let server = ServerProc::start(&[]);
    let r = tcp_json("127.0.0.1", server.port, &["-t", "1s", "-R"]);
    check_consistent(&r);
    assert!(r["summary"]["forward"].is_null());
    let s = &r["streams"][0];
    assert_eq!(s["direction"], "reverse");
    // The server counted what it wrote, the client what it read: equal.
    assert!(u(&s["sent_bytes"]) > 0);
    assert_eq!(u(&s["sent_bytes"]), u(&s["received_bytes"]));
    // TCP_INFO comes from the sender, the server: its RTT is reported.
    assert!(s["srtt_ms"].as_f64().is_some());
}

#[test]
fn bidir_moves_data_both_ways_at_once() {
    let server = ServerProc::start(&[]);
    let r = tcp_json("::1", server.port, &["-t", "1s", "--bidir", "-P", "2"]);
    check_consistent(&r);
    let streams = r["streams"].as_array().unwrap();
    assert_eq!(streams.len(), 4);
    for d in ["forward", "reverse"] {
        let ds = &r["summary"][d];
        assert!(u(&ds["received_bytes"]) > 0, "{d} moved nothing");
        assert_eq!(u(&ds["streams"]), 2);
        assert_eq!(
            u(&ds["received_bytes"]),
            u(&ds["sent_bytes"]),
            "{d}: sent != received"
        );
    }
    // Both directions ran during the same intervals.
    let first = &r["intervals"][0]["sums"];
    assert_eq!(first.as_array().unwrap().len(), 2);
}

#[test]
fn a_server_runs_two_clients_at_once() {
    let server = ServerProc::start(&[]);
    let port = server.port;
    let other = std::thread::spawn(move || tcp_json("127.0.0.1", port, &["-t", "2s"]));
    let mine = tcp_json("::1", port, &["-t", "2s"]);
    let theirs = other.join().unwrap();
    check_consistent(&mine);
    check_consistent(&theirs);
}

#[test]
fn paced_streams_hold_their_rate() {
    let server = ServerProc::start(&[]);
    let r = tcp_json("::1", server.port, &["-t", "2s", "-b", "40M", "-P", "2"]);
    let total = &r["summary"]["total"];
    // Two streams paced at 40 Mbit/s each never run ahead: over 2 s,
    // 20 MB and one 10 ms write (50 kB) each.
    let sent = u(&total["sent_bytes"]) as f64;
    assert!(sent <= 20e6 + 2.0 * 50e3, "paced streams sent {sent} bytes");
    // What arrived, at the rate it was sent: 80 Mbit/s. A loaded machine
    // moves it either way by the time its threads wake late: a sender
    // stalled near the end does not catch up (-), a receiver reading its
    // first bytes late starts its clock late (+); a tenth either way is
    // a fifth of a second, and the faults this guards against (unpaced,
    // one stream's pace for both) are off by far more.
    let got = u(&total["throughput_bps"]) as f64;
    assert!(
        (0.9 * 80e6..=1.1 * 80e6).contains(&got),
        "paced goodput {got}"
    );
}

#[test]
fn human_output_has_intervals_and_a_summary() {
    let server = ServerProc::start(&[]);
    let out = common::tcp(
        "::1",
        server.port,
        &["-t", "2s", "-P", "2", "--title", "lo"],
    );
    assert!(out.status.success(), "{}", common::stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let interval_lines = text
        .lines()
        .filter(|l| l.contains("s ") && l.contains("[SUM]"))
        .count();
    assert!(
        interval_lines >= 3,
        "two interval SUM lines and summary lines:\n{text}"
    );
    assert!(
        text.contains("sender") && text.contains("receiver"),
        "{text}"
    );
    assert!(
        text.lines().all(|l| l.is_empty()
            || l.starts_with("lo: ")
            || l.starts_with("- -")
            || l.starts_with("[")
            || l.starts_with("in force")
            || l.starts_with("goodput")),
        "{text}"
    );
    assert!(text.contains("Gbit/s") || text.contains("Mbit/s"), "{text}");
}

#[test]
fn congestion_control_and_mss_are_applied_on_both_ends() {
    let server = ServerProc::start(&[]);
    let r = tcp_json(
        "::1",
        server.port,
        &["-t", "1s", "-C", "reno", "-M", "1200"],
    );
    let s = &r["streams"][0];
    assert_eq!(s["client_socket"]["congestion"], "reno");
    assert_eq!(s["server_socket"]["congestion"], "reno");
    let mss = u(&s["client_socket"]["mss_bytes"]);
    assert!((1000..=1200).contains(&mss), "client MSS {mss}");
    // The server's segments are bounded by the MSS the client announced.
    let server_mss = u(&s["server_socket"]["mss_bytes"]);
    assert!(server_mss <= 1200, "server MSS {server_mss}");
    assert_eq!(r["spec"]["congestion"], "reno");
    assert_eq!(u(&r["spec"]["mss_bytes"]), 1200);
}

#[test]
fn ctrl_c_stops_the_test_and_still_reports_what_ran() {
    let server = ServerProc::start(&[]);
    for direction in [None, Some("-R")] {
        let child = common::sonde()
            .args([
                "tcp",
                "::1",
                "-p",
                &server.port.to_string(),
                "-t",
                "30s",
                "-b",
                "50M",
                "-J",
            ])
            .args(direction)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let out = common::interrupt_after(child, std::time::Duration::from_millis(2500));
        assert_eq!(out.status.code(), Some(130), "{}", common::stderr(&out));
        let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(r["interrupted"], true);
        // Stopped at the signal (2.5 s), less a start-up that a loaded
        // machine can make 2 s long; not the 30 s asked.
        let secs = r["duration_s"].as_f64().unwrap();
        assert!(
            (0.5..10.0).contains(&secs),
            "{direction:?}: ran {secs} s, not 30"
        );
        // Rates over the time that ran, not over 30 s. The pacer never
        // runs ahead: 50 Mbit/s, plus one 10 ms write over that time.
        let total = &r["summary"]["total"];
        let offered = u(&total["sender_throughput_bps"]) as f64;
        assert!(
            offered <= 50e6 * (1.0 + 0.01 / secs) + 1.0,
            "{direction:?}: sent {offered} bit/s over the time that ran"
        );
        // What arrived, at that rate: a tenth either way for threads a
        // loaded machine wakes late (see paced_streams_hold_their_rate).
        let got = u(&total["throughput_bps"]) as f64;
        assert!(
            (0.9 * 50e6..=1.1 * 50e6).contains(&got),
            "{direction:?}: {got} bit/s over the time that ran"
        );
    }
    // The server is ready for the next test.
    let r = tcp_json("::1", server.port, &["-t", "1s"]);
    assert_eq!(r["interrupted"], false);
}
