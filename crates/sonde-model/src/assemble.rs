//! Joining the client's and the server's [`SideReport`] into one TCP
//! [`TestResult`]: the sender's side gives bytes written and TCP_INFO, the
//! receiver's side gives goodput. A sonde server and an iperf3 server
//! (whose report knows less: `None`) go through the same assembly.

use crate::spec::StreamLayout;
use crate::{
    Direction, Figures, Interval, PeerKind, Rate, SideReport, StreamResult, StreamRole, StreamSide,
    Summary, TcpSpec, TestEnv, TestResult, TestSpec, Timestamp,
};

/// The two reports do not describe the same test.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AssembleError {
    #[error("the {side} did not report stream {stream}")]
    MissingStream { side: &'static str, stream: u16 },
    #[error("stream {stream}: the {side} reports itself as {found:?}, expected {expected:?}")]
    WrongRole {
        side: &'static str,
        stream: u16,
        found: StreamRole,
        expected: StreamRole,
    },
}

struct Pair<'a> {
    stream: u16,
    direction: Direction,
    client: &'a StreamSide,
    server: &'a StreamSide,
}

impl Pair<'_> {
    fn sender(&self) -> &StreamSide {
        match self.direction {
            Direction::Reverse => self.server,
            _ => self.client,
        }
    }
    fn receiver(&self) -> &StreamSide {
        match self.direction {
            Direction::Reverse => self.client,
            _ => self.server,
        }
    }
}

/// A stream as one end reports it: its number and this end's role.
pub(crate) trait ReportedStream {
    fn stream(&self) -> u16;
    fn role(&self) -> StreamRole;
}

impl ReportedStream for StreamSide {
    fn stream(&self) -> u16 {
        self.stream
    }
    fn role(&self) -> StreamRole {
        self.role
    }
}

impl ReportedStream for crate::UdpStreamSide {
    fn stream(&self) -> u16 {
        self.stream
    }
    fn role(&self) -> StreamRole {
        self.role
    }
}

/// Stream `stream` of one end's report, which must have the `expected` role.
pub(crate) fn find<'a, T: ReportedStream>(
    streams: &'a [T],
    side: &'static str,
    stream: u16,
    expected: StreamRole,
) -> Result<&'a T, AssembleError> {
    let s = streams
        .iter()
        .find(|s| s.stream() == stream)
        .ok_or(AssembleError::MissingStream { side, stream })?;
    if s.role() != expected {
        return Err(AssembleError::WrongRole {
            side,
            stream,
            found: s.role(),
            expected,
        });
    }
    Ok(s)
}

fn pairs<'a>(
    spec: &TcpSpec,
    client: &'a SideReport,
    server: &'a SideReport,
) -> Result<Vec<Pair<'a>>, AssembleError> {
    (0..spec.stream_count())
        .map(|i| {
            let stream = u16::try_from(i).unwrap_or(u16::MAX);
            let direction = spec.stream_direction(i);
            let (client_role, server_role) = match direction {
                Direction::Reverse => (StreamRole::Receiver, StreamRole::Sender),
                _ => (StreamRole::Sender, StreamRole::Receiver),
            };
            Ok(Pair {
                stream,
                direction,
                client: find(&client.streams, "client", stream, client_role)?,
                server: find(&server.streams, "server", stream, server_role)?,
            })
        })
        .collect()
}

fn us_to_ms(us: u32) -> f64 {
    f64::from(us) / 1000.0
}

fn stream_result(p: &Pair<'_>) -> StreamResult {
    let (tx, rx) = (p.sender(), p.receiver());
    let tcp = tx.final_tcp;
    let retransmits = tcp
        .and_then(|t| t.total_retrans)
        .map(|r| r.saturating_sub(tx.omitted_retrans));
    let figures = Figures {
        sent_bytes: Some(tx.measured_bytes),
        received_bytes: Some(rx.measured_bytes),
        throughput_bps: Some(Rate::from_bytes_over(rx.measured_bytes, rx.measured_secs).bps()),
        sender_throughput_bps: Some(
            Rate::from_bytes_over(tx.measured_bytes, tx.measured_secs).bps(),
        ),
        receiver_duration_s: Some(rx.measured_secs),
        retransmits,
        srtt_ms: tcp.and_then(|t| t.srtt_us).map(us_to_ms),
        min_rtt_ms: tcp.and_then(|t| t.min_rtt_us).map(us_to_ms),
        cwnd_bytes: tcp.and_then(|t| t.cwnd_bytes),
        max_cwnd_bytes: tx
            .samples
            .iter()
            .filter_map(|s| s.tcp.and_then(|t| t.cwnd_bytes))
            .chain(tcp.and_then(|t| t.cwnd_bytes))
            .max(),
        ..Figures::default()
    };
    StreamResult {
        figures: figures.of_stream(p.stream, p.direction),
        client_socket: p.client.socket.clone(),
        server_socket: p.server.socket.clone(),
    }
}

fn stream_interval(p: &Pair<'_>, k: usize, secs: f64) -> Figures {
    let (tx, rx) = (p.sender(), p.receiver());
    let tcp_now = tx.samples.get(k).and_then(|s| s.tcp);
    let retrans_before = if k == 0 {
        Some(0)
    } else {
        tx.samples
            .get(k - 1)
            .and_then(|s| s.tcp)
            .and_then(|t| t.total_retrans)
    };
    let sent = tx.samples.get(k).map(|s| s.bytes);
    let received = rx.samples.get(k).map(|s| s.bytes);
    Figures {
        sent_bytes: sent,
        received_bytes: received,
        throughput_bps: received.map(|b| Rate::from_bytes_over(b, secs).bps()),
        sender_throughput_bps: sent.map(|b| Rate::from_bytes_over(b, secs).bps()),
        retransmits: tcp_now
            .and_then(|t| t.total_retrans)
            .zip(retrans_before)
            .map(|(now, before)| now.saturating_sub(before)),
        cwnd_bytes: tcp_now.and_then(|t| t.cwnd_bytes),
        srtt_ms: tcp_now.and_then(|t| t.srtt_us).map(us_to_ms),
        ..Figures::default()
    }
    .of_stream(p.stream, p.direction)
}

/// The sum of an optional figure over `items`: unknown when any item's
/// is (a sum of the known parts would pass for the whole), or when there
/// are none.
fn sum_of<'a, T: 'a>(
    items: impl IntoIterator<Item = &'a T>,
    f: impl Fn(&T) -> Option<u64>,
) -> Option<u64> {
    items
        .into_iter()
        .map(f)
        .try_fold(None, |acc: Option<u64>, v| {
            v.map(|v| Some(acc.unwrap_or(0).saturating_add(v)))
        })
        .flatten()
}

/// Adds up the byte, rate and retransmit figures of `parts` (a figure
/// none of them has stays unknown).
pub fn add_tcp(parts: &[&Figures]) -> Figures {
    Figures {
        // A part that is one stream counts one; a direction its streams.
        streams: u16::try_from(
            parts
                .iter()
                .map(|f| u64::from(f.streams.unwrap_or(1)))
                .sum::<u64>(),
        )
        .ok(),
        sent_bytes: sum_of(parts.iter().copied(), |f| f.sent_bytes),
        received_bytes: sum_of(parts.iter().copied(), |f| f.received_bytes),
        throughput_bps: sum_of(parts.iter().copied(), |f| f.throughput_bps),
        sender_throughput_bps: sum_of(parts.iter().copied(), |f| f.sender_throughput_bps),
        retransmits: sum_of(parts.iter().copied(), |f| f.retransmits),
        ..Figures::default()
    }
}

fn interval_sums(spec: &TcpSpec, streams: &[Figures], secs: f64) -> Vec<Figures> {
    spec.direction
        .flows()
        .iter()
        .map(|&direction| {
            let of_dir: Vec<&Figures> = streams
                .iter()
                .filter(|s| s.direction == Some(direction))
                .collect();
            let mut sum = add_tcp(&of_dir);
            // Rates of a sum are its bytes over the window, not a sum of
            // rounded rates.
            sum.throughput_bps = sum
                .received_bytes
                .map(|b| Rate::from_bytes_over(b, secs).bps());
            sum.sender_throughput_bps =
                sum.sent_bytes.map(|b| Rate::from_bytes_over(b, secs).bps());
            sum.direction = Some(direction);
            sum
        })
        .collect()
}

fn direction_summary(
    pairs: &[Pair<'_>],
    streams: &[StreamResult],
    d: Direction,
) -> Option<Figures> {
    let of_dir: Vec<&Figures> = streams
        .iter()
        .map(|s| &s.figures)
        .filter(|f| f.direction == Some(d))
        .collect();
    if of_dir.is_empty() {
        return None;
    }
    let secs = |f: fn(&Pair<'_>) -> f64| {
        pairs
            .iter()
            .filter(|p| p.direction == d)
            .map(f)
            .fold(0.0_f64, f64::max)
    };
    let rx_secs = secs(|p| p.receiver().measured_secs);
    let tx_secs = secs(|p| p.sender().measured_secs);
    let mut sum = add_tcp(&of_dir);
    sum.throughput_bps = sum
        .received_bytes
        .map(|b| Rate::from_bytes_over(b, rx_secs).bps());
    sum.sender_throughput_bps = sum
        .sent_bytes
        .map(|b| Rate::from_bytes_over(b, tx_secs).bps());
    sum.receiver_duration_s = Some(rx_secs);
    Some(sum)
}

/// Joins both ends' reports of the test `spec`, started at `start`,
/// against a server that spoke `peer`'s protocol.
pub fn tcp_result(
    spec: &TcpSpec,
    peer: PeerKind,
    start: Timestamp,
    client: &SideReport,
    server: &SideReport,
) -> Result<TestResult, AssembleError> {
    let pairs = pairs(spec, client, server)?;
    let interrupted = client.stopped_early || server.stopped_early;
    let intervals = client
        .windows
        .iter()
        .enumerate()
        .map(|(k, w)| {
            let secs = w.end_s - w.start_s;
            let streams: Vec<Figures> = pairs.iter().map(|p| stream_interval(p, k, secs)).collect();
            Interval {
                start_s: w.start_s,
                end_s: w.end_s,
                omitted: crate::result::in_warm_up(w.end_s, spec.omit),
                size_bytes: None,
                sums: interval_sums(spec, &streams, secs),
                streams,
                round_trip: None,
            }
        })
        .collect();
    let streams: Vec<StreamResult> = pairs.iter().map(stream_result).collect();
    let forward = direction_summary(&pairs, &streams, Direction::Forward);
    let reverse = direction_summary(&pairs, &streams, Direction::Reverse);
    let dirs: Vec<&Figures> = forward.iter().chain(reverse.iter()).collect();
    let total = add_tcp(&dirs);
    let env = TestEnv::between(client.env.clone(), server.env.clone(), peer);
    let mut result = TestResult::new(TestSpec::Tcp(spec.clone()), env, start);
    // A test bounded by volume lasts as long as its senders sent.
    result.duration_s = if interrupted || spec.volume().is_some() {
        pairs
            .iter()
            .map(|p| p.sender().measured_secs)
            .fold(0.0, f64::max)
    } else {
        spec.time.as_secs_f64()
    };
    result.interrupted = interrupted;
    result.intervals = intervals;
    result.streams = streams;
    result.summary = Summary {
        forward,
        reverse,
        total: Some(total),
        ..Summary::default()
    };
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{HostEnv, SampleWindow, SideSample, SocketInForce, TcpInfoSnapshot};
    use std::time::Duration;

    fn socket() -> SocketInForce {
        SocketInForce {
            local: "[::1]:1".parse().unwrap(),
            remote: "[::1]:2".parse().unwrap(),
            sndbuf_bytes: Some(1),
            rcvbuf_bytes: Some(1),
            mss_bytes: None,
            congestion: None,
            dscp: None,
            flowlabel: None,
        }
    }

    fn side(stream: u16, role: StreamRole, per_interval: &[u64], retrans: &[u64]) -> StreamSide {
        let samples: Vec<SideSample> = per_interval
            .iter()
            .enumerate()
            .map(|(k, &bytes)| SideSample {
                bytes,
                tcp: retrans.get(k).map(|&r| TcpInfoSnapshot {
                    total_retrans: Some(r),
                    cwnd_bytes: Some(1000 * (k as u64 + 1)),
                    srtt_us: Some(2500),
                    ..TcpInfoSnapshot::default()
                }),
            })
            .collect();
        StreamSide {
            stream,
            role,
            socket: socket(),
            total_bytes: per_interval.iter().sum(),
            measured_bytes: per_interval[1..].iter().sum(),
            measured_secs: 2.0,
            omitted_retrans: retrans.first().copied().unwrap_or(0),
            final_tcp: samples.last().and_then(|s| s.tcp),
            samples,
        }
    }

    fn report(streams: Vec<StreamSide>) -> SideReport {
        SideReport {
            env: HostEnv::default(),
            windows: (0..3)
                .map(|k| SampleWindow {
                    start_s: k as f64,
                    end_s: k as f64 + 1.0,
                })
                .collect(),
            streams,
            stopped_early: false,
        }
    }

    fn spec(direction: Direction) -> TcpSpec {
        TcpSpec {
            time: Duration::from_secs(2),
            omit: Duration::from_secs(1),
            direction,
            ..TcpSpec::default()
        }
    }

    #[test]
    fn forward_takes_goodput_from_the_server_and_retransmits_from_the_client() {
        let client = report(vec![side(
            0,
            StreamRole::Sender,
            &[500, 1000, 1000],
            &[3, 5, 9],
        )]);
        let server = report(vec![side(0, StreamRole::Receiver, &[400, 900, 1100], &[])]);
        let r = tcp_result(
            &spec(Direction::Forward),
            PeerKind::Sonde,
            Timestamp::now(),
            &client,
            &server,
        )
        .unwrap();
        let total = r.summary.total.as_ref().unwrap();
        assert_eq!(total.received_bytes, Some(2000));
        assert_eq!(total.throughput_bps, Some(8000));
        assert_eq!(total.retransmits, Some(6), "9 total minus 3 in the warm-up");
        assert!(r.intervals[0].omitted && !r.intervals[1].omitted);
        assert_eq!(r.intervals[2].streams[0].retransmits, Some(4));
        assert_eq!(r.intervals[1].sums[0].received_bytes, Some(900));
        assert_eq!(r.streams[0].figures.max_cwnd_bytes, Some(3000));
        assert_eq!(r.streams[0].figures.srtt_ms, Some(2.5));
        assert!(r.summary.forward.is_some() && r.summary.reverse.is_none());
    }

    #[test]
    fn bidir_reports_each_direction() {
        let s = TcpSpec {
            direction: Direction::Bidir,
            ..spec(Direction::Bidir)
        };
        let client = report(vec![
            side(0, StreamRole::Sender, &[0, 10, 10], &[0, 0, 0]),
            side(1, StreamRole::Receiver, &[0, 30, 30], &[]),
        ]);
        let server = report(vec![
            side(0, StreamRole::Receiver, &[0, 10, 10], &[]),
            side(1, StreamRole::Sender, &[0, 30, 30], &[0, 1, 2]),
        ]);
        let r = tcp_result(&s, PeerKind::Sonde, Timestamp::now(), &client, &server).unwrap();
        assert_eq!(r.summary.forward.as_ref().unwrap().received_bytes, Some(20));
        assert_eq!(r.summary.reverse.as_ref().unwrap().received_bytes, Some(60));
        assert_eq!(r.summary.total.as_ref().unwrap().received_bytes, Some(80));
        assert_eq!(r.summary.total.as_ref().unwrap().streams, Some(2));
        assert_eq!(r.intervals[1].sums.len(), 2);
    }

    #[test]
    fn a_peer_that_reports_only_retransmits_leaves_the_rest_unknown() {
        let r = tcp_result(
            &spec(Direction::Reverse),
            PeerKind::Iperf3,
            Timestamp::now(),
            &report(vec![side(0, StreamRole::Receiver, &[0, 10, 10], &[])]),
            &report(vec![StreamSide {
                final_tcp: Some(TcpInfoSnapshot {
                    total_retrans: Some(7),
                    ..TcpInfoSnapshot::default()
                }),
                samples: Vec::new(),
                omitted_retrans: 0,
                ..side(0, StreamRole::Sender, &[0, 10, 10], &[])
            }]),
        )
        .unwrap();
        let s = &r.streams[0].figures;
        assert_eq!(s.retransmits, Some(7));
        assert_eq!(
            (s.srtt_ms, s.min_rtt_ms, s.max_cwnd_bytes),
            (None, None, None)
        );
        assert_eq!(r.env.peer, Some(PeerKind::Iperf3));
    }

    #[test]
    fn a_sum_with_an_unknown_part_is_unknown() {
        let known = Figures {
            retransmits: Some(3),
            received_bytes: Some(10),
            ..Figures::default()
        };
        let unknown = Figures {
            received_bytes: Some(5),
            ..Figures::default()
        };
        let sum = add_tcp(&[&known, &unknown]);
        assert_eq!(sum.received_bytes, Some(15));
        assert_eq!(sum.retransmits, None, "3 would pass for the whole");
        assert_eq!(sum.streams, Some(2));
        assert_eq!(add_tcp(&[]).received_bytes, None);
    }

    #[test]
    fn a_missing_stream_is_an_error_not_a_zero() {
        let client = report(vec![side(0, StreamRole::Sender, &[1, 1, 1], &[])]);
        let server = report(vec![]);
        let e = tcp_result(
            &spec(Direction::Forward),
            PeerKind::Sonde,
            Timestamp::now(),
            &client,
            &server,
        );
        assert_eq!(
            e.unwrap_err(),
            AssembleError::MissingStream {
                side: "server",
                stream: 0
            }
        );
    }
}
