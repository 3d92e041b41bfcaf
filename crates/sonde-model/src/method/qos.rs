//! QoS on a DiffServ path (`sonde qos`, seed 004 §4): the checks of an
//! IP Premium (EF) class, and scenarios of a foreground flow against a
//! background mix sent from a third host.

use crate::spec::bad;
use crate::{Dscp, Rate, ResultId, SpecError, TcpSpec, UdpSpec};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// One of the checks of seed 004 §4.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum QosCheckKind {
    /// What each class's marking is when it arrives.
    Marking,
    /// Premium above its policer: the admitted rate and the loss.
    Policing,
    /// An on/off premium source: smoothed on arrival and not lost, or not.
    Shaping,
    /// Premium loss and jitter with and without congestion.
    Priority,
    /// Less than best effort under congestion: squeezed to its minimum
    /// share of the link, and no lower (seed 004 §2.2, §4.1).
    Lbe,
}

impl QosCheckKind {
    /// The checks `sonde qos check` runs when none are named (the LBE
    /// check needs the link's rate and the class's share: named alone).
    pub const ALL: [QosCheckKind; 4] = [
        QosCheckKind::Marking,
        QosCheckKind::Policing,
        QosCheckKind::Shaping,
        QosCheckKind::Priority,
    ];
    /// Every check there is.
    pub const EVERY: [QosCheckKind; 5] = [
        QosCheckKind::Marking,
        QosCheckKind::Policing,
        QosCheckKind::Shaping,
        QosCheckKind::Priority,
        QosCheckKind::Lbe,
    ];

    pub fn name(self) -> &'static str {
        match self {
            QosCheckKind::Marking => "marking",
            QosCheckKind::Policing => "policing",
            QosCheckKind::Shaping => "shaping",
            QosCheckKind::Priority => "priority",
            QosCheckKind::Lbe => "lbe",
        }
    }
}

impl std::str::FromStr for QosCheckKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::EVERY
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                format!("'{s}' is not a check: use marking, policing, shaping, priority, lbe")
            })
    }
}

/// `sonde qos check`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QosCheckSpec {
    /// The probe every check sends (host, port, payload size, family);
    /// each check sets its rate, marking, profile and time.
    pub probe: UdpSpec,
    pub checks: Vec<QosCheckKind>,
    /// The premium class (EF).
    pub premium: Dscp,
    /// Classes the marking check sends (unmarked, EF, AF, LBE).
    pub classes: Vec<Dscp>,
    /// The rate of each marking probe.
    pub marking_rate: Rate,
    /// How long each marking, policing and priority probe runs.
    #[schemars(with = "f64")]
    #[serde(with = "crate::serde_secs", rename = "probe_time_s")]
    pub probe_time: Duration,
    /// The premium policer's expected rate (bits/s of IP packets); the
    /// policing check sends above it (`policing_rate`).
    pub policer_rate: Option<Rate>,
    /// The policing probe's payload rate (default: 1.3 × the expected
    /// policer's, else 10 Mbit/s as 004 §4.1.2).
    pub policing_rate: Option<Rate>,
    /// The shaping probe: its rate while on, on and off times, and length.
    pub shaping_rate: Rate,
    #[schemars(with = "f64")]
    #[serde(with = "crate::serde_secs", rename = "shaping_on_s")]
    pub shaping_on: Duration,
    #[schemars(with = "f64")]
    #[serde(with = "crate::serde_secs", rename = "shaping_off_s")]
    pub shaping_off: Duration,
    #[schemars(with = "f64")]
    #[serde(with = "crate::serde_secs", rename = "shaping_time_s")]
    pub shaping_time: Duration,
    /// The priority check: premium's rate, and the background (best
    /// effort) that congests the path.
    pub priority_rate: Rate,
    pub background_rate: Option<Rate>,
    /// The LBE check: the class (CS1), its minimum share of the link
    /// (0.01 for 1 %), the link's rate, and the probe's rate (default:
    /// four times the share).
    #[serde(default = "default_lbe")]
    pub lbe: Dscp,
    #[serde(default)]
    pub lbe_min: Option<f64>,
    #[serde(default)]
    pub link_rate: Option<Rate>,
    #[serde(default)]
    pub lbe_rate: Option<Rate>,
    /// The agent that sends background (and a second set of marking
    /// probes); none: this host.
    #[serde(default)]
    pub via: Option<String>,
    #[schemars(with = "f64")]
    #[serde(with = "crate::serde_secs", rename = "gap_s")]
    pub gap: Duration,
}

fn default_lbe() -> Dscp {
    Dscp::new(8).unwrap_or_default()
}

impl QosCheckSpec {
    /// The LBE class's minimum share in bits/s of IP packets, if known.
    pub fn lbe_share_bps(&self) -> Option<u64> {
        Some((self.link_rate?.bps() as f64 * self.lbe_min?) as u64)
    }

    /// The LBE probe's payload rate: as asked, else four times the share.
    pub fn lbe_probe_rate(&self) -> Rate {
        self.lbe_rate.unwrap_or_else(|| {
            Rate::from_bps(
                self.lbe_share_bps()
                    .map_or(4_000_000, |s| s.saturating_mul(4)),
            )
        })
    }

    /// The checks' defaults of seed 004 §4.1 toward `probe`'s host.
    pub fn new(probe: UdpSpec) -> Self {
        let d = |v| Dscp::new(v).unwrap_or_default();
        Self {
            probe,
            checks: QosCheckKind::ALL.to_vec(),
            premium: d(46),
            classes: vec![d(0), d(46), d(34), d(8)],
            marking_rate: Rate::from_bps(1_000_000),
            probe_time: Duration::from_secs(5),
            policer_rate: None,
            policing_rate: None,
            shaping_rate: Rate::from_bps(8_000_000),
            shaping_on: Duration::from_secs(5),
            shaping_off: Duration::from_secs(5),
            shaping_time: Duration::from_secs(20),
            priority_rate: Rate::from_bps(1_500_000),
            background_rate: None,
            lbe: default_lbe(),
            lbe_min: None,
            link_rate: None,
            lbe_rate: None,
            via: None,
            gap: Duration::from_secs(1),
        }
    }

    /// The policing probe's payload rate.
    pub fn policing_probe_rate(&self) -> Rate {
        self.policing_rate
            .unwrap_or_else(|| match self.policer_rate {
                Some(p) => Rate::from_bps(p.bps().saturating_mul(13) / 10),
                None => Rate::from_bps(10_000_000),
            })
    }

    pub fn validate(&self) -> Result<(), SpecError> {
        self.probe.validate()?;
        if self.checks.is_empty() {
            return Err(bad("checks", "name at least one check"));
        }
        if self.classes.is_empty() {
            return Err(bad("classes", "name at least one class"));
        }
        for (field, r) in [
            ("marking_rate", self.marking_rate),
            ("shaping_rate", self.shaping_rate),
            ("priority_rate", self.priority_rate),
        ] {
            if r.bps() == 0 {
                return Err(bad(field, "must be more than 0"));
            }
        }
        if self.probe_time.is_zero() || self.shaping_time.is_zero() {
            return Err(bad("probe_time_s", "must be more than 0"));
        }
        if self.shaping_on.is_zero() {
            return Err(bad("shaping_on_s", "must be more than 0"));
        }
        for (check, name) in [
            (QosCheckKind::Priority, "priority"),
            (QosCheckKind::Lbe, "lbe"),
        ] {
            if self.checks.contains(&check) && self.background_rate.is_none() {
                return Err(bad(
                    "background_rate",
                    format!("the {name} check needs a background rate that congests the path (--background)"),
                ));
            }
        }
        if self.checks.contains(&QosCheckKind::Lbe) {
            match (self.lbe_min, self.link_rate) {
                (Some(m), Some(r)) if m > 0.0 && m < 1.0 && r.bps() > 0 => {}
                (Some(_), Some(_)) => {
                    return Err(bad(
                        "lbe_min",
                        "the LBE share must be above 0 and below 100 % of a link rate above 0",
                    ))
                }
                _ => {
                    return Err(bad(
                        "lbe_min",
                        "the lbe check needs the class's minimum share and the link's rate (--lbe-min 1% --link-rate 155M)",
                    ))
                }
            }
        }
        Ok(())
    }
}

/// What a check found, in a word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum QosVerdict {
    /// Marking: arrived as sent.
    Kept,
    /// Marking: arrived as 0 (best effort).
    Reset,
    /// Marking: arrived as another class.
    Remarked,
    /// Policing: the excess was dropped at a rate found.
    Policed,
    /// Policing: nothing dropped above the expected rate.
    NotPoliced,
    /// Shaping: arrival smoothed below the on-rate and nothing lost.
    Smoothed,
    /// Shaping: arrived as sent, nothing lost (no shaper on the path, or
    /// none needed).
    Unchanged,
    /// Shaping: bursts lost packets.
    Lost,
    /// Priority: premium kept its loss and jitter under congestion.
    Protected,
    /// Priority: premium lost packets or jitter under congestion.
    NotProtected,
    /// Priority: the background did not congest the path (its own loss
    /// stayed under 1 %): nothing was shown either way.
    NoCongestion,
    /// LBE: lost more than best effort, and kept its minimum share.
    Squeezed,
    /// LBE: got less than its minimum share.
    Starved,
    /// LBE: treated no worse than best effort under congestion.
    NotSqueezed,
}

impl QosVerdict {
    pub fn name(self) -> &'static str {
        match self {
            QosVerdict::Kept => "kept",
            QosVerdict::Reset => "reset",
            QosVerdict::Remarked => "remarked",
            QosVerdict::Policed => "policed",
            QosVerdict::NotPoliced => "not policed",
            QosVerdict::Smoothed => "smoothed",
            QosVerdict::Unchanged => "unchanged",
            QosVerdict::Lost => "lost",
            QosVerdict::Protected => "protected",
            QosVerdict::NotProtected => "not protected",
            QosVerdict::NoCongestion => "no congestion",
            QosVerdict::Squeezed => "squeezed",
            QosVerdict::Starved => "starved",
            QosVerdict::NotSqueezed => "not squeezed",
        }
    }
}

/// One check's verdict and its evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct QosCheck {
    pub check: QosCheckKind,
    /// Who sent the probe: `this host`, or the agent.
    pub from: String,
    /// The class sent.
    pub class: Dscp,
    pub verdict: QosVerdict,
    /// The evidence in a sentence.
    pub evidence: String,
    /// The figures behind it, named with their units.
    pub figures: BTreeMap<String, f64>,
    /// The trials it read.
    pub trials: Vec<ResultId>,
}

/// What a scenario ramps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", content = "values", rename_all = "snake_case")]
pub enum QosRamp {
    /// UDP foreground rates (`--fg-rates`).
    Rates(Vec<Rate>),
    /// TCP foreground stream counts (`--fg-streams`).
    Streams(Vec<u16>),
}

impl QosRamp {
    pub fn len(&self) -> usize {
        match self {
            QosRamp::Rates(v) => v.len(),
            QosRamp::Streams(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// `sonde qos scenario`: a foreground flow in a class against a
/// background of best effort (seed 004 Table 4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QosScenarioSpec {
    /// The foreground's UDP test (rate ramps): host, class, size, time.
    pub udp_foreground: UdpSpec,
    /// The foreground's TCP test (stream ramps).
    pub tcp_foreground: TcpSpec,
    pub ramp: QosRamp,
    /// The background's total rate, as a mix of TCP and UDP toward the
    /// foreground's receiver.
    pub background_rate: Rate,
    /// The TCP share of the background's bytes (004: 30 %).
    pub background_tcp_pct: f64,
    /// The background's UDP payload size.
    pub background_length: u32,
    /// The agent that sends the background; none: this host.
    #[serde(default)]
    pub via: Option<String>,
    /// The background starts this long before the foreground and ends
    /// this long after it.
    #[schemars(with = "f64")]
    #[serde(with = "crate::serde_secs", rename = "lead_s")]
    pub lead: Duration,
    #[schemars(with = "f64")]
    #[serde(with = "crate::serde_secs", rename = "gap_s")]
    pub gap: Duration,
}

impl QosScenarioSpec {
    /// `sonde qos scenario`'s defaults toward `udp`'s host: 10 s steps of
    /// an EF foreground at 1.5 Mbit/s, a 30 % TCP background starting 1 s
    /// before each, 1 s between steps; the background's rate must be
    /// given.
    pub fn new(udp: UdpSpec) -> Self {
        let time = Duration::from_secs(10);
        let ef = Some(Dscp::EF);
        Self {
            tcp_foreground: TcpSpec {
                host: udp.host.clone(),
                port: udp.port,
                time,
                dscp: ef,
                family: udp.family,
                ..TcpSpec::default()
            },
            udp_foreground: UdpSpec {
                time,
                interval: Duration::from_secs(1),
                dscp: ef,
                ..udp
            },
            ramp: QosRamp::Rates(vec![Rate::from_bps(1_500_000)]),
            background_rate: Rate::from_bps(0),
            background_tcp_pct: 30.0,
            background_length: 1400,
            via: None,
            lead: Duration::from_secs(1),
            gap: Duration::from_secs(1),
        }
    }

    pub fn validate(&self) -> Result<(), SpecError> {
        if self.background_rate.bps() == 0 {
            return Err(bad(
                "background_rate",
                "give the background's rate (above 0)",
            ));
        }
        match &self.ramp {
            QosRamp::Rates(r) => {
                if r.is_empty() || r.iter().any(|r| r.bps() == 0) {
                    return Err(bad("fg_rates", "give one or more rates above 0"));
                }
                self.udp_foreground.validate()?;
            }
            QosRamp::Streams(s) => {
                if s.is_empty() || s.iter().any(|&n| n == 0 || n > 128) {
                    return Err(bad("fg_streams", "give stream counts of 1 to 128"));
                }
                self.tcp_foreground.validate()?;
            }
        }
        if !(0.0..=100.0).contains(&self.background_tcp_pct) {
            return Err(bad("background_tcp_pct", "must be 0 to 100"));
        }
        if self.background_length < crate::udp_spec::UDP_HEADER_LEN {
            return Err(bad(
                "background_length",
                format!("must be at least {} bytes", crate::udp_spec::UDP_HEADER_LEN),
            ));
        }
        Ok(())
    }

    /// The foreground's time per step.
    pub fn step_time(&self) -> Duration {
        match self.ramp {
            QosRamp::Rates(_) => self.udp_foreground.time,
            QosRamp::Streams(_) => self.tcp_foreground.time,
        }
    }
}

/// One step of a scenario: the columns of seed 004 Tables 5 and 6.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct QosStep {
    /// The foreground's offered rate (rate ramps).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fg_offered_bps: Option<u64>,
    pub fg_streams: u16,
    pub fg_achieved_bps: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub fg_jitter_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub fg_loss_pct: Option<f64>,
    /// The UDP background's figures over the same step.
    pub bg_achieved_bps: Option<u64>,
    pub bg_jitter_ms: Option<f64>,
    pub bg_loss_pct: Option<f64>,
    /// The TCP background's goodput.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bg_tcp_bps: Option<u64>,
    /// A `video` foreground: loss and decodable frames per frame type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1))]
    pub fg_frames: Vec<crate::FrameClass>,
    /// A `video` foreground: its decodable frame rate (percent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub fg_decodable_pct: Option<f64>,
    /// The foreground's trial, then the background's.
    pub trials: Vec<ResultId>,
}
