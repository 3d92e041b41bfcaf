//! Result format 1, as sonde 0.1 wrote it (`sonde tcp|udp|ping -J`), and
//! its explicit conversion to the current [`TestResult`].
//!
//! These types only read old documents; nothing writes them. Each keeps
//! the field names format 1 had, so a document written then still loads;
//! `tests/v1_documents.rs` reads real ones.

mod ping;
mod spec;
mod tcp;
mod udp;

use crate::rtt::{LatencyUnderLoad, ProbeMethod, RttStats};
use crate::{Figures, HostEnv, PeerKind, ResultId, TestResult};
use serde::Deserialize;

/// Which test a format-1 document holds (its `test` field).
#[derive(Deserialize)]
struct Kind {
    test: String,
}

/// A format-1 document could not be read.
#[derive(Debug, thiserror::Error)]
pub enum V1Error {
    #[error("a format-1 document of test '{0}': format 1 has tcp, udp and ping")]
    UnknownTest(String),
    #[error("a format-1 {test} document: {source}")]
    Malformed {
        test: &'static str,
        source: serde_json::Error,
    },
}

/// Reads a format-1 document and converts it; `id` becomes its id.
pub fn upgrade(doc: serde_json::Value, id: ResultId) -> Result<TestResult, V1Error> {
    let kind = Kind::deserialize(&doc).map_err(|source| V1Error::Malformed {
        test: "result",
        source,
    })?;
    let malformed = |test: &'static str| move |source| V1Error::Malformed { test, source };
    match kind.test.as_str() {
        "tcp" => Ok(tcp::TcpResult::deserialize(doc)
            .map_err(malformed("tcp"))?
            .upgrade(id)),
        "udp" => Ok(udp::UdpResult::deserialize(doc)
            .map_err(malformed("udp"))?
            .upgrade(id)),
        "ping" => Ok(ping::PingResult::deserialize(doc)
            .map_err(malformed("ping"))?
            .upgrade(id)),
        other => Err(V1Error::UnknownTest(other.to_string())),
    }
}

/// Format 1's figures of a series of echo requests.
#[derive(Debug, Clone, Deserialize)]
struct PingCounts {
    sent: u64,
    received: u64,
    loss_pct: f64,
    duplicates: u64,
    reordered: u64,
    rtt_ms: Option<RttStats>,
}

impl PingCounts {
    fn figures(self) -> Figures {
        Figures {
            sent_packets: Some(self.sent),
            received_packets: Some(self.received),
            lost_packets: Some(self.sent.saturating_sub(self.received)),
            loss_pct: Some(self.loss_pct),
            duplicates: Some(self.duplicates),
            reordered: Some(self.reordered),
            rtt_ms: self.rtt_ms,
            ..Figures::default()
        }
    }
}

/// Format 1's latency under load: the method was a string.
#[derive(Debug, Clone, Deserialize)]
struct Latency {
    method: String,
    idle: PingCounts,
    loaded: PingCounts,
    increase_ms: Option<f64>,
}

fn method(name: &str) -> Option<ProbeMethod> {
    match name {
        "icmp-datagram" => Some(ProbeMethod::IcmpDatagram),
        "icmp-raw" => Some(ProbeMethod::IcmpRaw),
        "stamp" => Some(ProbeMethod::Stamp),
        "stamp-authenticated" => Some(ProbeMethod::StampAuthenticated),
        _ => None,
    }
}

impl Latency {
    fn upgrade(self) -> LatencyUnderLoad {
        LatencyUnderLoad {
            // Format 1 wrote only these three; an unknown name was never
            // written, and reads as the raw socket ping used then.
            method: method(&self.method).unwrap_or(ProbeMethod::IcmpRaw),
            idle: self.idle.figures(),
            loaded: self.loaded.figures(),
            increase_ms: self.increase_ms,
        }
    }
}

/// Format 1 said an iperf3 peer by writing "iperf3" where the server's
/// sonde version would be.
fn peer_of(server: &HostEnv) -> PeerKind {
    if server.sonde_version.starts_with("iperf3") {
        PeerKind::Iperf3
    } else {
        PeerKind::Sonde
    }
}
