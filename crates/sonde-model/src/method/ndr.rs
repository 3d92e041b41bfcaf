//! The RFC 2544 §26.1 throughput search (`sonde ndr`): its spec and
//! what it found per frame size.

use super::StepPlan;
use crate::spec::bad;
use crate::udp_report::OneWayDelay;
use crate::{IpFamily, Rate, ResultId, SpecError, UdpSpec};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Preamble, start-of-frame delimiter and inter-frame gap: the bytes an
/// Ethernet frame costs on the line beyond the frame itself (8 + 12).
pub const ETHERNET_L1_EXTRA_BYTES: u32 = 20;

/// Ethernet header and FCS plus IP and UDP headers around a UDP payload
/// of `family` (`V4` 18 + 20 + 8 = 46; otherwise IPv6, 18 + 40 + 8 = 66):
/// frame bytes = payload + this.
pub fn frame_overhead_bytes(family: IpFamily) -> u32 {
    match family {
        IpFamily::V4 => 18 + 20 + 8,
        IpFamily::V6 | IpFamily::Any => 18 + 40 + 8,
    }
}

/// How `sizes` are given.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum SizeKind {
    /// Ethernet frame sizes with FCS, as RFC 2544 gives them (`--sizes`).
    #[default]
    Frame,
    /// UDP payload sizes, as the studies gave them (`--payloads`).
    Payload,
}

/// An NDR search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct NdrSpec {
    /// The trial: host, port, family, DSCP, direction and the rest are
    /// kept; the search sets its rate, payload length and time.
    pub trial: UdpSpec,
    /// Frame or payload sizes to search, in order.
    pub sizes: Vec<u32>,
    pub size_kind: SizeKind,
    /// Largest loss a passing trial may have (0: no drop).
    pub loss_pct: f64,
    /// Stop when the bounds are this close, in % of the upper bound.
    pub resolution_pct: f64,
    /// The first trial's rate, as Ethernet frame bits per second; `None`:
    /// the unpaced sender's rate, measured.
    #[serde(rename = "max_rate_bps", skip_serializing_if = "Option::is_none")]
    pub max_rate: Option<Rate>,
    /// Length of each search trial.
    #[schemars(with = "f64")]
    #[serde(with = "crate::serde_secs", rename = "trial_s")]
    pub trial_time: Duration,
    /// Length of the trial that confirms the rate found (RFC 2544 asks
    /// at least 60 s).
    #[schemars(with = "f64")]
    #[serde(with = "crate::serde_secs", rename = "confirm_s")]
    pub confirm_time: Duration,
    /// Idle time between trials, so queues drain.
    #[schemars(with = "f64")]
    #[serde(with = "crate::serde_secs", rename = "gap_s")]
    pub gap: Duration,
    /// The medium's rate, for its theoretical maximum per size.
    #[serde(rename = "link_rate_bps", skip_serializing_if = "Option::is_none")]
    pub link_rate: Option<Rate>,
    /// How the rate is searched for.
    pub search: SearchMode,
    /// Families (`--families 6,4`); repeat rules do not apply to a search.
    pub step: StepPlan,
}

/// How an NDR search picks its next trial's rate.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum SearchMode {
    /// From what the failed trials delivered (TRex's loss-informed guess),
    /// then just past the bounds: few trials.
    #[default]
    Informed,
    /// Halve the interval every trial (TRex's default, RFC 2544's
    /// classic): the yardstick.
    Bisect,
}

/// What one trial of a search showed, in frames per second of its size.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct TrialOutcome {
    /// What the sender sent.
    pub offered_pps: f64,
    /// What arrived, over the time it took to arrive.
    pub delivered_pps: f64,
    pub loss_pct: f64,
    /// One-way delay's 99th percentile above its minimum in the trial.
    pub delay_rise_ms: Option<f64>,
}

/// How a trial of a search was judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TrialVerdict {
    Pass,
    /// Lost more than the bound.
    Loss,
    /// Lost nothing beyond the bound, but the path fell behind the
    /// sender while the delay grew: a queue was filling, and a longer
    /// trial at this rate would lose.
    QueueFilling,
}

impl TrialVerdict {
    pub fn passed(self) -> bool {
        self == TrialVerdict::Pass
    }
}

/// One trial of a search as it finished: what the live output prints.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct NdrTrial {
    pub family: IpFamily,
    /// Ethernet frame bytes, header and FCS included.
    pub frame_bytes: u32,
    pub payload_bytes: u32,
    /// The size asked, when it was raised to the smallest frame that
    /// carries sonde's test header.
    pub raised_from: Option<u32>,
    /// 1-based within the size (and family).
    pub trial: u32,
    /// The longer trial that confirms the rate found.
    pub confirming: bool,
    pub outcome: TrialOutcome,
    pub verdict: TrialVerdict,
    /// The trial's result (in the method's `trials`).
    pub result: ResultId,
}

impl NdrSpec {
    /// Checks the search's own rules and its trial's; errors name the key.
    pub fn validate(&self) -> Result<(), SpecError> {
        self.trial.validate()?;
        self.step.validate_as_step()?;
        if self.step.repeat != super::RepeatRule::Once {
            return Err(bad(
                "step.repeat",
                "an NDR search is not repeated step by step; repeat the whole search instead",
            ));
        }
        if self.trial.direction == crate::Direction::Bidir {
            return Err(bad("trial.direction", "search one direction at a time"));
        }
        if self.sizes.is_empty() {
            return Err(bad("sizes", "give at least one size"));
        }
        let most = crate::udp_spec::MAX_UDP_PAYLOAD;
        for &size in &self.sizes {
            let payload = match self.size_kind {
                SizeKind::Payload => size,
                SizeKind::Frame => size.saturating_sub(frame_overhead_bytes(IpFamily::V4)),
            };
            if size == 0 || payload > most {
                return Err(bad(
                    "sizes",
                    format!("{size} bytes: a UDP payload is at most {most}"),
                ));
            }
            if self.size_kind == SizeKind::Payload && size < crate::udp_spec::UDP_HEADER_LEN {
                return Err(bad(
                    "sizes",
                    format!(
                        "a {size}-byte payload cannot carry sonde's {}-byte test header",
                        crate::udp_spec::UDP_HEADER_LEN
                    ),
                ));
            }
        }
        if !(self.loss_pct.is_finite() && (0.0..100.0).contains(&self.loss_pct)) {
            return Err(bad(
                "loss_pct",
                format!("{}: 0 to under 100 %", self.loss_pct),
            ));
        }
        if !(self.resolution_pct.is_finite()
            && self.resolution_pct > 0.0
            && self.resolution_pct <= 50.0)
        {
            return Err(bad(
                "resolution_pct",
                format!("{}: above 0 and at most 50 %", self.resolution_pct),
            ));
        }
        if self.trial_time < Duration::from_millis(100) {
            return Err(bad("trial_s", "a trial lasts at least 100 ms"));
        }
        if self.max_rate.is_some_and(|r| r.bps() == 0) {
            return Err(bad(
                "max_rate_bps",
                "0: leave it out to start from the unpaced rate",
            ));
        }
        Ok(())
    }
}

impl Default for NdrSpec {
    fn default() -> Self {
        Self {
            trial: UdpSpec::default(),
            sizes: vec![64, 128, 256, 512, 1024, 1280, 1518],
            size_kind: SizeKind::Frame,
            loss_pct: 0.0,
            resolution_pct: 0.5,
            max_rate: None,
            trial_time: Duration::from_secs(2),
            confirm_time: Duration::from_secs(10),
            gap: Duration::from_secs(1),
            link_rate: None,
            search: SearchMode::default(),
            step: StepPlan::default(),
        }
    }
}

/// The no-drop rate found at one size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NdrSize {
    pub family: IpFamily,
    pub payload_bytes: u32,
    /// Ethernet frame bytes with FCS.
    pub frame_bytes: u32,
    /// The rate found, as Ethernet frame bits per second.
    pub rate_bps: u64,
    #[schemars(range(min = 0))]
    pub rate_pps: f64,
    /// The same rate as UDP payload (goodput) bits per second.
    pub payload_rate_bps: u64,
    /// Loss of the trial that confirmed the rate.
    #[schemars(range(min = 0, max = 100))]
    pub loss_pct: f64,
    /// Trials run at this size, the confirmation included.
    pub trials: u32,
    /// Whether the confirming trial passed.
    pub confirmed: bool,
    /// frame / (frame + preamble + gap), in percent (seed 002 Table 1).
    pub efficiency_pct: f64,
    /// The medium's maximum at this size (with `link_rate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_pps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_frame_bps: Option<u64>,
    /// One-way delay at the rate found (the confirming trial).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<OneWayDelay>,
    /// RTT median at the rate found (with latency probes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_p50_ms: Option<f64>,
    /// The trials' result ids, in order.
    pub trial_ids: Vec<ResultId>,
    /// What the reader should know: a size raised to the smallest that
    /// carries the test header, a rate the sender could not exceed, a
    /// confirmation that failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}
