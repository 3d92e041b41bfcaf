//! `sonde tune` (seed 003 §3): a path's RTT and bottleneck, the BDP, both
//! ends' TCP buffers, advice sized to the path with a verification run;
//! and the measurement laboratory's matrix of RTTs × buffers × congestion
//! controls.

use crate::spec::bad;
use crate::{ByteSize, ResultId, SpecError, TcpBuffers, TcpSpec};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// `sonde tune HOST`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TuneSpec {
    /// The TCP test of the baseline and the verification (host, port,
    /// family, time); the verification sets its window.
    pub test: TcpSpec,
    /// How long the UDP run that finds the bottleneck sends.
    #[schemars(with = "f64")]
    #[serde(with = "crate::serde_secs", rename = "bottleneck_time_s")]
    pub bottleneck_time: Duration,
    /// Echo requests for the RTT.
    pub pings: u32,
    /// The buffer the verification runs with (default: the advised one).
    #[serde(default)]
    pub window: Option<ByteSize>,
    #[schemars(with = "f64")]
    #[serde(with = "crate::serde_secs", rename = "gap_s")]
    pub gap: Duration,
}

impl TuneSpec {
    pub fn validate(&self) -> Result<(), SpecError> {
        self.test.validate()?;
        if self.pings == 0 || self.pings > 1000 {
            return Err(bad("pings", "must be 1 to 1000"));
        }
        if self.bottleneck_time.is_zero() {
            return Err(bad("bottleneck_time_s", "must be more than 0"));
        }
        Ok(())
    }
}

/// Which end or what limits a TCP transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TuneLimit {
    /// TCP reached the path's bottleneck (90 % or more).
    Path,
    /// The receiver's buffer caps the window (the server's tcp_rmem).
    ReceiverBuffer,
    /// The sender's buffer caps the data in flight (this host's tcp_wmem).
    SenderBuffer,
    /// Neither buffer explains it: loss, the congestion control, or CPU.
    Other,
}

/// A buffer and the rate it allows at the path's RTT.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Ceiling {
    /// `this host (sender)` or `the server (receiver)`.
    pub end: String,
    /// The setting, e.g. `net.ipv4.tcp_rmem max`.
    pub setting: String,
    pub bytes: u64,
    /// bytes × 8 / RTT.
    #[schemars(range(min = 0))]
    pub ceiling_bps: f64,
}

/// What `sonde tune` found and advises.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TuneFindings {
    #[schemars(range(min = 0))]
    pub rtt_ms: f64,
    #[schemars(range(min = 0))]
    pub bottleneck_bps: f64,
    pub bdp_bytes: u64,
    /// TCP as the hosts are set now.
    #[schemars(range(min = 0))]
    pub baseline_bps: f64,
    pub client: Option<TcpBuffers>,
    pub server: Option<TcpBuffers>,
    pub ceilings: Vec<Ceiling>,
    pub limit: TuneLimit,
    /// The limit in a sentence.
    pub limit_evidence: String,
    /// The buffer advised (twice the BDP, in whole MiB, at least 4 MiB).
    pub advised_bytes: u64,
    /// The sysctl lines sized to the path (003's four lines).
    pub sysctl: Vec<String>,
    pub warnings: Vec<String>,
    /// TCP with the advised buffers (`-w`), and its gain over the baseline.
    #[schemars(range(min = 0))]
    pub verified_bps: Option<f64>,
    #[schemars(range(min = 0))]
    pub gain: Option<f64>,
    /// The baseline's, the bottleneck's, the RTT's and the verification's trials.
    pub trials: Vec<ResultId>,
}

/// One cell of the laboratory's matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TuneStep {
    #[schemars(range(min = 0))]
    pub rtt_ms: f64,
    #[schemars(range(min = 1))]
    pub window_bytes: u64,
    pub congestion: String,
    pub goodput_bps: Option<u64>,
    pub trial: ResultId,
}

/// `sonde tune --lab`: TCP over RTTs × buffers × congestion controls,
/// the RTT set on a lab link between steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TuneLabSpec {
    pub test: TcpSpec,
    pub lab: String,
    pub link: usize,
    #[schemars(with = "Vec<f64>")]
    #[serde(with = "crate::serde_secs::vec", rename = "rtts_s")]
    pub rtts: Vec<Duration>,
    /// Each step's `-w`; 0: the hosts' own buffers, autotuned within
    /// their `tcp_rmem`/`tcp_wmem` (seed 003's asymmetric buffers).
    pub windows: Vec<ByteSize>,
    pub congestion: Vec<String>,
    #[schemars(with = "f64")]
    #[serde(with = "crate::serde_secs", rename = "gap_s")]
    pub gap: Duration,
}

impl TuneLabSpec {
    pub fn validate(&self) -> Result<(), SpecError> {
        self.test.validate()?;
        if self.rtts.is_empty() || self.rtts.iter().any(|r| r.is_zero()) {
            return Err(bad("rtts", "give one or more RTTs above 0"));
        }
        // 0 stands for the hosts' own buffers (`auto`).
        if self.windows.is_empty() {
            return Err(bad("windows", "give one or more buffer sizes, or auto"));
        }
        if self.congestion.is_empty() {
            return Err(bad("congestion", "name one or more congestion controls"));
        }
        let cells = self.rtts.len() * self.windows.len() * self.congestion.len();
        if cells > 500 {
            return Err(bad(
                "rtts",
                format!("{cells} steps (RTTs × windows × congestion controls), more than 500"),
            ));
        }
        Ok(())
    }
}
