//! Alerts on a path's archived metrics (issue 20, docs/alerts.md when it
//! is whole). This first part: SmokePing's alert patterns ([`pattern`]),
//! parsed and matched against a path's latest samples.

pub mod pattern;

pub use pattern::{Pattern, PatternError, Quantity};
