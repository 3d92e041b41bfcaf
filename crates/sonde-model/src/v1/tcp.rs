//! Format 1 of the TCP result, and its conversion.

use super::spec::TcpSpecV1;
use super::{peer_of, Latency};
use crate::{
    Direction, Figures, Interval, PeerKind, ResultId, SocketInForce, StreamResult, Summary,
    TestEnv, TestKind, TestResult, TestSpec, Timestamp, RESULT_FORMAT_VERSION,
};
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
pub(super) struct TcpResult {
    sonde_version: String,
    title: Option<String>,
    spec: TcpSpecV1,
    env: Env,
    start: Timestamp,
    duration_s: f64,
    interrupted: bool,
    intervals: Vec<TcpInterval>,
    streams: Vec<TcpStream>,
    summary: TcpSummary,
    #[serde(default)]
    latency: Option<Latency>,
}

#[derive(Debug, Clone, Deserialize)]
struct Env {
    client: crate::HostEnv,
    server: crate::HostEnv,
}

#[derive(Debug, Clone, Deserialize)]
struct StreamInterval {
    stream: u16,
    direction: Direction,
    sent_bytes: u64,
    received_bytes: u64,
    throughput_bps: u64,
    retransmits: Option<u64>,
    cwnd_bytes: Option<u64>,
    rtt_ms: Option<f64>,
}

#[derive(Debug, Clone, Deserialize)]
struct IntervalSum {
    direction: Direction,
    sent_bytes: u64,
    received_bytes: u64,
    throughput_bps: u64,
    retransmits: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
struct TcpInterval {
    start_s: f64,
    end_s: f64,
    omitted: bool,
    streams: Vec<StreamInterval>,
    sums: Vec<IntervalSum>,
}

#[derive(Debug, Clone, Deserialize)]
struct TcpStream {
    stream: u16,
    direction: Direction,
    client_socket: SocketInForce,
    server_socket: SocketInForce,
    sent_bytes: u64,
    received_bytes: u64,
    throughput_bps: u64,
    sender_throughput_bps: u64,
    retransmits: Option<u64>,
    rtt_ms: Option<f64>,
    min_rtt_ms: Option<f64>,
    max_cwnd_bytes: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
struct DirectionSummary {
    throughput_bps: u64,
    bytes: u64,
    retransmits: u64,
    sent_bytes: u64,
    sender_throughput_bps: u64,
    receiver_duration_s: f64,
    streams: u16,
}

#[derive(Debug, Clone, Deserialize)]
struct TcpSummary {
    throughput_bps: u64,
    bytes: u64,
    retransmits: u64,
    sent_bytes: u64,
    sender_throughput_bps: u64,
    #[serde(default)]
    forward: Option<DirectionSummary>,
    #[serde(default)]
    reverse: Option<DirectionSummary>,
}

impl DirectionSummary {
    fn figures(self) -> Figures {
        Figures {
            streams: Some(self.streams),
            sent_bytes: Some(self.sent_bytes),
            received_bytes: Some(self.bytes),
            throughput_bps: Some(self.throughput_bps),
            sender_throughput_bps: Some(self.sender_throughput_bps),
            receiver_duration_s: Some(self.receiver_duration_s),
            retransmits: Some(self.retransmits),
            ..Figures::default()
        }
    }
}

impl TcpResult {
    pub(super) fn upgrade(self, id: ResultId) -> TestResult {
        let peer = peer_of(&self.env.server);
        // Format 1 wrote 0 for what an iperf3 server did not report.
        let known = |v: Option<f64>| v.filter(|v| peer == PeerKind::Sonde || *v > 0.0);
        let intervals = self
            .intervals
            .into_iter()
            .map(|i| Interval {
                start_s: i.start_s,
                end_s: i.end_s,
                omitted: i.omitted,
                size_bytes: None,
                streams: i
                    .streams
                    .into_iter()
                    .map(|s| {
                        Figures {
                            sent_bytes: Some(s.sent_bytes),
                            received_bytes: Some(s.received_bytes),
                            throughput_bps: Some(s.throughput_bps),
                            retransmits: s.retransmits,
                            cwnd_bytes: s.cwnd_bytes,
                            srtt_ms: s.rtt_ms,
                            ..Figures::default()
                        }
                        .of_stream(s.stream, s.direction)
                    })
                    .collect(),
                sums: i
                    .sums
                    .into_iter()
                    .map(|s| Figures {
                        direction: Some(s.direction),
                        sent_bytes: Some(s.sent_bytes),
                        received_bytes: Some(s.received_bytes),
                        throughput_bps: Some(s.throughput_bps),
                        retransmits: s.retransmits,
                        ..Figures::default()
                    })
                    .collect(),
                round_trip: None,
            })
            .collect();
        let streams = self
            .streams
            .into_iter()
            .map(|s| StreamResult {
                figures: Figures {
                    sent_bytes: Some(s.sent_bytes),
                    received_bytes: Some(s.received_bytes),
                    throughput_bps: Some(s.throughput_bps),
                    sender_throughput_bps: Some(s.sender_throughput_bps),
                    retransmits: s.retransmits,
                    srtt_ms: known(s.rtt_ms),
                    min_rtt_ms: known(s.min_rtt_ms),
                    max_cwnd_bytes: s.max_cwnd_bytes,
                    ..Figures::default()
                }
                .of_stream(s.stream, s.direction),
                client_socket: s.client_socket,
                server_socket: s.server_socket,
            })
            .collect();
        let sum = self.summary;
        let directions = usize::from(sum.forward.is_some()) + usize::from(sum.reverse.is_some());
        let total = Figures {
            streams: sum
                .forward
                .iter()
                .chain(sum.reverse.iter())
                .map(|d| d.streams)
                .reduce(|a, b| a + b)
                .filter(|_| directions > 0),
            sent_bytes: Some(sum.sent_bytes),
            received_bytes: Some(sum.bytes),
            throughput_bps: Some(sum.throughput_bps),
            sender_throughput_bps: Some(sum.sender_throughput_bps),
            retransmits: Some(sum.retransmits),
            ..Figures::default()
        };
        // Format 1's spec had no `latency`: a latency section says it was asked.
        let spec = self.spec.upgrade(self.latency.is_some());
        TestResult {
            id,
            format_version: RESULT_FORMAT_VERSION,
            sonde_version: self.sonde_version,
            test: TestKind::Tcp,
            title: self.title,
            spec: TestSpec::Tcp(spec),
            env: TestEnv {
                client: self.env.client,
                server: self.env.server,
                peer: Some(peer),
                source: None,
                target: None,
                method: None,
            },
            start: self.start,
            duration_s: self.duration_s,
            interrupted: self.interrupted,
            intervals,
            summary: Summary {
                forward: sum.forward.map(DirectionSummary::figures),
                reverse: sum.reverse.map(DirectionSummary::figures),
                total: Some(total),
                round_trip: None,
                latency: self.latency.map(Latency::upgrade),
            },
            streams,
            series: Vec::new(),
            server_output: None,
            http: None,
            trace: None,
        }
    }
}
