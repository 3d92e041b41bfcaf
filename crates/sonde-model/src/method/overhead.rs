//! `sonde overhead --measure`: a path's per-packet overhead estimated from
//! goodput at several payload sizes through its bottleneck.

use crate::spec::bad;
use crate::{ResultId, SpecError, UdpSpec};
use serde::{Deserialize, Serialize};
use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OverheadSpec {
    /// The trial: host, port, family, time and rate (0: unpaced, as fast
    /// as the path takes, which fills its bottleneck); the payload is set
    /// per step.
    pub probe: UdpSpec,
    /// UDP payload sizes, two or more.
    pub payloads: Vec<u32>,
    #[schemars(with = "f64")]
    #[serde(with = "crate::serde_secs", rename = "gap_s")]
    pub gap: Duration,
}

impl OverheadSpec {
    pub fn validate(&self) -> Result<(), SpecError> {
        self.probe.validate()?;
        let mut sizes = self.payloads.clone();
        sizes.sort_unstable();
        sizes.dedup();
        if sizes.len() < 2 {
            return Err(bad(
                "payloads",
                "give two or more different payload sizes (the fit needs them)",
            ));
        }
        for &p in &sizes {
            let mut probe = self.probe.clone();
            probe.length = p;
            if let Err(e) = probe.validate() {
                return Err(bad("payloads", format!("{p}: {}", e.reason)));
            }
        }
        Ok(())
    }
}

/// One payload size's goodput.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OverheadPoint {
    #[schemars(range(min = 1))]
    pub payload_bytes: u32,
    #[schemars(range(min = 0))]
    pub goodput_bps: f64,
    pub trial: ResultId,
}

/// A stack whose bytes per packet fit the measured overhead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StackFit {
    pub stack: String,
    /// Its bytes per packet beyond the payload (mean over the sizes).
    pub bytes: f64,
    /// Its bytes less the measured ones.
    pub delta_bytes: f64,
}

/// What the goodputs say: goodput = capacity × payload / (payload + overhead).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OverheadFit {
    /// Bytes per packet beyond the UDP payload that the bottleneck counts.
    pub per_packet_bytes: f64,
    /// Of those, beyond the UDP and IP headers of the family used.
    pub beyond_ip_bytes: f64,
    /// The bottleneck's rate, counting those bytes.
    #[schemars(range(min = 0))]
    pub capacity_bps: f64,
    /// Largest relative difference of a point's goodput from the fit.
    #[schemars(range(min = 0))]
    pub residual_pct: f64,
    pub points: Vec<OverheadPoint>,
    /// The stacks that fit within 4 bytes, best first.
    pub fits: Vec<StackFit>,
}
