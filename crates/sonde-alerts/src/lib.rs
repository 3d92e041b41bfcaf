//! Alerts on a path's archived metrics (issue 20; docs/alerts.md). So
//! far: SmokePing's alert patterns ([`pattern`]), threshold rules with
//! hysteresis, and the edge-triggered state of an alert ([`rule`]).

pub mod pattern;
pub mod rule;

pub use pattern::{Pattern, PatternError, Quantity};
pub use rule::{AlertState, Condition, Edge, RuleError, Threshold, Worse};
