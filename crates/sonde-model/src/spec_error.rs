//! What every spec's checks speak: the address family a test may use,
//! and a spec that cannot run, with the field and the reason.

use serde::{Deserialize, Serialize};

/// Address family to use when the host name has both. Written `v6` and
/// `v4`; `ipv6`, `IPv6` and `6` (and the same for IPv4) are read as
/// those, as alert rules read them.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum IpFamily {
    /// IPv6 first, then IPv4.
    #[default]
    Any,
    #[serde(alias = "ipv4", alias = "IPv4", alias = "4")]
    V4,
    #[serde(alias = "ipv6", alias = "IPv6", alias = "6")]
    V6,
}

/// A spec that cannot run, with the field and the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct SpecError {
    pub field: &'static str,
    pub reason: String,
}

pub(crate) fn bad(field: &'static str, reason: impl Into<String>) -> SpecError {
    SpecError {
        field,
        reason: reason.into(),
    }
}
