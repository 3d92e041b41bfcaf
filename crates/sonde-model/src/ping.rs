//! `sonde ping`: what to send ([`PingSpec`]) and what came back
//! ([`PingResult`], the document `sonde ping -J` prints).

use crate::rtt::{PingCounts, RttStats};
use crate::{Dscp, IpFamily, Timestamp};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How echo requests travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum PingProto {
    /// ICMP or ICMPv6 echo.
    #[default]
    Icmp,
    /// STAMP (RFC 8762) test packets to a reflector.
    Udp,
}

/// A ping series (one per size in a sweep).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PingSpec {
    pub host: String,
    pub proto: PingProto,
    /// The reflector's UDP port (`proto = udp`).
    pub port: u16,
    /// Requests per size; 0: until interrupted.
    pub count: u64,
    #[serde(with = "crate::serde_secs", rename = "interval_s")]
    pub interval: Duration,
    /// Payload sizes in bytes: one series each, in this order.
    pub sizes: Vec<u32>,
    pub dscp: Option<Dscp>,
    pub family: IpFamily,
    /// Length of the reporting intervals, by send time.
    #[serde(with = "crate::serde_secs", rename = "report_interval_s")]
    pub report_interval: Duration,
    /// How long to wait for an answer after the last request.
    #[serde(with = "crate::serde_secs", rename = "timeout_s")]
    pub timeout: Duration,
    /// Both hosts' clocks are synchronised: one-way delays are meaningful.
    pub clock_synced: bool,
}

/// One answer.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PingReply {
    pub seq: u64,
    pub size: u32,
    /// Sent this long after the test began.
    pub sent_s: f64,
    pub rtt_ms: f64,
    pub ttl: Option<u8>,
    pub duplicate: bool,
    /// STAMP only: sender → reflector, reflector → sender (meaningful
    /// with synchronised clocks) and the time the reflector held it.
    pub forward_ms: Option<f64>,
    pub backward_ms: Option<f64>,
    pub dwell_ms: Option<f64>,
}

/// One-way delays of a STAMP series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OneWayDelays {
    pub clock_synced: bool,
    pub forward_ms: Option<RttStats>,
    pub backward_ms: Option<RttStats>,
    pub dwell_ms: Option<RttStats>,
}

/// What one size's series found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PingSeries {
    pub size: u32,
    #[serde(flatten)]
    pub counts: PingCounts,
    pub one_way: Option<OneWayDelays>,
}

/// One reporting interval of a series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PingInterval {
    pub start_s: f64,
    pub end_s: f64,
    pub size: u32,
    #[serde(flatten)]
    pub counts: PingCounts,
}

/// The result of `sonde ping`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PingResult {
    pub format_version: u32,
    pub sonde_version: String,
    /// Always `"ping"`.
    pub test: String,
    pub spec: PingSpec,
    /// The address the requests went to.
    pub target: String,
    /// `"icmp-datagram"`, `"icmp-raw"` or `"stamp"`: how they were sent.
    pub method: String,
    pub start: Timestamp,
    pub duration_s: f64,
    pub interrupted: bool,
    pub intervals: Vec<PingInterval>,
    pub series: Vec<PingSeries>,
    /// Every series together.
    #[serde(flatten)]
    pub summary: PingCounts,
}
