use super::*;
use sonde_model::udp_report::Remark;
use sonde_model::{load_result, Dscp, DscpClass};

fn v1(name: &str) -> TestResult {
    let path = format!(
        "{}/../sonde-model/tests/fixtures/v1/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    load_result(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// What sonde 0.1 printed for this format-1 document.
const VIDEO: &str = "\
Received by the server, per interval:
[ ID] Dir  Interval             Transfer         Bitrate      Jitter    Lost/Total
[SUM] ->     0.00-1.00   s     544 KiB     4.45 Mbit/s    0.004 ms  0/403 (0.00 %)
[SUM] ->     1.00-2.00   s     478 KiB     3.92 Mbit/s    0.009 ms  0/355 (0.00 %)
- - - - - - - - - - - - - - - - - - - - - - - - -
[  0] ->     0.00-2.00   s           -     4.19 Mbit/s  sender    sent 758 (offered 4.19 Mbit/s)
[  0] ->     0.00-2.00   s    1022 KiB     4.19 Mbit/s    0.009 ms  0/758 (0.00 %)  PDR 100.00 %  receiver
client -> server: 758 sent, 758 received, 0 lost (0.000 %), PDR 100.000 %, 0 reordered, 0 duplicates, jitter 0.009 ms
  IPDV |p50| 0.003 ms, |p90| 0.017 ms, |p99| 0.048 ms, max 0.129 ms
  one-way delay min 0.006 / avg 0.033 / max 0.157 / p99 0.080 ms (clocks synchronised)
  DSCP AF11 (10)  sent      275  received      275  lost       0 (0.00 %)
  DSCP AF12 (12)  sent      252  received      252  lost       0 (0.00 %)
  DSCP AF13 (14)  sent      231  received      231  lost       0 (0.00 %)
";

#[test]
fn the_summary_of_a_format_1_result_reads_as_it_did() {
    assert_eq!(udp_summary(&v1("udp_video")), VIDEO);
    assert_eq!(crate::summary(&v1("udp_video")), VIDEO);
}

#[test]
fn video_loss_is_shown_per_frame_type() {
    let mut r = v1("udp_video");
    let fwd = r.summary.forward.as_mut().expect("forward");
    fwd.classes[0].received_packets = 250;
    fwd.classes[0].lost_packets = 25;
    fwd.classes[0].loss_pct = 25.0 * 100.0 / 275.0;
    fwd.frames = sonde_model::FrameClass::from_classes(&fwd.classes, &[]);
    let text = udp_summary(&r);
    assert!(
        text.contains(
            "\n  I frames, DSCP AF11 (10)   sent      275  received      250  lost      25 (9.09 %)\n  \
             P frames, DSCP AF12 (12)   sent      252  received      252  lost       0 (0.00 %)\n  \
             B frames, DSCP AF13 (14)   sent      231  received      231  lost       0 (0.00 %)\n"
        ),
        "{text}"
    );
    // The frame lines stand for the DSCP lines.
    assert!(!text.contains("  DSCP AF11"), "{text}");
    // With the receiver's frame counts, each line says how many decode.
    let counts = [
        sonde_model::video::FrameCount {
            frame: sonde_model::profile::FrameKind::I,
            sent: 25,
            decodable: 22,
        },
        sonde_model::video::FrameCount {
            frame: sonde_model::profile::FrameKind::P,
            sent: 75,
            decodable: 66,
        },
        sonde_model::video::FrameCount {
            frame: sonde_model::profile::FrameKind::B,
            sent: 200,
            decodable: 170,
        },
    ];
    let fwd = r.summary.forward.as_mut().expect("forward");
    fwd.frames = sonde_model::FrameClass::from_classes(&fwd.classes, &counts);
    fwd.decodable_frames_pct = sonde_model::video::decodable_pct(&counts);
    let text = udp_summary(&r);
    assert!(
        text.contains("lost      25 (9.09 %); 22 of 25 frames decodable (88.00 %)\n"),
        "{text}"
    );
    assert!(
        text.contains("\n  decodable frame rate 86.00 % of 300 frames (all their packets and references arrived)\n"),
        "{text}"
    );
}

#[test]
fn the_flow_label_on_arrival_is_written_as_a_sentence() {
    use sonde_model::udp_report::FlowLabelCount;
    let mut r = v1("udp_reverse_ef");
    let rev = r.summary.reverse.as_mut().expect("reverse");
    let count = |label, packets| FlowLabelCount { label, packets };
    rev.flow_label_sent = Some(0x12345);
    rev.flow_labels = vec![count(Some(0x12345), 1000)];
    assert!(
        udp_summary(&r).contains("\n  flow label 0x12345 kept in 1000 of 1000 packets\n"),
        "{}",
        udp_summary(&r)
    );
    let rev = r.summary.reverse.as_mut().expect("reverse");
    rev.flow_labels = vec![count(Some(0), 990), count(Some(0x12345), 10)];
    assert!(udp_summary(&r).contains(
        "flow label 0x12345 arrived as 0x00000 in 990 of 1000 packets (99.0 %): rewritten on the path"
    ));
    // The kernel's own labels (none set) are not worth a line.
    let rev = r.summary.reverse.as_mut().expect("reverse");
    rev.flow_label_sent = None;
    rev.flow_labels = vec![count(Some(0xabcde), 7)];
    assert!(!udp_summary(&r).contains("flow label"));
}

#[test]
fn remarking_is_written_as_a_sentence() {
    let mut r = v1("udp_reverse_ef");
    let rev = r.summary.reverse.as_mut().expect("reverse");
    rev.classes = vec![DscpClass {
        dscp: Dscp::EF,
        sent_packets: 1000,
        received_packets: 1000,
        lost_packets: 0,
        loss_pct: 0.0,
        pdr_pct: 100.0,
    }];
    rev.remarks = vec![Remark {
        sent: Dscp::EF,
        received: Dscp::BEST_EFFORT,
        packets: 980,
    }];
    let text = udp_summary(&r);
    assert!(
        text.contains(
            "\n  EF (46) arrived as CS0 (0) in 980 of 1000 packets (98.0 %): remarked on the path\n"
        ),
        "{text}"
    );
    // Without the class, the share is not known: no "of N".
    let rev = r.summary.reverse.as_mut().expect("reverse");
    rev.classes.clear();
    let text = udp_summary(&r);
    assert!(
        text.contains("\n  EF (46) arrived as CS0 (0) in 980 packets: remarked on the path\n"),
        "{text}"
    );
}

#[test]
fn an_iperf3_peer_leaves_duplicates_and_reordering_unknown_not_zero() {
    // The iperf3 server received: it counts neither duplicates nor
    // reordering, so neither is printed.
    let r = v1("udp_iperf3_peer");
    let text = udp_summary(&r);
    let line = text
        .lines()
        .find(|l| l.starts_with("client -> server:"))
        .expect("the direction line");
    assert_eq!(
        line,
        "client -> server: 893 sent, 893 received, 0 lost (0.000 %), PDR 100.000 %, jitter 0.017 ms"
    );
}

#[test]
fn sent_bytes_show_when_counted_and_unknowns_are_dashes() {
    let mut r = v1("udp_forward");
    let s = &mut r.streams[0].figures;
    s.sent_bytes = Some(1_250_000);
    s.sender_throughput_bps = Some(10_000_000);
    s.jitter_ms = None;
    s.pdr_pct = None;
    s.lost_packets = None;
    let text = udp_summary(&r);
    let mut lines = text.lines().skip_while(|l| !l.starts_with("- - -")).skip(1);
    let sender = lines.next().expect("sender line");
    assert!(
        sender.ends_with("1.19 MiB     10.0 Mbit/s  sender    sent 1786 (offered 10.0 Mbit/s)"),
        "{sender}"
    );
    let receiver = lines.next().expect("receiver line");
    assert!(
        receiver.ends_with(&format!("{:>10}  -  PDR - %  receiver", "-")),
        "{receiver}"
    );
}

#[test]
fn live_lines_show_this_ends_half() {
    let iv = Interval {
        start_s: 0.0,
        end_s: 1.0,
        omitted: true,
        size_bytes: None,
        streams: vec![Figures {
            received_packets: Some(10),
            lost_packets: Some(0),
            received_bytes: Some(1_250_000),
            ..Figures::default()
        }
        .of_stream(2, Direction::Reverse)],
        sums: Vec::new(),
        round_trip: None,
    };
    let text = udp_interval(&iv, |_| false);
    assert_eq!(
        text,
        format!(
            "[  2] <-     0.00-1.00   s    1.19 MiB     10.0 Mbit/s  {:>10}  0/10 (0.00 %)  (omitted)\n",
            "-"
        )
    );
}
