//! A sweep (`sonde sweep`): one variable stepped, the rest held; and
//! the limiter a rate sweep reveals.

use super::{StepPlan, StepStats};
use crate::spec::bad;
use crate::{ByteSize, Direction, IpFamily, Rate, SpecError, TestKind, TestSpec};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The variable a sweep steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", content = "values", rename_all = "snake_case")]
pub enum SweepVariable {
    /// Offered rate per stream (`--rates`).
    Rates(Vec<Rate>),
    /// UDP payload or TCP write size (`--payloads`).
    Payloads(Vec<u32>),
    /// Parallel streams (`--streams`).
    Streams(Vec<u16>),
    /// TCP socket buffer (`--windows`).
    Windows(Vec<ByteSize>),
}

/// The name of a sweep's variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SweepVariableKind {
    Rates,
    Payloads,
    Streams,
    Windows,
}

impl SweepVariable {
    pub fn kind(&self) -> SweepVariableKind {
        match self {
            SweepVariable::Rates(_) => SweepVariableKind::Rates,
            SweepVariable::Payloads(_) => SweepVariableKind::Payloads,
            SweepVariable::Streams(_) => SweepVariableKind::Streams,
            SweepVariable::Windows(_) => SweepVariableKind::Windows,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            SweepVariable::Rates(v) => v.len(),
            SweepVariable::Payloads(v) => v.len(),
            SweepVariable::Streams(v) => v.len(),
            SweepVariable::Windows(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    /// The test of each step (tcp or udp); the variable is set per step
    /// and the direction per series.
    pub test: TestSpec,
    pub variable: SweepVariable,
    /// Each measured as its own series: forward, reverse, or bidir (both
    /// at once).
    pub directions: Vec<Direction>,
    /// Idle time between steps, so queues drain.
    #[schemars(with = "f64")]
    #[serde(with = "crate::serde_secs", rename = "gap_s", default = "default_gap")]
    pub gap: Duration,
    #[serde(default)]
    pub step: StepPlan,
    /// At most this many extra trials per series to narrow a knee that a
    /// collapse (a punisher) brackets between two steps, by bisection of
    /// the offered rate (rate sweeps only; 0: none).
    #[serde(default)]
    pub refine_trials: u32,
}

impl SweepSpec {
    /// Checks a sweep's own rules and its plan; the test's own rules are
    /// checked with each trial. Errors name the key: `variable.rates`
    /// (or `.payloads`, `.streams`, `.windows`), `directions`, `test`.
    pub fn validate(&self) -> Result<(), SpecError> {
        let field = match self.variable {
            SweepVariable::Rates(_) => "variable.rates",
            SweepVariable::Payloads(_) => "variable.payloads",
            SweepVariable::Streams(_) => "variable.streams",
            SweepVariable::Windows(_) => "variable.windows",
        };
        if self.variable.is_empty() {
            return Err(bad(field, "no values to step through"));
        }
        if self.variable.len() > 1000 {
            return Err(bad(field, "more than 1000 steps"));
        }
        let zero = match &self.variable {
            SweepVariable::Rates(r) => r.iter().any(|r| r.bps() == 0),
            SweepVariable::Payloads(p) => p.contains(&0),
            SweepVariable::Streams(s) => s.contains(&0),
            SweepVariable::Windows(w) => w.iter().any(|w| w.bytes() == 0),
        };
        if zero {
            return Err(bad(field, "every value must be above zero"));
        }
        if matches!(self.variable, SweepVariable::Windows(_)) && self.test.kind() != TestKind::Tcp {
            return Err(bad(field, "socket windows are swept over tcp (--tcp)"));
        }
        if self.test.kind() == TestKind::Ping {
            return Err(bad("test", "a sweep runs tcp or udp tests"));
        }
        if self.directions.is_empty() {
            return Err(bad("directions", "name at least one direction"));
        }
        self.step.validate_as_step()
    }
}

fn default_gap() -> Duration {
    Duration::from_secs(1)
}

/// One step of one direction over one family.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SweepStep {
    /// The series this step belongs to: the direction the test ran
    /// (`bidir` runs both flows at once and gives a step for each).
    pub series: Direction,
    /// The flow these figures are of (forward or reverse).
    pub direction: Direction,
    pub family: IpFamily,
    /// The variable's value at this step, in its unit (bit/s, bytes,
    /// streams).
    pub value: f64,
    /// UDP payload (or TCP write) bytes of this step's packets.
    pub payload_bytes: u32,
    /// Added by the knee's refinement (bisection between two steps),
    /// not one of the values asked.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub refined: bool,
    /// Offered load: the sender's rate (mean over runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered_bps: Option<f64>,
    /// Receiver goodput.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput_bps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pdr_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_ms: Option<f64>,
    /// One-way delay, mean and 99th percentile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_p99_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<f64>,
    /// The runs behind these figures and their statistics.
    pub runs: StepStats,
}

/// What limits a path, as a rate sweep shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LimiterClass {
    /// Delivered ≈ offered throughout.
    None,
    /// Levels off at the knee; delay rises; loss once the queue is full.
    Shaper,
    /// Levels off at the knee; loss without a rise in delay.
    Policer,
    /// Above a threshold delivered collapses to a small share of it.
    Punisher,
    /// The evidence does not separate them.
    Unsure,
}

/// What the classification rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
pub struct LimiterEvidence {
    /// Steps offered above the knee.
    pub steps_above_knee: u32,
    /// Median delivered above the knee over the knee.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_fraction_above_knee: Option<f64>,
    /// Steps offered at or below the knee (delivered ≈ offered).
    pub steps_below_knee: u32,
    /// One-way delay (99th percentile) at the lowest step above the knee
    /// less its median below: a rise, so independent of the offset
    /// between the two clocks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_rise_ms: Option<f64>,
    /// The same of the mean one-way delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_avg_rise_ms: Option<f64>,
    /// Median loss above the knee.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_above_knee_pct: Option<f64>,
    /// Highest loss below the knee.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_below_knee_pct: Option<f64>,
    /// The knee lies between these offered rates (payload bit/s): the
    /// highest step delivered whole and the lowest that was not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bracket_bps: Option<(f64, f64)>,
    /// Why, in words.
    pub notes: Vec<String>,
}

/// The limiter of one direction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Limiter {
    /// The series it was read from (`bidir`: both flows at once).
    pub series: Direction,
    /// The flow it limits.
    pub direction: Direction,
    pub family: IpFamily,
    pub class: LimiterClass,
    /// The rate where delivered stops following offered, as receiver
    /// goodput (payload bits per second); absent for `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knee_bps: Option<f64>,
    /// The knee in packets per second (UDP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knee_pps: Option<f64>,
    /// 0 to 1.
    #[schemars(range(min = 0, max = 1))]
    pub confidence: f64,
    pub evidence: LimiterEvidence,
}
