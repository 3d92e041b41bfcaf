//! What an HTTP benchmark measured ([`HttpFigures`]): requests and
//! their rate, status codes and errors by kind, each phase's spread as
//! ab's "Connection Times" table, latency percentiles from a histogram
//! (from each request's intended send time in an open loop, with the
//! uncorrected figures beside them), and a ramp's steps with its knee.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One phase's spread over the requests that had it, in ms: ab's
/// columns.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PhaseStats {
    #[schemars(range(min = 1))]
    pub count: u64,
    #[schemars(range(min = 0))]
    pub min: f64,
    #[schemars(range(min = 0))]
    pub mean: f64,
    #[schemars(range(min = 0))]
    pub sd: f64,
    #[schemars(range(min = 0))]
    pub median: f64,
    #[schemars(range(min = 0))]
    pub max: f64,
}

/// Each phase of a request. `dns`, `connect` and `tls` only for requests
/// that opened their connection; `processing` is ab's: from the
/// connection ready to the last byte (`waiting` + `transfer` + the
/// request's writing).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
pub struct HttpPhases {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns: Option<PhaseStats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect: Option<PhaseStats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<PhaseStats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processing: Option<PhaseStats>,
    /// From the request written to the answer's first byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<PhaseStats>,
    /// From the first byte to the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transfer: Option<PhaseStats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<PhaseStats>,
}

/// Latency percentiles (ms) from a histogram (3 significant digits).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LatencyPercentiles {
    #[schemars(range(min = 0))]
    pub mean: f64,
    #[schemars(range(min = 0))]
    pub p50: f64,
    #[schemars(range(min = 0))]
    pub p75: f64,
    #[schemars(range(min = 0))]
    pub p90: f64,
    #[schemars(range(min = 0))]
    pub p99: f64,
    #[serde(rename = "p99.9")]
    #[schemars(range(min = 0))]
    pub p99_9: f64,
    #[serde(rename = "p99.99")]
    #[schemars(range(min = 0))]
    pub p99_99: f64,
    #[schemars(range(min = 0))]
    pub max: f64,
}

/// One step of a ramp.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HttpStep {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub connections: Option<u32>,
    /// The rate asked (open loop).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    pub requests: u64,
    pub errors: u64,
    #[schemars(range(min = 0))]
    pub requests_per_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<LatencyPercentiles>,
    /// Each phase of the step's requests (connect, TLS, waiting,
    /// transfer…), as the whole test's `phases_ms`: 000 Figs 47–50 draw
    /// each against load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phases_ms: Option<HttpPhases>,
}

/// The whole benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
pub struct HttpFigures {
    /// Requests answered (any status).
    pub requests: u64,
    /// Requests that got no answer (by kind in `errors_by_kind`), and
    /// answers with a status of 400 or more.
    pub errors: u64,
    #[schemars(range(min = 0))]
    pub requests_per_s: f64,
    /// Response bytes received: HTTP/1.1 headers and bodies; HTTP/2 bodies
    /// (DATA payload; HPACK leaves no header size to count).
    pub received_bytes: u64,
    /// `received_bytes` over the test, in bit/s.
    pub throughput_bps: u64,
    /// Answers by status code (`"200"`).
    #[schemars(extend("propertyNames" = { "pattern": "^[0-9]{1,3}$" }))]
    pub status: BTreeMap<String, u64>,
    /// Requests without an answer by why: `dns`, `connect`, `tls`,
    /// `timeout`, `closed`, `protocol`, `io`.
    #[schemars(extend("propertyNames" = {
        "enum": ["dns", "connect", "tls", "timeout", "closed", "protocol", "io"]
    }))]
    pub errors_by_kind: BTreeMap<String, u64>,
    pub phases_ms: HttpPhases,
    /// Open loop: from each request's intended send time (corrected for
    /// coordinated omission). Closed loop: from its send.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<LatencyPercentiles>,
    /// Open loop: from each request's actual send, as a closed-loop tool
    /// would report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncorrected_latency_ms: Option<LatencyPercentiles>,
    /// Open loop: the rate asked, per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub rate: Option<f64>,
    /// A ramp's steps, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<HttpStep>,
    /// The index in `steps` of the knee, if the ramp found one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knee: Option<usize>,
    /// A ramp of connections: Kleinrock's optimal load, the highest
    /// throughput measured times the lowest median latency (Little's law
    /// at the knee of the latency–throughput curve). It does not lag as
    /// the median-rise knee does when each request carries a fixed
    /// overhead on top of the server's work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub optimal_connections: Option<f64>,
}
