use super::*;
use sonde_model::load_result;

fn v1(name: &str) -> TestResult {
    let path = format!(
        "{}/../sonde-model/tests/fixtures/v1/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    load_result(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// What sonde 0.1 printed for this format-1 document.
const BIDIR_OMIT: &str = "\
- - - - - - - - - - - - - - - - - - - - - - - - -
[ ID] Dir  Interval            Transfer     Bitrate           Retr
[  0] ->     1.00-3.00   s    1.97 GiB     8.45 Gbit/s      4  sender
[  0] ->     1.00-3.00   s    2.00 GiB     8.59 Gbit/s         receiver
[  1] ->     1.00-3.00   s    3.49 GiB     15.0 Gbit/s      1  sender
[  1] ->     1.00-3.00   s    3.49 GiB     15.0 Gbit/s         receiver
[  2] <-     1.00-3.00   s     791 MiB     3.32 Gbit/s      7  sender
[  2] <-     1.00-3.00   s     797 MiB     3.33 Gbit/s         receiver
[  3] <-     1.00-3.00   s     941 MiB     3.95 Gbit/s     20  sender
[  3] <-     1.00-3.00   s     947 MiB     3.95 Gbit/s         receiver
[SUM] ->     1.00-3.00   s    5.46 GiB     23.4 Gbit/s      5  sender
[SUM] ->     1.00-3.00   s    5.49 GiB     23.6 Gbit/s         receiver
[SUM] <-     1.00-3.00   s    1.69 GiB     7.27 Gbit/s     27  sender
[SUM] <-     1.00-3.01   s    1.70 GiB     7.27 Gbit/s         receiver
in force: client 127.0.0.1:54036 (kernel 6.18.44-fc-v782, cc bbr, sndbuf 3.76 MiB, rcvbuf 128 KiB, mss 32768) <-> server 127.0.0.1:15301 (kernel 6.18.44-fc-v782, cc bbr)
goodput 30.9 Gbit/s (7.20 GiB received in 2.00 s after 1 s warm-up), 32 retransmits
";

#[test]
fn the_summary_of_a_format_1_result_reads_as_it_did() {
    assert_eq!(tcp_summary(&v1("tcp_bidir_omit")), BIDIR_OMIT);
    assert_eq!(crate::summary(&v1("tcp_bidir_omit")), BIDIR_OMIT);
}

#[test]
fn latency_and_interruption_follow_the_totals() {
    let text = tcp_summary(&v1("tcp_latency"));
    assert!(
        text.ends_with(
            "latency (icmp-raw):\n  \
             idle     rtt p50 0.075 ms, p90 0.083 ms, max 0.085 ms (10 of 10 answered)\n  \
             loaded   rtt p50 0.054 ms, p90 0.065 ms, max 0.107 ms (20 of 20 answered)\n  \
             under load the median RTT fell by 0.021 ms\n"
        ),
        "{text}"
    );
    let text = tcp_summary(&v1("tcp_interrupted"));
    assert!(
        text.ends_with("interrupted after 2.20 s of the 5 s planned\n"),
        "{text}"
    );
}

#[test]
fn the_sender_line_shows_bytes_and_rate_in_their_units() {
    // 1.25 MB over the fixture's 2 s: 5 Mbit/s.
    let mut r = v1("tcp_forward");
    assert_eq!(r.duration_s, 2.0);
    r.streams.truncate(1);
    let f = &mut r.streams[0].figures;
    f.sent_bytes = Some(1_250_000);
    f.sender_throughput_bps = Some(5_000_000);
    let text = tcp_summary(&r);
    let sender = text
        .lines()
        .find(|l| l.ends_with("sender"))
        .expect("a sender line");
    assert!(sender.contains("1.19 MiB     5.00 Mbit/s"), "{sender}");
}

#[test]
fn unknown_figures_are_blank_or_a_dash_never_zero() {
    let mut r = v1("tcp_forward");
    for s in &mut r.streams {
        s.figures.retransmits = None;
        s.figures.received_bytes = None;
        s.figures.throughput_bps = None;
    }
    if let Some(t) = r.summary.total.as_mut() {
        t.retransmits = None;
    }
    let text = tcp_summary(&r);
    let lines: Vec<&str> = text.lines().collect();
    let sender = lines[2];
    assert!(
        sender.ends_with("Gbit/s         sender"),
        "blank Retr: {sender}"
    );
    let receiver = lines[3];
    let unknown = format!("{:>10}  {:>14}  {:5}  receiver", "-", "-", "");
    assert!(receiver.ends_with(&unknown), "{receiver}");
    let goodput = lines
        .iter()
        .find(|l| l.starts_with("goodput"))
        .expect("goodput");
    assert!(!goodput.contains("retransmits"), "{goodput}");
}

#[test]
fn a_result_without_streams_or_totals_still_prints() {
    let mut r = v1("tcp_reverse");
    r.streams.clear();
    r.summary = Default::default();
    let text = tcp_summary(&r);
    assert!(
        text.contains("goodput - (- received in 2.00 s after 0 s warm-up)\n"),
        "{text}"
    );
}
