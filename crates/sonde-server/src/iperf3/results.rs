//! The results the server sends an iperf3 client, as iperf3's own server
//! writes them: every count after the omitted start (`-O`), with the
//! omitted packets and errors named apart (`omitted_packets`,
//! `omitted_errors`, which iperf3 3.21 reads and 3.12 ignores), and the
//! server's text output when the client asked for it.

use sonde_engine::iperf3::results_of;
use sonde_engine::iperf3::udp_data::UdpTally;
use sonde_model::{SideReport, StreamRole};
use sonde_wire::iperf3::{stream_id, Results, StreamResult};

/// The server's results of a TCP test: bytes after the omitted start,
/// sent or received; a stream's time is at most `ran` (the seconds data
/// flowed after the omitted start: a test the client ended early, `-n`
/// or `-k`, did not run its planned time).
pub(super) fn tcp(side: &SideReport, ran: f64) -> Results {
    let mut r = results_of(side);
    for (res, s) in r.streams.iter_mut().zip(&side.streams) {
        res.bytes = s.measured_bytes;
        if s.role == StreamRole::Sender {
            res.end_time = Some(s.measured_secs.min(ran));
        }
        res.omitted_errors = Some(0);
        res.omitted_packets = Some(0);
    }
    r
}

/// One UDP stream on the server: its whole tally and the tally at the
/// end of the omitted start (all zero without `-O`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct UdpStream {
    /// This end sent the stream.
    pub sending: bool,
    pub whole: UdpTally,
    pub omitted: UdpTally,
    /// Seconds the measured part took.
    pub secs: f64,
}

/// The server's results of a UDP test, as iperf3's server counts: a
/// sender's `packets` are all it sent, a receiver's the highest sequence
/// number it saw, each with the omitted part in `omitted_packets`;
/// `bytes` are those after the omitted start.
pub(super) fn udp(streams: &[UdpStream]) -> Results {
    let count = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    let results = streams
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let (w, o) = (&s.whole, &s.omitted);
            let (packets, omitted_packets) = if s.sending {
                (w.packets, o.packets)
            } else {
                (w.highest, o.highest)
            };
            StreamResult {
                id: stream_id(u32::try_from(i).unwrap_or(u32::MAX)),
                bytes: w.bytes.saturating_sub(o.bytes),
                retransmits: -1,
                jitter: if s.sending { 0.0 } else { w.jitter_s },
                errors: if s.sending { 0 } else { count(w.lost) },
                omitted_errors: Some(if s.sending { 0 } else { count(o.lost) }),
                packets: count(packets),
                omitted_packets: Some(count(omitted_packets)),
                start_time: Some(0.0),
                end_time: Some(s.secs),
            }
        })
        .collect();
    Results {
        cpu_util_total: 0.0,
        cpu_util_user: 0.0,
        cpu_util_system: 0.0,
        sender_has_retransmits: if streams.iter().any(|s| s.sending) {
            0
        } else {
            -1
        },
        congestion_used: None,
        server_output_json: None,
        server_output_text: None,
        streams: results,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(packets: u64, bytes: u64, highest: u64, lost: u64) -> UdpTally {
        UdpTally {
            packets,
            bytes,
            highest,
            lost,
            ..UdpTally::default()
        }
    }

    #[test]
    fn udp_counts_leave_the_omitted_start_out_as_iperf3_does() {
        let r = udp(&[
            UdpStream {
                sending: true,
                whole: tally(300, 300_000, 0, 0),
                omitted: tally(100, 100_000, 0, 0),
                secs: 2.0,
            },
            UdpStream {
                sending: false,
                whole: tally(290, 290_000, 300, 10),
                omitted: tally(98, 98_000, 100, 2),
                secs: 2.0,
            },
        ]);
        let (tx, rx) = (&r.streams[0], &r.streams[1]);
        assert_eq!((tx.id, tx.bytes, tx.packets), (1, 200_000, 300));
        assert_eq!((tx.omitted_packets, tx.errors), (Some(100), 0));
        assert_eq!(
            (rx.id, rx.bytes, rx.packets, rx.errors),
            (3, 192_000, 300, 10)
        );
        assert_eq!(
            (rx.omitted_packets, rx.omitted_errors),
            (Some(100), Some(2))
        );
        assert_eq!(r.sender_has_retransmits, 0);
        // iperf3 3.21 refuses one omitted count without the other.
        r.to_json().unwrap();
    }
}
