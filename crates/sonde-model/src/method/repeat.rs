//! One test repeated: `--repeat N` or `--until-stddev` on any test.

use super::{StepPlan, StepStats};
use crate::TestSpec;
use serde::{Deserialize, Serialize};

/// A repeated test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RepeatSpec {
    pub test: TestSpec,
    #[serde(default)]
    pub step: StepPlan,
}

/// The runs of a repeated test read together, one entry per family.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepeatOutcome {
    pub families: Vec<StepStats>,
}
