//! Where each figure of a sonde result lands in iperf3's layout.

use super::{iperf3, tcp, tcp_result, tcp_spec, udp, udp_result, udp_spec};
use crate::iperf3_json::{micros, rfc1123, system_info, tcp_to_iperf3, to_iperf3, udp_to_iperf3};
use sonde_model::{load_result, ByteSize, Direction, Dscp, HostEnv, Rate};
use std::time::Duration;

#[test]
fn forward_tcp_shows_the_client_sending() {
    let r = tcp_result("tcp_fwd_1");
    let j = tcp(&r);
    let fwd = r.summary.forward.clone().expect("forward summary");
    let (st, iv) = (&r.streams[0], &r.intervals[0].streams[0]);

    let ts = &j["start"]["test_start"];
    assert_eq!(ts["protocol"], "TCP");
    assert_eq!(ts["num_streams"], 1);
    assert_eq!(ts["blksize"], 262_144);
    assert_eq!(ts["duration"], 2);
    assert_eq!(
        (ts["reverse"].clone(), ts["bidir"].clone()),
        (0.into(), 0.into())
    );
    assert_eq!(j["start"]["tcp_mss_default"], 32_768);
    assert_eq!(j["start"]["version"], "sonde 0.1.0");
    assert_eq!(j["start"]["system_info"], "Linux vm 6.18.44-fc-v657");
    assert_eq!(j["start"]["connected"][0]["local_host"], "::1");
    assert_eq!(
        j["start"]["connected"][0]["local_port"],
        st.client_socket.local.port()
    );
    assert_eq!(j["start"]["connected"][0]["remote_port"], 5499);

    let i0 = &j["intervals"][0]["streams"][0];
    assert_eq!(i0["sender"], true);
    assert_eq!(i0["bytes"], iv.sent_bytes.expect("sent bytes"));
    assert_eq!(i0["retransmits"], iv.retransmits.unwrap_or(0));
    assert_eq!(i0["snd_cwnd"], iv.cwnd_bytes.unwrap_or(0));
    assert_eq!(i0["rtt"], micros(iv.srtt_ms.unwrap_or(0.0)));

    let end = &j["end"];
    assert_eq!(end["sum_sent"]["bytes"], fwd.sent_bytes.expect("sent"));
    assert_eq!(
        end["sum_sent"]["retransmits"],
        fwd.retransmits.expect("retr")
    );
    assert_eq!(end["sum_sent"]["sender"], true);
    assert_eq!(
        end["sum_received"]["bytes"],
        fwd.received_bytes.expect("received")
    );
    assert_eq!(
        end["sum_received"]["seconds"],
        fwd.receiver_duration_s.expect("receiver time")
    );
    assert_eq!(
        end["sum_received"]["bits_per_second"],
        fwd.throughput_bps.expect("goodput") as f64
    );
    assert_eq!(end["streams"][0]["sender"]["socket"], 0);
    assert_eq!(
        end["streams"][0]["sender"]["max_snd_cwnd"],
        st.figures.max_cwnd_bytes.unwrap_or(0)
    );
    assert_eq!(
        end["streams"][0]["receiver"]["bytes"],
        st.figures.received_bytes.expect("received")
    );
    assert_eq!(end["sender_tcp_congestion"], "bbr");
    assert_eq!(end["receiver_tcp_congestion"], "bbr");
}

#[test]
fn reverse_tcp_shows_the_client_receiving() {
    let r = tcp_result("tcp_rev_1");
    let j = tcp(&r);
    assert_eq!(j["start"]["test_start"]["reverse"], 1);
    let i0 = &j["intervals"][0]["streams"][0];
    assert_eq!(i0["sender"], false);
    assert_eq!(
        i0["bytes"],
        r.intervals[0].streams[0].received_bytes.expect("received")
    );
    assert!(
        i0.get("retransmits").is_none(),
        "a receiver has no TCP_INFO"
    );
    assert_eq!(j["intervals"][0]["sum"]["sender"], false);
    assert_eq!(j["end"]["sum_sent"]["sender"], false);
    assert_eq!(
        j["end"]["streams"][0]["sender"]["bytes"],
        r.streams[0].figures.sent_bytes.expect("sent")
    );
}

#[test]
fn bidir_reports_the_reverse_direction_apart() {
    let r = tcp_result("tcp_bidir_2");
    let j = tcp(&r);
    let rev = r.summary.reverse.clone().expect("reverse summary");
    assert_eq!(j["start"]["test_start"]["bidir"], 1);
    assert_eq!(j["start"]["test_start"]["reverse"], 0);
    assert_eq!(j["start"]["test_start"]["num_streams"], 2);
    assert_eq!(j["start"]["connected"].as_array().map(Vec::len), Some(4));
    assert_eq!(j["intervals"][0]["sum"]["sender"], true);
    assert_eq!(j["intervals"][0]["sum_bidir_reverse"]["sender"], false);
    assert_eq!(
        j["end"]["sum_sent_bidir_reverse"]["bytes"],
        rev.sent_bytes.expect("sent")
    );
    assert_eq!(
        j["end"]["sum_received_bidir_reverse"]["bytes"],
        rev.received_bytes.expect("received")
    );
    let senders: Vec<_> = j["end"]["streams"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| s["sender"]["sender"].clone())
        .collect();
    assert_eq!(senders, [true, true, false, false]);
}

#[test]
fn udp_jitter_and_loss_come_from_the_receiver() {
    let r = udp_result("udp_fwd_1");
    let j = udp(&r);
    let c = r.summary.forward.as_ref().expect("forward");
    let (sent, received, lost) = (
        c.sent_packets.expect("sent"),
        c.received_packets.expect("received"),
        c.lost_packets.expect("lost"),
    );
    let ts = &j["start"]["test_start"];
    assert_eq!(ts["protocol"], "UDP");
    assert_eq!(ts["blksize"], 1400);
    assert_eq!(ts["target_bitrate"], 10_000_000);
    assert!(j["start"].get("tcp_mss_default").is_none());

    let sum = &j["end"]["sum"];
    assert_eq!(sum["jitter_ms"], c.jitter_ms.expect("jitter"));
    assert_eq!(sum["lost_packets"], lost);
    assert_eq!(sum["packets"], received + lost);
    assert_eq!(sum["lost_percent"], c.loss_pct.expect("loss"));
    assert_eq!(sum["sender"], true);
    assert_eq!(j["end"]["sum_sent"]["packets"], sent);
    assert_eq!(j["end"]["sum_sent"]["jitter_ms"], 0.0);
    assert_eq!(
        j["end"]["sum_received"]["bytes"],
        c.received_bytes.expect("bytes")
    );
    assert_eq!(
        j["end"]["sum_received"]["jitter_ms"],
        c.jitter_ms.expect("jitter")
    );
    // A constant-rate stream: offered rate × time is the bytes sent.
    assert_eq!(j["end"]["sum_sent"]["bytes"], sent * 1400);
    assert_eq!(
        j["end"]["streams"][0]["udp"]["out_of_order"],
        r.streams[0].figures.reordered.expect("reordered")
    );

    let i0 = &j["intervals"][0]["streams"][0];
    assert_eq!(
        i0["packets"],
        r.intervals[0].streams[0].sent_packets.expect("sent")
    );
    assert!(
        i0.get("jitter_ms").is_none(),
        "the sending client has no jitter"
    );

    let rev = udp(&udp_result("udp_rev_1"));
    let i0 = &rev["intervals"][0]["streams"][0];
    assert_eq!(i0["sender"], false);
    assert!(i0.get("jitter_ms").is_some() && i0.get("lost_percent").is_some());
    assert_eq!(rev["end"]["sum"]["sender"], false);
}

#[test]
fn udp_sent_bytes_are_taken_as_counted_when_known() {
    let mut r = udp_result("udp_fwd_1");
    let payload = u64::from(udp_spec(&r).payload_len());
    if let Some(f) = r.summary.forward.as_mut() {
        f.sent_bytes = f.sent_packets.map(|p| p * payload + 7);
    }
    let j = udp(&r);
    let sent = r.summary.forward.as_ref().and_then(|f| f.sent_packets);
    assert_eq!(
        j["end"]["sum_sent"]["bytes"],
        sent.expect("sent") * payload + 7
    );
}

#[test]
fn missing_figures_are_written_as_zeros() {
    let mut r = tcp_result("tcp_fwd_1");
    r.intervals.clear();
    r.summary.forward = None;
    r.env.client.default_congestion = None;
    r.env.server.default_congestion = None;
    for s in &mut r.streams {
        s.figures.retransmits = None;
        s.figures.srtt_ms = None;
        s.figures.min_rtt_ms = None;
        s.figures.max_cwnd_bytes = None;
        s.figures.sent_bytes = None;
        s.client_socket.mss_bytes = None;
        s.client_socket.congestion = None;
        s.server_socket.congestion = None;
    }
    let j = tcp(&r);
    assert_eq!(j["intervals"], serde_json::json!([]));
    let sender = &j["end"]["streams"][0]["sender"];
    for key in [
        "bytes",
        "retransmits",
        "max_snd_cwnd",
        "max_rtt",
        "min_rtt",
        "mean_rtt",
    ] {
        assert_eq!(sender[key], 0, "{key}");
    }
    assert_eq!(j["start"]["tcp_mss_default"], 0);
    let total = r.summary.total.as_ref().expect("total");
    assert_eq!(
        j["end"]["sum_sent"]["bytes"],
        total.sent_bytes.expect("sent")
    );
    assert_eq!(j["end"]["sum_received"]["seconds"], r.duration_s);
    assert!(j["end"].get("sender_tcp_congestion").is_none());

    r.summary.total = None;
    r.streams.clear();
    let j = tcp(&r);
    assert_eq!(j["start"]["connected"], serde_json::json!([]));
    assert_eq!(j["start"]["sndbuf_actual"], 0);
    assert_eq!(j["end"]["sum_sent"]["bytes"], 0);
    assert_eq!(j["end"]["sum_received"]["bits_per_second"], 0.0);
}

#[test]
fn only_tcp_and_udp_have_an_iperf3_layout() {
    let r = tcp_result("tcp_fwd_1");
    assert!(udp_to_iperf3(&r).is_none(), "a TCP result is not UDP");
    assert!(tcp_to_iperf3(&udp_result("udp_fwd_1")).is_none());
    let ping = load_result(include_str!(
        "../../../../sonde-model/tests/fixtures/v1/ping_icmp.json"
    ))
    .expect("ping");
    assert!(to_iperf3(&ping).is_none());
    assert_eq!(to_iperf3(&r), tcp_to_iperf3(&r));
}

#[test]
fn spec_options_show_where_iperf3_puts_them() {
    let mut r = tcp_result("tcp_fwd_1");
    let s = tcp_spec(&mut r);
    s.mss = Some(1400);
    s.dscp = Some(Dscp::EF);
    s.omit = Duration::from_millis(1500);
    s.window = Some(ByteSize::from_bytes(256 * 1024));
    s.bitrate = Some(Rate::from_bps(100_000_000));
    s.direction = Direction::Forward;
    r.title = Some("lab 3".into());
    let j = tcp(&r);
    assert_eq!(j["start"]["tcp_mss"], 1400);
    assert!(j["start"].get("tcp_mss_default").is_none());
    assert_eq!(j["start"]["sock_bufsize"], 262_144);
    assert_eq!(j["start"]["target_bitrate"], 100_000_000);
    let ts = &j["start"]["test_start"];
    assert_eq!(ts["tos"], 184);
    assert_eq!(ts["omit"], 1.5);
    assert_eq!(ts["duration"], 2);
    assert_eq!(ts["interval"], 1.0);
    assert_eq!(j["title"], "lab 3");
}

#[test]
fn ipv4_mapped_addresses_are_written_as_ipv4() {
    let mut r = tcp_result("tcp_fwd_1");
    r.streams[0].client_socket.local = "[::ffff:192.0.2.1]:40000".parse().expect("addr");
    let j = tcp(&r);
    assert_eq!(j["start"]["connected"][0]["local_host"], "192.0.2.1");
    assert_eq!(j["start"]["connected"][0]["local_port"], 40_000);
}

#[test]
fn times_are_written_as_iperf3_writes_them() {
    assert_eq!(rfc1123(0), "Thu, 01 Jan 1970 00:00:00 GMT");
    assert_eq!(rfc1123(951_868_800), "Wed, 01 Mar 2000 00:00:00 GMT");
    assert_eq!(rfc1123(1_709_208_000), "Thu, 29 Feb 2024 12:00:00 GMT");
    // From a real iperf3 3.12 run.
    let theirs = iperf3("3.12", "tcp_fwd_1");
    let secs = theirs["start"]["timestamp"]["timesecs"]
        .as_u64()
        .expect("timesecs");
    assert_eq!(rfc1123(secs), theirs["start"]["timestamp"]["time"]);

    let r = tcp_result("tcp_fwd_1");
    let j = tcp(&r);
    let since = r
        .start
        .0
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970");
    assert_eq!(j["start"]["timestamp"]["timesecs"], since.as_secs());
    assert_eq!(
        j["start"]["timestamp"]["timemillisecs"],
        since.as_millis() as u64
    );
}

#[test]
fn system_info_reads_like_uname() {
    let env = HostEnv {
        os: "linux".into(),
        hostname: "probe-1".into(),
        kernel: "6.1.0-18-amd64".into(),
        ..HostEnv::default()
    };
    assert_eq!(system_info(&env), "Linux probe-1 6.1.0-18-amd64");
    assert_eq!(system_info(&HostEnv::default()), "");
}

/// With a warm-up, iperf3 writes the omitted intervals from the test's
/// start and the measured ones from the warm-up's end (as 3.12 does with
/// `-O 1`: 0–1 omitted, then 0–1, 1–2), for TCP and UDP alike.
#[test]
fn interval_times_restart_at_zero_after_the_warm_up() {
    for case in ["tcp_fwd_1", "udp_fwd_1"] {
        let mut r = super::result(case);
        let omit = r.intervals[0].end_s - r.intervals[0].start_s;
        match &mut r.spec {
            sonde_model::TestSpec::Tcp(s) => s.omit = Duration::from_secs_f64(omit),
            sonde_model::TestSpec::Udp(s) => s.omit = Duration::from_secs_f64(omit),
            other => panic!("{other:?}"),
        }
        for (i, iv) in r.intervals.iter_mut().enumerate() {
            iv.omitted = i == 0;
        }
        let j = to_iperf3(&r).expect(case);
        let ivs = j["intervals"].as_array().unwrap();
        let at = |i: usize, k: &str| ivs[i]["sum"][k].as_f64().unwrap();
        assert_eq!(ivs[0]["sum"]["omitted"], true, "{case}");
        assert_eq!(at(0, "start"), 0.0, "{case}");
        assert!((at(0, "end") - omit).abs() < 1e-9, "{case}");
        for (i, iv) in r.intervals.iter().enumerate().skip(1) {
            assert_eq!(ivs[i]["sum"]["omitted"], false, "{case}");
            assert!(
                (at(i, "start") - (iv.start_s - omit)).abs() < 1e-9,
                "{case} {i}"
            );
            assert!(
                (at(i, "end") - (iv.end_s - omit)).abs() < 1e-9,
                "{case} {i}"
            );
            assert!((at(i, "seconds") - (iv.end_s - iv.start_s)).abs() < 1e-9);
            let stream = &ivs[i]["streams"][0];
            assert_eq!(stream["start"], ivs[i]["sum"]["start"], "{case} {i}");
        }
        assert_eq!(at(1, "start"), 0.0, "{case}");
    }
}
