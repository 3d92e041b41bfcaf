//! The expected lines were printed by sonde 0.1's live printers
//! (`LiveTable::interval`, `udp_interval`, `ping_header`,
//! `ping_reply_line`) for the same figures.

use super::*;
use sonde_model::udp_report::Remark;
use sonde_model::{Dscp, PingSpec, Profile, Rate, TcpSpec};
use std::sync::Arc;

fn tcp_sender(stream: u16, bytes: u64, retransmits: u64) -> Figures {
    Figures {
        sent_bytes: Some(bytes),
        sender_throughput_bps: Some(Rate::from_bytes_over(bytes, 1.0).bps()),
        retransmits: Some(retransmits),
        cwnd_bytes: Some(64 * 1024),
        srtt_ms: Some(1.5),
        ..Figures::default()
    }
    .of_stream(stream, Direction::Forward)
}

fn interval(start_s: f64, omitted: bool, streams: Vec<Figures>) -> Event {
    Event::Interval(Interval {
        start_s,
        end_s: start_s + 1.0,
        omitted,
        size_bytes: None,
        streams,
        sums: Vec::new(),
        round_trip: None,
    })
}

fn tcp_spec(title: Option<&str>) -> TestSpec {
    TestSpec::Tcp(TcpSpec {
        host: "::1".into(),
        title: title.map(str::to_string),
        ..TcpSpec::default()
    })
}

#[test]
fn tcp_intervals_are_the_lines_of_sonde_0_1() {
    let mut live = LiveText::for_spec(&tcp_spec(None));
    let first = live.on_event(&interval(
        0.0,
        true,
        vec![tcp_sender(0, 1_250_000, 3), tcp_sender(1, 2_500_000, 5)],
    ));
    assert_eq!(
        first.stdout,
        "[ ID] Dir  Interval            Transfer     Bitrate           Retr      Cwnd       RTT\n\
         [  0] ->     0.00-1.00   s    1.19 MiB     10.0 Mbit/s      3    64.0 KiB   1.50 ms  (omitted)\n\
         [  1] ->     0.00-1.00   s    2.38 MiB     20.0 Mbit/s      5    64.0 KiB   1.50 ms  (omitted)\n\
         [SUM] ->     0.00-1.00   s    3.58 MiB     30.0 Mbit/s      8  (omitted)\n"
    );
    assert!(first.stderr.is_empty());
    // Retransmits arrive per interval already: printed as they are.
    let second = live.on_event(&interval(
        1.0,
        false,
        vec![tcp_sender(0, 1_000_000, 2), tcp_sender(1, 3_000_000, 4)],
    ));
    assert_eq!(
        second.stdout,
        "[  0] ->     1.00-2.00   s     977 KiB     8.00 Mbit/s      2    64.0 KiB   1.50 ms\n\
         [  1] ->     1.00-2.00   s    2.86 MiB     24.0 Mbit/s      4    64.0 KiB   1.50 ms\n\
         [SUM] ->     1.00-2.00   s    3.81 MiB     32.0 Mbit/s      6\n"
    );
}

#[test]
fn an_unknown_retransmit_count_is_blank_not_zero() {
    let mut live = LiveText::new(None);
    let receiving = Figures {
        received_bytes: Some(125_000),
        throughput_bps: Some(1_000_000),
        ..Figures::default()
    }
    .of_stream(0, Direction::Reverse);
    let text = live.on_event(&interval(0.0, false, vec![receiving])).stdout;
    let line = text.lines().nth(1).expect("a stream line");
    assert_eq!(
        line,
        "[  0] <-     0.00-1.00   s     122 KiB     1.00 Mbit/s                             "
    );
    assert!(!line.contains(" 0 "), "{line}");

    // A sender whose peer gave no TCP_INFO: blank too, in the SUM as well.
    let mut live = LiveText::new(None);
    let no_info = |s| Figures {
        retransmits: None,
        cwnd_bytes: None,
        srtt_ms: None,
        ..tcp_sender(s, 1_250_000, 0)
    };
    let text = live
        .on_event(&interval(0.0, false, vec![no_info(0), no_info(1)]))
        .stdout;
    let sum = text.lines().last().expect("a SUM line");
    assert_eq!(
        sum,
        "[SUM] ->     0.00-1.00   s    2.38 MiB     20.0 Mbit/s       "
    );
}

#[test]
fn udp_intervals_are_the_lines_of_sonde_0_1() {
    let mut live = LiveText::new(None);
    let sender = Figures {
        sent_packets: Some(893),
        sent_bytes: Some(1_250_200),
        ..Figures::default()
    }
    .of_stream(0, Direction::Forward);
    let receiver = Figures {
        received_packets: Some(890),
        lost_packets: Some(3),
        received_bytes: Some(1_246_000),
        jitter_ms: Some(0.0123),
        remarks: vec![Remark {
            sent: Dscp::EF,
            received: Dscp::BEST_EFFORT,
            packets: 5,
        }],
        ..Figures::default()
    }
    .of_stream(1, Direction::Reverse);
    let text = live.on_event(&interval(2.0, false, vec![sender, receiver]));
    assert_eq!(
        text.stdout,
        "[ ID] Dir  Interval             Transfer         Bitrate      Jitter    Lost/Total\n\
         [  0] ->     2.00-3.00   s    1.19 MiB     10.0 Mbit/s  sent 893 packets\n\
         [  1] <-     2.00-3.00   s    1.19 MiB     9.97 Mbit/s    0.012 ms  3/893 (0.34 %)  remarked 5\n"
    );
}

#[test]
fn a_sender_shows_the_loss_its_receiver_counted_live() {
    let mut live = LiveText::new(None);
    let joined = Figures {
        sent_packets: Some(893),
        sent_bytes: Some(1_250_200),
        received_packets: Some(880),
        lost_packets: Some(10),
        ..Figures::default()
    }
    .of_stream(0, Direction::Forward);
    let text = live.on_event(&interval(2.0, false, vec![joined]));
    assert_eq!(
        text.stdout.lines().nth(1),
        Some(
            "[  0] ->     2.00-3.00   s    1.19 MiB     10.0 Mbit/s  sent 893 packets, \
             lost 10/890 (1.12 %) at the receiver"
        )
    );
}

#[test]
fn roles_from_the_open_streams_pick_the_figures_shown() {
    let mut live = LiveText::for_spec(&tcp_spec(Some("lab")));
    let open = live.on_event(&Event::StreamsOpen(vec![OpenStream {
        stream: 0,
        direction: Direction::Forward,
        role: StreamRole::Receiver,
        local: "[::1]:40000".parse().expect("addr"),
        remote: "[::1]:5201".parse().expect("addr"),
    }]));
    assert_eq!(
        open.stdout,
        "lab: [  0] local [::1]:40000 connected to [::1]:5201 (receiving)\n"
    );
    // This end receives stream 0 (a server's view): its received bytes.
    let both = Figures {
        received_bytes: Some(2_500_000),
        ..tcp_sender(0, 1_250_000, 0)
    };
    let text = live.on_event(&interval(0.0, false, vec![both])).stdout;
    assert!(text.contains("20.0 Mbit/s"), "{text}");
    assert!(text.lines().all(|l| l.starts_with("lab: ")), "{text}");
}

#[test]
fn connected_lines_name_the_server_and_for_udp_the_load() {
    let sonde = HostEnv {
        sonde_version: "0.2.0".into(),
        os: "linux".into(),
        kernel: "6.1.0".into(),
        ..HostEnv::default()
    };
    let connected = |env: &HostEnv| Event::Connected {
        server: "[::1]:5201".parse().expect("addr"),
        peer: sonde_model::PeerKind::Sonde,
        env: env.clone(),
    };
    let mut tcp = LiveText::for_spec(&tcp_spec(Some("wan")));
    assert_eq!(
        tcp.on_event(&connected(&sonde)).stdout,
        "wan: Connected to [::1]:5201 (sonde 0.2.0 on linux 6.1.0)\n"
    );
    let iperf3 = HostEnv::unknown("iperf3");
    assert_eq!(
        LiveText::new(None).on_event(&connected(&iperf3)).stdout,
        "Connected to [::1]:5201 (iperf3)\n"
    );
    let udp = TestSpec::Udp(UdpSpec {
        host: "::1".into(),
        bitrate: Rate::from_bps(10_000_000),
        length: 1400,
        profile: Profile::Cbr,
        ..UdpSpec::default()
    });
    assert_eq!(
        LiveText::for_spec(&udp).on_event(&connected(&sonde)).stdout,
        "Connected to [::1]:5201 (sonde 0.2.0 on linux 6.1.0); UDP 10.0 Mbit/s per stream, 1400 bytes, profile cbr\n"
    );
    let unpaced = TestSpec::Udp(UdpSpec {
        host: "::1".into(),
        bitrate: Rate::from_bps(0),
        ..UdpSpec::default()
    });
    let line = LiveText::for_spec(&unpaced)
        .on_event(&connected(&sonde))
        .stdout;
    assert!(line.contains("UDP unpaced per stream"), "{line}");
}

#[test]
fn ping_lines_are_those_of_iputils() {
    let spec = TestSpec::Ping(PingSpec {
        host: "localhost".into(),
        ..PingSpec::default()
    });
    let mut live = LiveText::for_spec(&spec);
    let header = live.on_event(&Event::Series {
        size_bytes: 56,
        target: "::1".parse().expect("addr"),
        method: ProbeMethod::IcmpDatagram,
    });
    assert_eq!(
        header.stdout,
        "PING localhost (::1): 56 data bytes (icmp-datagram)\n"
    );
    let reply = PingReply {
        seq: 3,
        size: 56,
        sent_s: 3.0,
        rtt_ms: 0.04567,
        ttl: Some(64),
        duplicate: true,
        forward_ms: None,
        backward_ms: None,
        dwell_ms: None,
        received_unix_s: None,
        dscp_at_reflector: None,
        ecn_at_reflector: None,
        dscp_returned: None,
    };
    assert_eq!(
        live.on_event(&Event::Reply(reply)).stdout,
        "64 bytes from ::1: icmp_seq=3 ttl=64 time=0.046 ms (DUP!)\n"
    );

    let stamp = TestSpec::Ping(PingSpec {
        host: "192.0.2.1".into(),
        clock_synced: true,
        ..PingSpec::default()
    });
    let mut live = LiveText::for_spec(&stamp);
    let header = live.on_event(&Event::Series {
        size_bytes: 44,
        target: "192.0.2.1".parse().expect("addr"),
        method: ProbeMethod::Stamp,
    });
    assert_eq!(header.stdout, "PING 192.0.2.1: 44 data bytes (stamp)\n");
    let reply = PingReply {
        seq: 4,
        size: 44,
        sent_s: 3.0,
        rtt_ms: 0.1,
        ttl: None,
        duplicate: false,
        forward_ms: Some(0.04),
        backward_ms: Some(0.05),
        dwell_ms: Some(0.0123),
        received_unix_s: None,
        dscp_at_reflector: None,
        ecn_at_reflector: None,
        dscp_returned: None,
    };
    assert_eq!(
        live.on_event(&Event::Reply(reply)).stdout,
        "44 bytes from 192.0.2.1: seq=4 time=0.100 ms (out 0.040 ms, back 0.050 ms, reflector 12.3 µs)\n"
    );
}

#[test]
fn warnings_go_to_stderr_and_the_end_prints_nothing() {
    let mut live = LiveText::new(Some("t"));
    let w = live.on_event(&Event::Warning(Warning::PeerIsIperf3 {
        host: "example.net".into(),
        port: 5201,
    }));
    assert_eq!(
        w.stderr,
        "sonde: example.net:5201 is an iperf3 server; speaking iperf3's protocol\n"
    );
    assert!(w.stdout.is_empty());
    assert!(!live
        .on_event(&Event::Warning(Warning::NoLiveIntervals))
        .stderr
        .is_empty());
    let r = sonde_model::load_result(include_str!(
        "../../sonde-model/tests/fixtures/v1/tcp_forward.json"
    ))
    .expect("a v1 result");
    assert!(live.on_event(&Event::Finished(Arc::new(r))).is_empty());
    assert!(live
        .on_event(&Event::LatencyIdle(Figures::default()))
        .is_empty());
    // An answer before any series has nowhere to come from: nothing.
    let reply = PingReply {
        seq: 0,
        size: 56,
        sent_s: 0.0,
        rtt_ms: 1.0,
        ttl: None,
        duplicate: false,
        forward_ms: None,
        backward_ms: None,
        dwell_ms: None,
        received_unix_s: None,
        dscp_at_reflector: None,
        ecn_at_reflector: None,
        dscp_returned: None,
    };
    assert!(live.on_event(&Event::Reply(reply)).is_empty());
}
