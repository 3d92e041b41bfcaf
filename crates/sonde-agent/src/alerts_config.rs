//! `[[alert]]` and `[smtp]` of the agent's configuration: alert rules
//! evaluated as results arrive, and the mail server notices go through
//! (docs/alerts.md).

use serde::Deserialize;

#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AlertConfig {}
