//! `sonde udp` against `sonde serve` on loopback: rates, directions,
//! parallel streams, DSCP, profiles, bad input and limits.

use crate::common;
use common::{sonde, stderr, u, ServerProc};

fn udp_json(host: &str, port: u16, args: &[&str]) -> serde_json::Value {
    let out = sonde()
        .args(["udp", host, "-p", &port.to_string(), "-J"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "sonde udp {args:?}: {}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn paced_stream_arrives_whole_at_its_rate() {
    let server = ServerProc::start(&[]);
    for host in ["::1", "127.0.0.1"] {
        let r = udp_json(host, server.port, &["-t", "2s", "-b", "8M", "-l", "1000"]);
        let s = &r["summary"]["forward"];
        // 8 Mbit/s of 1000-byte payloads for 2 s: 2000 packets.
        common::assert_udp_delivered(s, 2000, host);
        let delivered = f(&s["received_packets"]) / 2000.0;
        assert_eq!(f(&s["pdr_pct"]), f(&s["received_packets"]) * 100.0 / 2000.0);
        let offered = f(&s["sender_throughput_bps"]);
        assert!((offered - 8e6).abs() / 8e6 < 0.005, "offered {offered}");
        // What arrived, at the rate it was sent.
        let got = f(&s["throughput_bps"]);
        let expected = 8e6 * delivered;
        assert!((got - expected).abs() / expected < 0.02, "received {got}");
        // Loopback adds almost none; one scheduling stall moves it by a
        // sixteenth of its length.
        assert!(f(&s["jitter_ms"]) < 3.0, "jitter {}", s["jitter_ms"]);
        assert_eq!(r["test"], "udp");
        assert_eq!(r["intervals"].as_array().unwrap().len(), 2);
    }
}

#[test]
fn reverse_parallel_and_marked() {
    let server = ServerProc::start(&[]);
    let r = udp_json(
        "::1",
        server.port,
        &["-t", "1s", "-R", "-P", "2", "-S", "AF41", "-b", "2M"],
    );
    assert!(r["summary"]["forward"].is_null());
    let s = &r["summary"]["reverse"];
    assert_eq!(u(&s["streams"]), 2);
    // 2 Mbit/s of 1400-byte payloads for 1 s: a departure every 5.6 ms
    // before the end, 179 a stream; on loopback at most a tenth lost.
    common::assert_udp_delivered(s, 2 * 179, "reverse");
    assert_eq!(u(&s["dscp_sent"]["34"]), u(&s["sent_packets"]));
    assert_eq!(u(&s["dscp_received"]["34"]), u(&s["received_packets"]));
    assert!(s.get("remarks").is_none(), "no packet was remarked: {s}");
    assert_eq!(r["streams"][0]["server_socket"]["dscp"], 34);
}

#[test]
fn bidir_reports_each_direction() {
    let server = ServerProc::start(&[]);
    let r = udp_json(
        "127.0.0.1",
        server.port,
        &["-t", "1s", "--bidir", "-b", "1M"],
    );
    // 1 Mbit/s of 1400-byte payloads for 1 s: a departure every 11.2 ms
    // before the end, 90 each way; on loopback at most a tenth lost.
    for d in ["forward", "reverse"] {
        common::assert_udp_delivered(&r["summary"][d], 90, d);
    }
}

#[test]
fn video_reports_loss_per_dscp_and_frame_type() {
    let server = ServerProc::start(&[]);
    let r = udp_json(
        "::1",
        server.port,
        &["-t", "2s", "--profile", "video", "-b", "2M", "-l", "1200"],
    );
    let classes = r["summary"]["forward"]["classes"].as_array().unwrap();
    let dscps: Vec<u64> = classes.iter().map(|c| u(&c["dscp"])).collect();
    assert_eq!(dscps, [10, 12, 14], "AF11 I, AF12 P, AF13 B frames");
    // Every class sent, none received that was not sent, and on
    // loopback at most a tenth lost (an I frame's 32-packet burst into a
    // stalled receiver is the machine's loss, not sonde's).
    for c in classes {
        let (sent, received, lost) = (
            u(&c["sent_packets"]),
            u(&c["received_packets"]),
            u(&c["lost_packets"]),
        );
        assert!(sent > 0, "{c}");
        assert!(received + lost <= sent, "{c}");
        assert!(received * 10 >= sent * 9, "{c}");
    }
    // Per frame type: 2 Mbit/s at 25 frames/s in groups of 12 frames
    // (I BB P BB P BB P BB) is 120,000 bytes a group, sized I:P:B = 8:3:1:
    // an I frame 38,400 bytes (32 packets of 1200), a P 14,400 (12), a B
    // 4,800 (4). 2 s are 50 frames: 4 whole groups, then an I and a B.
    let frames = r["summary"]["forward"]["frames"].as_array().unwrap();
    let got: Vec<(&str, u64, u64)> = frames
        .iter()
        .map(|f| {
            (
                f["frame"].as_str().unwrap(),
                u(&f["dscp"]),
                u(&f["sent_packets"]),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("I", 10, 5 * 32),
            ("P", 12, 4 * 3 * 12),
            ("B", 14, (4 * 8 + 1) * 4)
        ],
        "{r}"
    );
    // What was sent of each type arrived, but for a tenth at most.
    for (f, (kind, _, sent)) in frames.iter().zip(&got) {
        common::assert_udp_delivered(f, *sent, kind);
    }
    assert_eq!(r["streams"][0]["frames"], r["summary"]["forward"]["frames"]);
    // A profile without frame types has none.
    let cbr = udp_json("::1", server.port, &["-t", "1s", "-b", "1M"]);
    assert!(cbr["summary"]["forward"].get("frames").is_none(), "{cbr}");
}

#[test]
fn voip_sends_fifty_small_packets_a_second() {
    let server = ServerProc::start(&[]);
    let r = udp_json("::1", server.port, &["-t", "2s", "--profile", "voip"]);
    let s = &r["summary"]["forward"];
    // 50 packets a second for 2 s, exactly; on loopback at most a tenth
    // lost, and every one received is a whole 160-byte packet.
    common::assert_udp_delivered(s, 100, "voip");
    assert_eq!(u(&s["received_bytes"]), u(&s["received_packets"]) * 160);
}

#[test]
fn bad_udp_input_is_a_usage_error() {
    for (args, needle) in [
        (vec!["-l", "16"], "length"),
        (vec!["--profile", "bursty"], "'bursty'"),
        (vec!["--profile", "onoff:1s"], "onoff:1s"),
        (vec!["-b", "0", "--profile", "poisson"], "profile"),
    ] {
        let out = sonde().args(["udp", "::1"]).args(&args).output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        // sonde's own check: one line; clap's: its whole message.
        if !err.starts_with("error: ") {
            assert_eq!(err.trim().lines().count(), 1, "{err}");
        }
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn udp_limits_are_refused_by_name() {
    let server = ServerProc::start(&["--max-rate", "10M", "--max-duration", "5s"]);
    let run = |args: &[&str]| {
        sonde()
            .args(["udp", "::1", "-p", &server.port.to_string()])
            .args(args)
            .output()
            .unwrap()
    };
    let o = run(&["-t", "1s", "-b", "0"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("max_rate is 10.0 Mbit/s on this server (asked: unpaced"),
        "{}",
        stderr(&o)
    );
    let o = run(&["-t", "1s", "-b", "6M", "-P", "2"]);
    assert!(
        stderr(&o).contains("max_rate is 10.0 Mbit/s on this server (asked: 12.0 Mbit/s)"),
        "{}",
        stderr(&o)
    );
    let o = run(&["-t", "10s"]);
    assert!(stderr(&o).contains("max_duration is 5s"), "{}", stderr(&o));
    let r = udp_json("::1", server.port, &["-t", "1s", "-b", "4M", "-P", "2"]);
    // Under the limit it runs whole: 4 Mbit/s of 1400-byte payloads for
    // 1 s is a departure every 2.8 ms before the end, 358 a stream; on
    // loopback at most a tenth lost.
    common::assert_udp_delivered(&r["summary"]["forward"], 2 * 358, "-b 4M -P 2");
}

#[test]
fn ctrl_c_stops_a_udp_test_and_reports_what_ran() {
    let server = ServerProc::start(&[]);
    let child = sonde()
        .args([
            "udp",
            "::1",
            "-p",
            &server.port.to_string(),
            "-t",
            "30s",
            "-b",
            "4M",
            "-R",
            "-J",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = common::interrupt_after(child, std::time::Duration::from_millis(2500));
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["interrupted"], true);
    let s = &r["summary"]["reverse"];
    // It ran until the signal: 200 packets are 0.56 s at 357 a second, so
    // a start-up as slow as 1.9 s on a loaded machine still passes.
    assert!(u(&s["received_packets"]) > 200, "{s}");
    // Stopped cleanly: what was sent arrived, but for what was in flight
    // when the stop reached the sender: a tenth of a second at 357
    // packets a second (36: the stop's latency on a loaded machine; an
    // idle one shows 3), or the tenth of all sent that loopback may lose
    // on a loaded machine. A sender that ran on past the stop loses more.
    let (sent, lost) = (u(&s["sent_packets"]), u(&s["lost_packets"]));
    assert!(u(&s["received_packets"]) + lost <= sent, "{s}");
    assert!(lost <= (sent / 10).max(36), "{s}");
}

#[test]
fn unpaced_udp_is_flow_controlled_and_loses_almost_nothing() {
    let server = ServerProc::start(&[]);
    for args in [["-l", "64"], ["-l", "1400"]] {
        let r = udp_json(
            "127.0.0.1",
            server.port,
            &["-t", "2s", "-b", "0", args[0], args[1]],
        );
        let s = &r["summary"]["forward"];
        assert!(u(&s["received_packets"]) > 10_000, "{args:?}: {s}");
        // Without flow control the sender overruns the receiver's socket
        // buffer and loses a quarter or more on loopback; with it, at
        // most a tenth (the feedback is late to a receiver descheduled on
        // a loaded machine), still well apart.
        assert!(f(&s["loss_pct"]) <= 10.0, "{args:?}: {s}");
    }
}
