//! What was measured: the versioned TCP result document.
//!
//! This is what `sonde tcp -J` prints and what the archive will store. Its
//! JSON Schema is `docs/schema/tcp-result-v1.schema.json`; a test checks
//! real output against it. Change a field only with a new
//! [`RESULT_FORMAT_VERSION`].

use crate::{Direction, HostEnv, SocketInForce, TcpSpec};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::time::SystemTime;

/// Version of the result document layout.
pub const RESULT_FORMAT_VERSION: u32 = 1;

/// A wall-clock instant written as RFC 3339 (UTC, microseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Timestamp(pub SystemTime);

impl Timestamp {
    pub fn now() -> Self {
        Self(SystemTime::now())
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&humantime::format_rfc3339_micros(self.0))
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        humantime::parse_rfc3339_weak(&s)
            .map(Timestamp)
            .map_err(serde::de::Error::custom)
    }
}

/// Both ends' hosts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestEnv {
    pub client: HostEnv,
    pub server: HostEnv,
}

/// One stream during one interval: bytes each end moved, and the sender's
/// TCP_INFO at the interval's end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamInterval {
    pub stream: u16,
    pub direction: Direction,
    pub sent_bytes: u64,
    pub received_bytes: u64,
    /// Receiver goodput over the interval.
    pub throughput_bps: u64,
    /// Retransmitted segments during the interval.
    pub retransmits: Option<u64>,
    pub cwnd_bytes: Option<u64>,
    pub rtt_ms: Option<f64>,
}

/// All streams of one direction during one interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalSum {
    pub direction: Direction,
    pub sent_bytes: u64,
    pub received_bytes: u64,
    pub throughput_bps: u64,
    pub retransmits: Option<u64>,
}

/// One reporting interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub start_s: f64,
    pub end_s: f64,
    /// Inside the warm-up (`-O`): shown, not counted in the summary.
    pub omitted: bool,
    pub streams: Vec<StreamInterval>,
    pub sums: Vec<IntervalSum>,
}

/// One stream over the whole test, with the sockets as the kernel set them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamResult {
    pub stream: u16,
    pub direction: Direction,
    pub client_socket: SocketInForce,
    pub server_socket: SocketInForce,
    pub sent_bytes: u64,
    pub received_bytes: u64,
    /// Receiver goodput after the warm-up.
    pub throughput_bps: u64,
    pub sender_throughput_bps: u64,
    pub retransmits: Option<u64>,
    /// Sender's smoothed RTT at the end of the test.
    pub rtt_ms: Option<f64>,
    pub min_rtt_ms: Option<f64>,
    pub max_cwnd_bytes: Option<u64>,
}

/// One direction over the whole test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DirectionSummary {
    /// Receiver goodput: bytes received after the warm-up over the time
    /// they took to arrive.
    pub throughput_bps: u64,
    /// Bytes received after the warm-up.
    pub bytes: u64,
    pub retransmits: u64,
    pub sent_bytes: u64,
    /// Bytes handed to the sender's socket per second of test time.
    pub sender_throughput_bps: u64,
    pub receiver_duration_s: f64,
    pub streams: u16,
}

/// The whole test. The top-level figures add up every direction; with
/// `--bidir`, `forward` and `reverse` give each direction on its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TcpSummary {
    pub throughput_bps: u64,
    pub bytes: u64,
    pub retransmits: u64,
    pub sent_bytes: u64,
    pub sender_throughput_bps: u64,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub forward: Option<DirectionSummary>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reverse: Option<DirectionSummary>,
}

/// The result of one TCP test: the document `sonde tcp -J` prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TcpResult {
    pub format_version: u32,
    pub sonde_version: String,
    /// Always `"tcp"`.
    pub test: String,
    pub title: Option<String>,
    pub spec: TcpSpec,
    pub env: TestEnv,
    pub start: Timestamp,
    /// Measured time (warm-up excluded): `time_s`, or less if interrupted.
    pub duration_s: f64,
    /// The test was stopped before its planned end (Ctrl-C, an abort).
    pub interrupted: bool,
    pub intervals: Vec<Interval>,
    pub streams: Vec<StreamResult>,
    pub summary: TcpSummary,
    /// With `--latency`: RTT to the server idle and under this load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<crate::rtt::LatencyUnderLoad>,
}
