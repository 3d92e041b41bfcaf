//! Joining the client's and the server's [`SideReport`] into one
//! [`TcpResult`]: the sender's side gives bytes written and TCP_INFO, the
//! receiver's side gives goodput.

use crate::spec::StreamLayout;
use crate::{
    Direction, DirectionSummary, Interval, IntervalSum, Rate, SideReport, StreamInterval,
    StreamResult, StreamRole, StreamSide, TcpResult, TcpSpec, TcpSummary, TestEnv, Timestamp,
    RESULT_FORMAT_VERSION, SONDE_VERSION,
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
    StreamResult {
        stream: p.stream,
        direction: p.direction,
        client_socket: p.client.socket.clone(),
        server_socket: p.server.socket.clone(),
        sent_bytes: tx.measured_bytes,
        received_bytes: rx.measured_bytes,
        throughput_bps: Rate::from_bytes_over(rx.measured_bytes, rx.measured_secs).bps(),
        sender_throughput_bps: Rate::from_bytes_over(tx.measured_bytes, tx.measured_secs).bps(),
        retransmits: tcp.map(|t| t.total_retrans.saturating_sub(tx.omitted_retrans)),
        // A peer that reports only retransmits (an iperf3 server) leaves
        // the rest at 0, which no real connection reads: unknown.
        rtt_ms: tcp.filter(|t| t.srtt_us > 0).map(|t| us_to_ms(t.srtt_us)),
        min_rtt_ms: tcp
            .filter(|t| t.min_rtt_us > 0)
            .map(|t| us_to_ms(t.min_rtt_us)),
        max_cwnd_bytes: tx
            .samples
            .iter()
            .filter_map(|s| s.tcp.map(|t| t.cwnd_bytes))
            .chain(tcp.map(|t| t.cwnd_bytes))
            .filter(|c| *c > 0)
            .max(),
    }
}

fn stream_interval(p: &Pair<'_>, k: usize, secs: f64) -> StreamInterval {
    let (tx, rx) = (p.sender(), p.receiver());
    let tcp_now = tx.samples.get(k).and_then(|s| s.tcp);
    let retrans_before = if k == 0 {
        Some(0)
    } else {
        tx.samples
            .get(k - 1)
            .and_then(|s| s.tcp)
            .map(|t| t.total_retrans)
    };
    let received = rx.samples.get(k).map_or(0, |s| s.bytes);
    StreamInterval {
        stream: p.stream,
        direction: p.direction,
        sent_bytes: tx.samples.get(k).map_or(0, |s| s.bytes),
        received_bytes: received,
        throughput_bps: Rate::from_bytes_over(received, secs).bps(),
        retransmits: tcp_now
            .zip(retrans_before)
            .map(|(t, before)| t.total_retrans.saturating_sub(before)),
        cwnd_bytes: tcp_now.map(|t| t.cwnd_bytes),
        rtt_ms: tcp_now.map(|t| us_to_ms(t.srtt_us)),
    }
}

fn interval_sums(spec: &TcpSpec, streams: &[StreamInterval], secs: f64) -> Vec<IntervalSum> {
    spec.direction
        .flows()
        .iter()
        .map(|&direction| {
            let of_dir = || streams.iter().filter(move |s| s.direction == direction);
            let received: u64 = of_dir().map(|s| s.received_bytes).sum();
            IntervalSum {
                direction,
                sent_bytes: of_dir().map(|s| s.sent_bytes).sum(),
                received_bytes: received,
                throughput_bps: Rate::from_bytes_over(received, secs).bps(),
                retransmits: of_dir().map(|s| s.retransmits).sum(),
            }
        })
        .collect()
}

fn direction_summary(
    pairs: &[Pair<'_>],
    streams: &[StreamResult],
    d: Direction,
) -> Option<DirectionSummary> {
    let of_dir: Vec<&StreamResult> = streams.iter().filter(|s| s.direction == d).collect();
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
    let bytes: u64 = of_dir.iter().map(|s| s.received_bytes).sum();
    let sent: u64 = of_dir.iter().map(|s| s.sent_bytes).sum();
    Some(DirectionSummary {
        throughput_bps: Rate::from_bytes_over(bytes, rx_secs).bps(),
        bytes,
        retransmits: of_dir.iter().filter_map(|s| s.retransmits).sum(),
        sent_bytes: sent,
        sender_throughput_bps: Rate::from_bytes_over(sent, tx_secs).bps(),
        receiver_duration_s: rx_secs,
        streams: u16::try_from(of_dir.len()).unwrap_or(u16::MAX),
    })
}

/// Joins both ends' reports of the test `spec`, started at `start`.
pub fn tcp_result(
    spec: &TcpSpec,
    start: Timestamp,
    client: &SideReport,
    server: &SideReport,
) -> Result<TcpResult, AssembleError> {
    let pairs = pairs(spec, client, server)?;
    let interrupted = client.stopped_early || server.stopped_early;
    let omit_s = spec.omit.as_secs_f64();
    let intervals = client
        .windows
        .iter()
        .enumerate()
        .map(|(k, w)| {
            let secs = w.end_s - w.start_s;
            let streams: Vec<StreamInterval> =
                pairs.iter().map(|p| stream_interval(p, k, secs)).collect();
            Interval {
                start_s: w.start_s,
                end_s: w.end_s,
                omitted: w.end_s <= omit_s + 1e-3,
                sums: interval_sums(spec, &streams, secs),
                streams,
            }
        })
        .collect();
    let streams: Vec<StreamResult> = pairs.iter().map(stream_result).collect();
    let forward = direction_summary(&pairs, &streams, Direction::Forward);
    let reverse = direction_summary(&pairs, &streams, Direction::Reverse);
    let dirs = || forward.iter().chain(reverse.iter());
    let summary = TcpSummary {
        throughput_bps: dirs().map(|d| d.throughput_bps).sum(),
        bytes: dirs().map(|d| d.bytes).sum(),
        retransmits: dirs().map(|d| d.retransmits).sum(),
        sent_bytes: dirs().map(|d| d.sent_bytes).sum(),
        sender_throughput_bps: dirs().map(|d| d.sender_throughput_bps).sum(),
        forward: forward.clone(),
        reverse: reverse.clone(),
    };
    Ok(TcpResult {
        format_version: RESULT_FORMAT_VERSION,
        sonde_version: SONDE_VERSION.to_string(),
        test: "tcp".to_string(),
        title: spec.title.clone(),
        spec: spec.clone(),
        env: TestEnv {
            client: client.env.clone(),
            server: server.env.clone(),
        },
        start,
        duration_s: if interrupted {
            pairs
                .iter()
                .map(|p| p.sender().measured_secs)
                .fold(0.0, f64::max)
        } else {
            spec.time.as_secs_f64()
        },
        interrupted,
        intervals,
        streams,
        summary,
        latency: None,
    })
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
            sndbuf_bytes: 1,
            rcvbuf_bytes: 1,
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
                    total_retrans: r,
                    cwnd_bytes: 1000 * (k as u64 + 1),
                    srtt_us: 2500,
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
            Timestamp::now(),
            &client,
            &server,
        )
        .unwrap();
        assert_eq!(r.summary.bytes, 2000);
        assert_eq!(r.summary.throughput_bps, 8000);
        assert_eq!(r.summary.retransmits, 6, "9 total minus 3 in the warm-up");
        assert!(r.intervals[0].omitted && !r.intervals[1].omitted);
        assert_eq!(r.intervals[2].streams[0].retransmits, Some(4));
        assert_eq!(r.intervals[1].sums[0].received_bytes, 900);
        assert_eq!(r.streams[0].max_cwnd_bytes, Some(3000));
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
        let r = tcp_result(&s, Timestamp::now(), &client, &server).unwrap();
        assert_eq!(r.summary.forward.as_ref().unwrap().bytes, 20);
        assert_eq!(r.summary.reverse.as_ref().unwrap().bytes, 60);
        assert_eq!(r.summary.bytes, 80);
        assert_eq!(r.intervals[1].sums.len(), 2);
    }

    #[test]
    fn a_missing_stream_is_an_error_not_a_zero() {
        let client = report(vec![side(0, StreamRole::Sender, &[1, 1, 1], &[])]);
        let server = report(vec![]);
        let e = tcp_result(
            &spec(Direction::Forward),
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
