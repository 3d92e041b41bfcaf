//! What a method asked and found: [`MethodSpec`] and [`MethodResult`].
//!
//! A method (an NDR search, a sweep, a repeated test) runs many tests
//! through the runner and reads them together. Its result is one
//! document with the same header as a test's result (`id`,
//! `format_version`, `sonde_version`, `title`, `start`, `duration_s`,
//! `interrupted`), then `method` naming it, its `spec`, what it found
//! (`results` per size for `ndr`, `steps` and `limiters` for `sweep`,
//! `runs` for `repeat`), and the full [`TestResult`] of every trial in
//! `trials`, in the order they ran, so that the archive keeps each one
//! and every figure can be traced back to the test that made it.
//!
//! The algorithms live in `sonde-methods`; this module holds only their
//! vocabulary, so the archive, reports and the portal can read a
//! method's result without depending on how it was found.

mod ndr;
mod overhead;
mod qos;
mod repeat;
mod step;
mod sweep;
mod tune;

pub use ndr::{
    frame_overhead_bytes, NdrSize, NdrSpec, NdrTrial, SearchMode, SizeKind, TrialOutcome,
    TrialVerdict, ETHERNET_L1_EXTRA_BYTES,
};
pub use overhead::{OverheadFit, OverheadPoint, OverheadSpec, StackFit};
pub use qos::{
    QosCheck, QosCheckKind, QosCheckSpec, QosRamp, QosScenarioSpec, QosStep, QosVerdict,
};
pub use repeat::{family_used, RepeatOutcome, RepeatSpec};
pub use step::{FamilyRatio, Metric, RepeatRule, Stats, StepPlan, StepStats};
pub use sweep::{
    Limiter, LimiterClass, LimiterEvidence, SweepSpec, SweepStep, SweepVariable, SweepVariableKind,
};
pub use tune::{Ceiling, TuneFindings, TuneLabSpec, TuneLimit, TuneSpec, TuneStep};

use crate::{ResultId, TestResult, Timestamp};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Version of the method result document layout.
pub const METHOD_FORMAT_VERSION: u32 = 1;

/// Which method a spec or a result is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MethodKind {
    /// RFC 2544 §26.1 throughput (no-drop rate) per frame size.
    Ndr,
    /// One variable stepped, the rest held.
    Sweep,
    /// One test repeated (a number of times, or until stable).
    Repeat,
    /// The checks of a DiffServ class (marking, policing, shaping, priority).
    #[serde(rename = "qos_check")]
    QosCheck,
    /// A foreground ramp against a background mix.
    #[serde(rename = "qos_scenario")]
    QosScenario,
    /// A path's per-packet overhead from goodput at several payload sizes.
    Overhead,
    /// TCP buffers sized to a path, advised and verified.
    Tune,
    /// TCP over RTTs × buffers × congestion controls in a lab.
    #[serde(rename = "tune_lab")]
    TuneLab,
}

impl MethodKind {
    pub fn name(self) -> &'static str {
        match self {
            MethodKind::Ndr => "ndr",
            MethodKind::Sweep => "sweep",
            MethodKind::Repeat => "repeat",
            MethodKind::QosCheck => "qos_check",
            MethodKind::QosScenario => "qos_scenario",
            MethodKind::Overhead => "overhead",
            MethodKind::Tune => "tune",
            MethodKind::TuneLab => "tune_lab",
        }
    }
}

impl fmt::Display for MethodKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Any method sonde runs, written flat: `{"method": "ndr", …}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "method", rename_all = "lowercase")]
pub enum MethodSpec {
    Ndr(NdrSpec),
    Sweep(SweepSpec),
    Repeat(RepeatSpec),
    #[serde(rename = "qos_check")]
    QosCheck(QosCheckSpec),
    #[serde(rename = "qos_scenario")]
    QosScenario(QosScenarioSpec),
    Overhead(OverheadSpec),
    Tune(TuneSpec),
    #[serde(rename = "tune_lab")]
    TuneLab(TuneLabSpec),
}

impl MethodSpec {
    /// Checks the method's spec, as its method will before running.
    pub fn validate(&self) -> Result<(), crate::SpecError> {
        match self {
            MethodSpec::Ndr(s) => s.validate(),
            MethodSpec::Sweep(s) => s.validate(),
            MethodSpec::Repeat(s) => s.validate(),
            MethodSpec::QosCheck(s) => s.validate(),
            MethodSpec::QosScenario(s) => s.validate(),
            MethodSpec::Overhead(s) => s.validate(),
            MethodSpec::Tune(s) => s.validate(),
            MethodSpec::TuneLab(s) => s.validate(),
        }
    }

    pub fn kind(&self) -> MethodKind {
        match self {
            MethodSpec::Ndr(_) => MethodKind::Ndr,
            MethodSpec::Sweep(_) => MethodKind::Sweep,
            MethodSpec::Repeat(_) => MethodKind::Repeat,
            MethodSpec::QosCheck(_) => MethodKind::QosCheck,
            MethodSpec::QosScenario(_) => MethodKind::QosScenario,
            MethodSpec::Overhead(_) => MethodKind::Overhead,
            MethodSpec::Tune(_) => MethodKind::Tune,
            MethodSpec::TuneLab(_) => MethodKind::TuneLab,
        }
    }

    pub fn title(&self) -> Option<&str> {
        match self {
            MethodSpec::Ndr(s) => s.trial.title.as_deref(),
            MethodSpec::Sweep(s) => s.test.title(),
            MethodSpec::Repeat(s) => s.test.title(),
            MethodSpec::QosCheck(s) => s.probe.title.as_deref(),
            MethodSpec::QosScenario(s) => s.udp_foreground.title.as_deref(),
            MethodSpec::Overhead(s) => s.probe.title.as_deref(),
            MethodSpec::Tune(s) => s.test.title.as_deref(),
            MethodSpec::TuneLab(s) => s.test.title.as_deref(),
        }
    }
}

/// The result of one method: what `-J` prints and the archive stores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MethodResult {
    pub id: ResultId,
    #[schemars(extend("const" = 1))]
    pub format_version: u32,
    pub sonde_version: String,
    pub method: MethodKind,
    #[schemars(length(max = 200))]
    pub title: Option<String>,
    /// What was asked, as asked.
    pub spec: MethodSpec,
    pub start: Timestamp,
    /// Wall-clock seconds from the first trial's start to the last's end.
    #[schemars(range(min = 0))]
    pub duration_s: f64,
    /// Stopped before the method finished; what ran is kept.
    pub interrupted: bool,
    /// `ndr`: one per frame size (and family).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<NdrSize>,
    /// `sweep`: one per step, direction and family.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<SweepStep>,
    /// `sweep` of rates: the limiter found, one per direction measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limiters: Vec<Limiter>,
    /// `repeat`: the runs read together, per family.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<RepeatOutcome>,
    /// `qos_check`: each check's verdict and evidence.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<QosCheck>,
    /// `qos_scenario`: one per foreground step.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub qos_steps: Vec<QosStep>,
    /// `overhead`: the per-packet overhead found and the stacks that fit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead: Option<OverheadFit>,
    /// `tune`: what limits TCP on the path, the advice and its verification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tune: Option<TuneFindings>,
    /// `tune_lab`: one per RTT, buffer and congestion control.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tune_steps: Vec<TuneStep>,
    /// IPv6 against IPv4 (`families` 6,4), per figure.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub family_ratios: Vec<FamilyRatio>,
    /// Every trial's whole result, in the order they ran.
    pub trials: Vec<TestResult>,
}

impl MethodResult {
    /// An empty result of `spec`, to be filled as the method runs.
    pub fn new(spec: MethodSpec, start: Timestamp) -> Self {
        Self {
            id: ResultId::random(),
            format_version: METHOD_FORMAT_VERSION,
            sonde_version: crate::SONDE_VERSION.to_string(),
            method: spec.kind(),
            title: spec.title().map(str::to_string),
            spec,
            start,
            duration_s: 0.0,
            interrupted: false,
            results: Vec::new(),
            steps: Vec::new(),
            limiters: Vec::new(),
            runs: None,
            checks: Vec::new(),
            qos_steps: Vec::new(),
            overhead: None,
            tune: None,
            tune_steps: Vec::new(),
            family_ratios: Vec::new(),
            trials: Vec::new(),
        }
    }

    /// The trial with this id.
    pub fn trial(&self, id: ResultId) -> Option<&TestResult> {
        self.trials.iter().find(|t| t.id == id)
    }
}
