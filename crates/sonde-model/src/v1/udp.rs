//! Format 1 of the UDP result, and its conversion. Format 1 also stored
//! remarking as sentences (`remarking`); format 2 keeps only the
//! structured `remarks`, from which a printer writes the sentence.

use super::spec::UdpSpecV1;
use super::{peer_of, Latency};
use crate::figures::DscpClass;
use crate::udp_report::{DscpCounts, OneWayDelay, Quantiles, Remark};
use crate::{
    Direction, Dscp, Figures, Interval, ResultId, SocketInForce, StreamResult, Summary, TestEnv,
    TestKind, TestResult, TestSpec, Timestamp, RESULT_FORMAT_VERSION,
};
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
pub(super) struct UdpResult {
    sonde_version: String,
    title: Option<String>,
    spec: UdpSpecV1,
    env: Env,
    start: Timestamp,
    duration_s: f64,
    interrupted: bool,
    intervals: Vec<UdpInterval>,
    streams: Vec<UdpStream>,
    summary: UdpSummary,
    #[serde(default)]
    latency: Option<Latency>,
}

#[derive(Debug, Clone, Deserialize)]
struct Env {
    client: crate::HostEnv,
    server: crate::HostEnv,
}

#[derive(Debug, Clone, Deserialize)]
struct Counts {
    sent: u64,
    received: u64,
    lost: u64,
    loss_pct: f64,
    pdr_pct: f64,
    duplicates: u64,
    reordered: u64,
    bytes: u64,
    throughput_bps: u64,
    offered_bps: u64,
    jitter_ms: f64,
    ipdv: Option<Quantiles>,
    delay: Option<OneWayDelay>,
    dscp_sent: DscpCounts,
    dscp_received: DscpCounts,
    remarks: Vec<Remark>,
}

#[derive(Debug, Clone, Deserialize)]
struct ClassCounts {
    dscp: Dscp,
    sent: u64,
    received: u64,
    lost: u64,
    loss_pct: f64,
    pdr_pct: f64,
}

#[derive(Debug, Clone, Deserialize)]
struct StreamInterval {
    stream: u16,
    direction: Direction,
    #[serde(flatten)]
    counts: Counts,
}

#[derive(Debug, Clone, Deserialize)]
struct DirectionCounts {
    direction: Direction,
    streams: u16,
    #[serde(flatten)]
    counts: Counts,
    classes: Vec<ClassCounts>,
}

#[derive(Debug, Clone, Deserialize)]
struct UdpInterval {
    start_s: f64,
    end_s: f64,
    omitted: bool,
    streams: Vec<StreamInterval>,
    sums: Vec<DirectionCounts>,
}

#[derive(Debug, Clone, Deserialize)]
struct UdpStream {
    stream: u16,
    direction: Direction,
    client_socket: SocketInForce,
    server_socket: SocketInForce,
    #[serde(flatten)]
    counts: Counts,
    classes: Vec<ClassCounts>,
}

#[derive(Debug, Clone, Deserialize)]
struct UdpSummary {
    #[serde(default)]
    forward: Option<DirectionCounts>,
    #[serde(default)]
    reverse: Option<DirectionCounts>,
}

impl Counts {
    /// `iperf3`: format 1 wrote 0 for what an iperf3 peer did not count.
    fn figures(self, iperf3: bool) -> Figures {
        let counted = |c: DscpCounts| (!c.is_empty()).then_some(c);
        Figures {
            sent_packets: Some(self.sent),
            received_packets: Some(self.received),
            lost_packets: Some(self.lost),
            loss_pct: Some(self.loss_pct),
            pdr_pct: Some(self.pdr_pct),
            // Format 1 wrote 0 for what an iperf3 peer does not count;
            // an iperf3 server counts no reordering of what it received.
            duplicates: (!iperf3).then_some(self.duplicates),
            reordered: Some(self.reordered).filter(|_| !iperf3 || self.reordered > 0),
            received_bytes: Some(self.bytes),
            throughput_bps: Some(self.throughput_bps),
            sender_throughput_bps: Some(self.offered_bps),
            jitter_ms: Some(self.jitter_ms),
            ipdv: self.ipdv,
            delay: self.delay,
            dscp_sent: counted(self.dscp_sent),
            dscp_received: counted(self.dscp_received),
            remarks: self.remarks,
            ..Figures::default()
        }
    }
}

fn classes(c: Vec<ClassCounts>) -> Vec<DscpClass> {
    c.into_iter()
        .map(|c| DscpClass {
            dscp: c.dscp,
            sent_packets: c.sent,
            received_packets: c.received,
            lost_packets: c.lost,
            loss_pct: c.loss_pct,
            pdr_pct: c.pdr_pct,
        })
        .collect()
}

impl DirectionCounts {
    fn figures(self, iperf3: bool) -> Figures {
        Figures {
            direction: Some(self.direction),
            streams: Some(self.streams),
            classes: classes(self.classes),
            ..self.counts.figures(iperf3)
        }
    }
}

impl UdpResult {
    pub(super) fn upgrade(self, id: ResultId) -> TestResult {
        let peer = peer_of(&self.env.server);
        let iperf3 = peer == crate::PeerKind::Iperf3;
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
                    .map(|s| s.counts.figures(iperf3).of_stream(s.stream, s.direction))
                    .collect(),
                sums: i.sums.into_iter().map(|s| s.figures(iperf3)).collect(),
                round_trip: None,
            })
            .collect();
        let streams = self
            .streams
            .into_iter()
            .map(|s| StreamResult {
                figures: Figures {
                    classes: classes(s.classes),
                    ..s.counts.figures(iperf3).of_stream(s.stream, s.direction)
                },
                client_socket: s.client_socket,
                server_socket: s.server_socket,
            })
            .collect();
        // A summary section is the direction's own: no `direction` field.
        let section = |d: DirectionCounts| Figures {
            direction: None,
            ..d.figures(iperf3)
        };
        // Format 1's spec had no `latency`: a latency section says it was asked.
        let spec = self.spec.upgrade(self.latency.is_some());
        TestResult {
            id,
            format_version: RESULT_FORMAT_VERSION,
            sonde_version: self.sonde_version,
            test: TestKind::Udp,
            title: self.title,
            spec: TestSpec::Udp(spec),
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
                forward: self.summary.forward.map(section),
                reverse: self.summary.reverse.map(section),
                total: None,
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
