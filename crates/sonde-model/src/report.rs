//! What one end of a test measured on its own sockets.
//!
//! Each end (client and server) fills a [`SideReport`]; the client joins
//! the two into a [`crate::TcpResult`] with [`crate::assemble`].

use crate::{Dscp, HostEnv};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;

/// Whether this end wrote or read a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum StreamRole {
    Sender,
    Receiver,
}

impl StreamRole {
    /// The other end's role on the same stream.
    pub fn opposite(self) -> Self {
        match self {
            StreamRole::Sender => StreamRole::Receiver,
            StreamRole::Receiver => StreamRole::Sender,
        }
    }
}

/// Socket settings the kernel actually granted (they often differ from
/// what was asked: Linux doubles SO_SNDBUF/SO_RCVBUF for bookkeeping).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SocketInForce {
    pub local: SocketAddr,
    pub remote: SocketAddr,
    /// `None`: not known (a peer that does not report its sockets).
    pub sndbuf_bytes: Option<u64>,
    pub rcvbuf_bytes: Option<u64>,
    pub mss_bytes: Option<u32>,
    pub congestion: Option<String>,
    #[schemars(range(min = 0, max = 63))]
    pub dscp: Option<Dscp>,
    #[schemars(range(max = 1048575))]
    pub flowlabel: Option<u32>,
}

impl SocketInForce {
    /// The far end of this connected socket as far as this end knows it
    /// without the peer's word (an iperf3 peer does not report its
    /// sockets): the addresses swapped, every setting unknown.
    pub fn far_end(&self) -> SocketInForce {
        SocketInForce {
            local: self.remote,
            remote: self.local,
            sndbuf_bytes: None,
            rcvbuf_bytes: None,
            mss_bytes: None,
            congestion: None,
            dscp: None,
            flowlabel: None,
        }
    }
}

/// A reading of TCP_INFO for one socket. A field the kernel did not fill
/// (an older kernel's shorter struct) or a peer did not report (an
/// iperf3 server reports only retransmits) is `None`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
pub struct TcpInfoSnapshot {
    /// Segments retransmitted since the connection opened.
    pub total_retrans: Option<u64>,
    /// Congestion window in bytes (segments × MSS).
    pub cwnd_bytes: Option<u64>,
    /// Smoothed round-trip time in microseconds.
    pub srtt_us: Option<u32>,
    pub rttvar_us: Option<u32>,
    pub min_rtt_us: Option<u32>,
    pub snd_mss: Option<u32>,
    pub pmtu: Option<u32>,
    pub delivery_rate_bps: Option<u64>,
}

/// The time window of one interval report, in seconds from the test start.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SampleWindow {
    pub start_s: f64,
    pub end_s: f64,
}

/// One stream's reading at the end of one interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SideSample {
    /// Bytes written (sender) or read (receiver) during the interval.
    pub bytes: u64,
    pub tcp: Option<TcpInfoSnapshot>,
}

/// One stream as one end saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StreamSide {
    pub stream: u16,
    pub role: StreamRole,
    pub socket: SocketInForce,
    /// All bytes moved, warm-up included.
    pub total_bytes: u64,
    /// Bytes moved after the warm-up.
    pub measured_bytes: u64,
    /// Seconds over which `measured_bytes` moved: the nominal test time
    /// for a sender, warm-up end to last byte read for a receiver.
    pub measured_secs: f64,
    /// Retransmits during the warm-up (subtracted from the summary).
    pub omitted_retrans: u64,
    pub samples: Vec<SideSample>,
    pub final_tcp: Option<TcpInfoSnapshot>,
}

/// Everything one end measured in one test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SideReport {
    pub env: HostEnv,
    pub windows: Vec<SampleWindow>,
    pub streams: Vec<StreamSide>,
    /// Data stopped before the planned end (interrupted or aborted).
    #[serde(default)]
    pub stopped_early: bool,
}
