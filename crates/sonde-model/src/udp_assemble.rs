//! Joining both ends' [`UdpSideReport`] into one UDP [`TestResult`]: the
//! sender's counts give the loss base and the offered rate, the
//! receiver's everything measured on arrival. A sonde server and an
//! iperf3 server (whose report knows less: `None`, empty counts) go
//! through the same assembly.

use crate::assemble::{find, AssembleError};
use crate::figures::{pct, DscpClass, FrameClass};
use crate::profile::Profile;
use crate::spec::StreamLayout;
use crate::udp_report::{
    DscpCounts, ReceivedSum, ReceiverTally, SenderTally, UdpSideReport, UdpStreamSide, UdpTally,
};
use crate::{
    Direction, Dscp, Figures, Interval, PeerKind, Rate, StreamResult, StreamRole, Summary, TestEnv,
    TestResult, TestSpec, Timestamp, UdpSpec,
};

/// Figures for a whole test: loss against what the sender sent (RFC
/// 7680), so loss at the tail counts.
pub fn whole_test(tx: &SenderTally, rx: &ReceiverTally) -> Figures {
    // Over the test time, or the arrival span if longer: a span that
    // ends in an on/off profile's silence would overstate the rate.
    let mut f = from_parts(tx, rx, tx.packets, rx.secs.max(tx.secs));
    f.classes = classes(tx, rx);
    f
}

/// Figures for one interval of `secs`: loss against the sequence numbers
/// due in it (packets in flight belong to the next one).
pub fn one_interval(tx: &SenderTally, rx: &ReceiverTally, secs: f64) -> Figures {
    from_parts(tx, rx, rx.expected.max(rx.packets), secs)
}

/// What a sender alone knows of an interval of `secs` (a live line).
pub fn sender_half(tx: &SenderTally, secs: f64) -> Figures {
    Figures {
        sent_packets: Some(tx.packets),
        sent_bytes: Some(tx.bytes),
        sender_throughput_bps: Some(Rate::from_bytes_over(tx.bytes, secs).bps()),
        dscp_sent: counted(&tx.dscp_sent),
        ..Figures::default()
    }
}

/// What a receiver alone knows of an interval of `secs` (a live line):
/// loss against the sequence numbers due, not against what was sent.
pub fn receiver_half(rx: &ReceiverTally, secs: f64) -> Figures {
    let base = rx.expected.max(rx.packets);
    let lost = base - rx.packets.min(base);
    Figures {
        received_packets: Some(rx.packets),
        lost_packets: Some(lost),
        loss_pct: share(lost, base),
        duplicates: rx.duplicates,
        reordered: rx.reordered,
        received_bytes: Some(rx.bytes),
        throughput_bps: Some(Rate::from_bytes_over(rx.bytes, secs).bps()),
        jitter_ms: jitter(rx),
        ipdv: rx.ipdv,
        delay: rx.delay,
        dscp_received: counted(&rx.dscp_received),
        remarks: rx.remarks.clone(),
        ..Figures::default()
    }
}

fn counted(c: &DscpCounts) -> Option<DscpCounts> {
    (!c.is_empty()).then(|| c.clone())
}

/// `part` of `whole` in percent; of nothing, unknown (not 0 %, which an
/// alert on PDR would read as total loss).
fn share(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| pct(part, whole))
}

/// Jitter needs two packets; with fewer it is unknown.
fn jitter(rx: &ReceiverTally) -> Option<f64> {
    (rx.packets >= 2).then_some(rx.jitter_ms)
}

fn from_parts(tx: &SenderTally, rx: &ReceiverTally, base: u64, secs: f64) -> Figures {
    let lost = base.saturating_sub(rx.packets);
    Figures {
        sent_packets: Some(tx.packets),
        received_packets: Some(rx.packets),
        lost_packets: Some(lost),
        loss_pct: share(lost, base),
        pdr_pct: share(rx.packets.min(base), base),
        duplicates: rx.duplicates,
        reordered: rx.reordered,
        loss_burst_max: rx.loss_burst_max,
        sent_bytes: Some(tx.bytes),
        received_bytes: Some(rx.bytes),
        throughput_bps: Some(Rate::from_bytes_over(rx.bytes, secs).bps()),
        sender_throughput_bps: Some(Rate::from_bytes_over(tx.bytes, tx.secs).bps()),
        jitter_ms: jitter(rx),
        ipdv: rx.ipdv,
        delay: rx.delay,
        dscp_sent: counted(&tx.dscp_sent),
        dscp_received: counted(&rx.dscp_received),
        remarks: rx.remarks.clone(),
        ..Figures::default()
    }
}

/// One entry per DSCP sent, over a whole test (intervals have none:
/// packets in flight would show as lost in one and found in the next).
/// Empty where the receiver did not count by the sender's DSCP.
fn classes(tx: &SenderTally, rx: &ReceiverTally) -> Vec<DscpClass> {
    if rx.received_by_sent_dscp.is_empty() && rx.packets > 0 {
        return Vec::new();
    }
    tx.dscp_sent
        .iter()
        .map(|(d, sent)| {
            let received = rx.received_by_sent_dscp.get(d).min(sent);
            DscpClass {
                dscp: Dscp::new(d).unwrap_or_default(),
                sent_packets: sent,
                received_packets: received,
                lost_packets: sent - received,
                loss_pct: pct(sent - received, sent),
                pdr_pct: pct(received, sent),
                // (a class exists only for a DSCP that was sent: sent > 0)
            }
        })
        .collect()
}

struct Pair<'a> {
    stream: u16,
    direction: Direction,
    client: &'a UdpStreamSide,
    server: &'a UdpStreamSide,
}

fn sent(t: &UdpTally) -> Option<&SenderTally> {
    match t {
        UdpTally::Sent(s) => Some(s),
        UdpTally::Received(_) => None,
    }
}

fn received(t: &UdpTally) -> Option<&ReceiverTally> {
    match t {
        UdpTally::Received(r) => Some(r),
        UdpTally::Sent(_) => None,
    }
}

/// The figures of what is known: both ends joined (over an interval of
/// `secs`, or the whole test), or the half one end reported. A side
/// that did not report is unknown, never zeros.
fn join(tx: Option<&SenderTally>, rx: Option<&ReceiverTally>, secs: Option<f64>) -> Figures {
    match (tx, rx, secs) {
        (Some(t), Some(r), Some(s)) => one_interval(t, r, s),
        (Some(t), Some(r), None) => whole_test(t, r),
        (Some(t), None, s) => sender_half(t, s.unwrap_or(t.secs)),
        (None, Some(r), s) => receiver_half(r, s.unwrap_or(r.secs)),
        (None, None, _) => Figures::default(),
    }
}

impl Pair<'_> {
    fn sender(&self) -> &UdpStreamSide {
        if self.direction == Direction::Reverse {
            self.server
        } else {
            self.client
        }
    }
    fn receiver(&self) -> &UdpStreamSide {
        if self.direction == Direction::Reverse {
            self.client
        } else {
            self.server
        }
    }
    fn window(&self, k: usize) -> (Option<&SenderTally>, Option<&ReceiverTally>) {
        (
            self.sender().windows.get(k).and_then(sent),
            self.receiver().windows.get(k).and_then(received),
        )
    }
}

fn add_sent(into: &mut SenderTally, t: &SenderTally) {
    into.packets = into.packets.saturating_add(t.packets);
    into.bytes = into.bytes.saturating_add(t.bytes);
    into.secs = into.secs.max(t.secs);
    for (d, n) in t.dscp_sent.iter() {
        into.dscp_sent.add(d, n);
    }
}

/// The receiving end of `direction` and its merged tallies.
fn sums_of<'a>(
    d: Direction,
    client: &'a UdpSideReport,
    server: &'a UdpSideReport,
) -> Option<&'a ReceivedSum> {
    match d {
        Direction::Reverse => client.received_sum.as_ref(),
        _ => server.received_sum.as_ref(),
    }
}

fn pairs<'a>(
    spec: &UdpSpec,
    client: &'a UdpSideReport,
    server: &'a UdpSideReport,
) -> Result<Vec<Pair<'a>>, AssembleError> {
    (0..spec.stream_count())
        .map(|i| {
            let stream = u16::try_from(i).unwrap_or(u16::MAX);
            let direction = spec.stream_direction(i);
            let (c, s) = match direction {
                Direction::Reverse => (StreamRole::Receiver, StreamRole::Sender),
                _ => (StreamRole::Sender, StreamRole::Receiver),
            };
            Ok(Pair {
                stream,
                direction,
                client: find(&client.streams, "client", stream, c)?,
                server: find(&server.streams, "server", stream, s)?,
            })
        })
        .collect()
}

/// The sum of `direction`'s senders over window `k` (or the whole test).
/// The sum of `direction`'s senders over window `k` (or the whole test),
/// and how many streams it adds up; unknown if one sender did not report.
fn senders_of(pairs: &[Pair<'_>], d: Direction, k: Option<usize>) -> (Option<SenderTally>, u16) {
    let mut tx = Some(SenderTally::default());
    let mut n = 0u16;
    for p in pairs.iter().filter(|p| p.direction == d) {
        let t = match k {
            Some(k) => p.window(k).0,
            None => sent(&p.sender().measured),
        };
        tx = tx.zip(t).map(|(mut sum, t)| {
            add_sent(&mut sum, t);
            sum
        });
        n += 1;
    }
    (tx, n)
}

/// Joins both ends' reports of the UDP test `spec`, started at `start`,
/// against a server that spoke `peer`'s protocol.
pub fn udp_result(
    spec: &UdpSpec,
    peer: PeerKind,
    start: Timestamp,
    client: &UdpSideReport,
    server: &UdpSideReport,
) -> Result<TestResult, AssembleError> {
    let pairs = pairs(spec, client, server)?;
    let flows = spec.direction.flows();
    let intervals = client
        .windows
        .iter()
        .enumerate()
        .map(|(k, w)| {
            let secs = w.end_s - w.start_s;
            let streams = pairs
                .iter()
                .map(|p| {
                    let (tx, rx) = p.window(k);
                    join(tx, rx, Some(secs)).of_stream(p.stream, p.direction)
                })
                .collect();
            let sums = flows
                .iter()
                .map(|&d| {
                    let (tx, n) = senders_of(&pairs, d, Some(k));
                    let rx = sums_of(d, client, server).and_then(|s| s.windows.get(k));
                    Figures {
                        direction: Some(d),
                        streams: Some(n),
                        ..join(tx.as_ref(), rx, Some(secs))
                    }
                })
                .collect();
            Interval {
                start_s: w.start_s,
                end_s: w.end_s,
                omitted: crate::result::in_warm_up(w.end_s, spec.omit),
                size_bytes: None,
                streams,
                sums,
                round_trip: None,
            }
        })
        .collect();
    // The video profile's frame types are its DSCPs (FrameKind::dscp).
    let video = matches!(spec.profile, Profile::Video(_));
    let with_frames = |mut f: Figures, rx: Option<&ReceiverTally>, d: Direction| {
        if let Some(r) = rx.filter(|r| !r.flow_labels.is_empty()) {
            f.flow_labels = r.flow_labels.clone();
            // The client's packets carry the label asked (`--flowlabel`).
            if d == Direction::Forward {
                f.flow_label_sent = spec.flowlabel;
            }
        }
        if video {
            let counts = rx.map_or(&[][..], |r| &r.frames);
            f.frames = FrameClass::from_classes(&f.classes, counts);
            f.decodable_frames_pct = crate::video::decodable_pct(counts);
        }
        f
    };
    let streams = pairs
        .iter()
        .map(|p| {
            let tx = sent(&p.sender().measured);
            let rx = received(&p.receiver().measured);
            StreamResult {
                figures: with_frames(
                    join(tx, rx, None).of_stream(p.stream, p.direction),
                    rx,
                    p.direction,
                ),
                client_socket: p.client.socket.clone(),
                server_socket: p.server.socket.clone(),
            }
        })
        .collect();
    let summary_of = |d: Direction| -> Option<Figures> {
        if !flows.contains(&d) {
            return None;
        }
        let (tx, n) = senders_of(&pairs, d, None);
        let rx = sums_of(d, client, server).map(|s| &s.measured);
        Some(with_frames(
            Figures {
                streams: Some(n),
                ..join(tx.as_ref(), rx, None)
            },
            rx,
            d,
        ))
    };
    let interrupted = client.stopped_early || server.stopped_early;
    let env = TestEnv::between(client.env.clone(), server.env.clone(), peer);
    let mut result = TestResult::new(TestSpec::Udp(spec.clone()), env, start);
    // A test bounded by volume lasts as long as its senders sent.
    result.duration_s = if interrupted || spec.volume().is_some() {
        pairs
            .iter()
            .filter_map(|p| sent(&p.sender().measured).map(|t| t.secs))
            .fold(0.0, f64::max)
    } else {
        spec.time.as_secs_f64()
    };
    result.interrupted = interrupted;
    result.intervals = intervals;
    result.streams = streams;
    result.summary = Summary {
        forward: summary_of(Direction::Forward),
        reverse: summary_of(Direction::Reverse),
        ..Summary::default()
    };
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::udp_report::Remark;

    #[test]
    fn whole_test_loss_counts_the_tail() {
        let tx = SenderTally {
            packets: 1000,
            bytes: 1_000_000,
            secs: 1.0,
            ..SenderTally::default()
        };
        let rx = ReceiverTally {
            packets: 950,
            bytes: 950_000,
            expected: 950, // the last 50 never arrived
            secs: 1.0,
            duplicates: Some(0),
            ..ReceiverTally::default()
        };
        let c = whole_test(&tx, &rx);
        assert_eq!(c.lost_packets, Some(50));
        assert!((c.loss_pct.unwrap() - 5.0).abs() < 1e-9);
        assert!((c.pdr_pct.unwrap() - 95.0).abs() < 1e-9);
        assert_eq!(c.throughput_bps, Some(7_600_000));
        assert_eq!(c.sender_throughput_bps, Some(8_000_000));
        assert_eq!(c.duplicates, Some(0));
        assert_eq!(c.reordered, None, "not counted is unknown, not 0");
        let i = one_interval(&tx, &rx, 1.0);
        assert_eq!(
            i.lost_packets,
            Some(0),
            "within the interval nothing due was missing"
        );
    }

    #[test]
    fn an_interval_with_nothing_due_has_no_loss_figure() {
        // An on/off profile's silent second: nothing sent, nothing due.
        let i = one_interval(&SenderTally::default(), &ReceiverTally::default(), 1.0);
        assert_eq!((i.loss_pct, i.pdr_pct, i.jitter_ms), (None, None, None));
        assert_eq!(i.received_packets, Some(0));
    }

    #[test]
    fn a_side_that_did_not_report_is_unknown_not_zero() {
        let tx = SenderTally {
            packets: 100,
            bytes: 100_000,
            secs: 1.0,
            ..SenderTally::default()
        };
        let f = join(Some(&tx), None, Some(1.0));
        assert_eq!(f.sent_packets, Some(100));
        assert_eq!(f.sender_throughput_bps, Some(800_000));
        assert_eq!(
            (f.received_packets, f.loss_pct, f.pdr_pct),
            (None, None, None)
        );
        assert_eq!(join(None, None, None), Figures::default());
    }

    #[test]
    fn classes_give_loss_per_dscp_and_remarks_stay_structured() {
        let tx = SenderTally {
            packets: 300,
            dscp_sent: DscpCounts([(46, 200), (0, 100)].into_iter().collect()),
            ..SenderTally::default()
        };
        let rx = ReceiverTally {
            packets: 250,
            received_by_sent_dscp: DscpCounts([(46, 150), (0, 100)].into_iter().collect()),
            remarks: vec![Remark {
                sent: Dscp::EF,
                received: Dscp::BEST_EFFORT,
                packets: 150,
            }],
            ..ReceiverTally::default()
        };
        let f = whole_test(&tx, &rx);
        let ef = f.classes.iter().find(|c| c.dscp == Dscp::EF).unwrap();
        assert_eq!((ef.sent_packets, ef.lost_packets), (200, 50));
        assert!((ef.loss_pct - 25.0).abs() < 1e-9);
        assert_eq!(f.remark_share_pct(&f.remarks[0]), Some(100.0));
    }
}
