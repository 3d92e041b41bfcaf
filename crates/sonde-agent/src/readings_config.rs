//! `[readings]` of the agent's configuration: readings from probes
//! (docs/readings.md).

use serde::Deserialize;

#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReadingsConfig {}
