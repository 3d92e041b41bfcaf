//! [`ProfileError`]: what is wrong with the keys of one link direction.

use super::Marking;
use sonde_model::dscp::DscpError;
use sonde_model::{Dscp, UnitError};
use std::time::Duration;

/// What is wrong with the keys of one link direction.
///
/// `key` is the key as written, with the path into a nested value:
/// `loss.r`, `diffserv.lbe_min`, `policer[2].burst`, `ef_from[1]` (list
/// items counted from 1, as links are). `value` is the value as written
/// (numbers in decimal).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProfileError {
    // ----- a key or value that cannot be read -----
    /// A key that is not a direction key (or not one of a nested table's).
    #[error("unknown key '{key}' (known: {known})")]
    UnknownKey { key: String, known: &'static str },
    /// A key a table needs and does not have (`loss.p`, `policer[1].rate`).
    #[error("missing '{key}': {why}")]
    MissingKey { key: String, why: &'static str },
    /// A value of the wrong TOML type (a table where a string belongs…).
    #[error("{key}: expected {expected}, found a TOML {found}")]
    WrongType {
        key: String,
        expected: &'static str,
        found: &'static str,
    },
    /// `rate`, `line_rate`, `policer[N].rate`.
    #[error("{key}: {source}")]
    BadRate {
        key: String,
        #[source]
        source: UnitError,
    },
    /// `policer[N].burst`.
    #[error("{key}: {source}")]
    BadSize {
        key: String,
        #[source]
        source: UnitError,
    },
    /// `delay`, `jitter`.
    #[error("{key}: '{value}' is not a duration (e.g. 20ms)")]
    BadDuration { key: String, value: String },
    /// `loss`, `duplicate`, `reorder`, `loss.p`…, `punish`, `lbe_min`.
    #[error("{key}: '{value}' is not a percentage (e.g. \"1%\" or 0.01)")]
    BadPercentage { key: String, value: String },
    /// A percentage below 0 or above 100 %.
    #[error("{key}: {value} is outside 0–100 %")]
    PercentageOutOfRange { key: String, value: String },
    /// `queue_ms`.
    #[error("{key}: '{value}' is not a whole number from 0 to 4294967295")]
    BadInteger { key: String, value: String },
    /// `queue`.
    #[error("{key} '{value}': give packets (\"100p\") or bytes (\"64K\", \"150000B\")")]
    BadQueue { key: String, value: String },
    /// `policer[N].dscp`, `diffserv.priority[N]`, `diffserv.lbe[N]`, the
    /// DSCP of `policer[N].action = "remark:DSCP"`.
    #[error("{key}: {source}")]
    BadDscp {
        key: String,
        #[source]
        source: DscpError,
    },
    /// `ef_from[N]`.
    #[error("{key}: '{value}' is not a prefix (e.g. \"2001:2:0:1::/64\" or \"198.18.1.0/24\")")]
    BadPrefix { key: String, value: String },
    /// `jitter_dist`, `marking`, `policer[N].protocol`.
    #[error("{key}: '{value}' is not one of {choices}")]
    UnknownChoice {
        key: String,
        value: String,
        choices: &'static str,
    },
    /// `policer[N].action`.
    #[error("{key} '{value}': use \"drop\" or \"remark:DSCP\" (e.g. remark:CS0)")]
    BadPoliceAction { key: String, value: String },
    /// `flow_label`.
    #[error("{key}: '{value}' is not a flow label (0 to 1048575, or hex as \"0x12345\")")]
    BadFlowLabel { key: String, value: String },
    /// `tunnel.cipher`.
    #[error("{key}: '{value}' is not a cipher suite; use one of {known}")]
    BadCipher {
        key: String,
        value: String,
        known: String,
    },
    /// `mpls.labels[N]`.
    #[error("{key}: '{value}' is not an MPLS label (a whole number from 0 to 1048575)")]
    BadLabel { key: String, value: String },
    /// `mpls.labels`: none, or more than a trace reads.
    #[error("{key}: give 1 to 4 labels ({count} given)")]
    LabelCount { key: String, count: usize },
    /// `mpls.address[N]`.
    #[error("{key}: '{value}' is not an IP address")]
    BadAddress { key: String, value: String },
    /// `tunnel.overhead` over 1000 bytes.
    #[error("{key}: {overhead} bytes a packet is more than a tunnel's headers (at most 1000)")]
    TunnelOverhead { key: String, overhead: u32 },
    /// `tunnel.mtu` under IPv6's minimum.
    #[error("{key}: {mtu} is under 1280, the least an IPv6 link carries")]
    TunnelMtuTooSmall { key: String, mtu: u32 },
    /// `rio.green`, `rio.red.min`, `rio.weight`…
    #[error("{key}: {why}")]
    BadLineQueue { key: String, why: &'static str },
    /// `mpls.address`: two of one family.
    #[error("{key}: one address per family (two IPv{family} addresses given)")]
    TwoAddressesOfAFamily { key: String, family: u8 },

    // ----- keys that are each fine but not together -----
    #[error("delay {} is too long: delay at most 10s", humantime::format_duration(*.delay))]
    DelayTooLong { delay: Duration },
    #[error(
        "uniform jitter at most the delay (jitter {}, delay {})",
        humantime::format_duration(*.jitter),
        humantime::format_duration(*.delay)
    )]
    JitterAboveDelay { jitter: Duration, delay: Duration },
    /// `rate`, `line_rate` or `policer[N].rate` below 8 kbit/s.
    #[error("{key} below 8 kbit/s ({bps} bit/s)")]
    RateTooLow { key: String, bps: u64 },
    /// `line_queue` or `rio` (`key`) on a direction without a line rate.
    #[error("{key} needs a line_rate: it is the queue of the emulator's line")]
    LineQueueWithoutLineRate { key: &'static str },
    #[error("give queue or queue_ms, not both")]
    QueueAndQueueMs,
    #[error("reorder needs a delay: a reordered frame skips it")]
    ReorderWithoutDelay,
    #[error("diffserv needs a rate: the classes share it")]
    DiffservWithoutRate,
    #[error("diffserv lbe_min must be below 100 % ({} %)", .lbe_min * 100.0)]
    LbeShareTooHigh { lbe_min: f64 },
    #[error("diffserv: DSCP {dscp} is in both priority and lbe")]
    DscpInPriorityAndLbe { dscp: Dscp },
    #[error("marking = \"filter\" needs ef_from = [prefixes whose EF is kept]")]
    FilterWithoutEfFrom,
    #[error("ef_from is only for marking = \"filter\"")]
    EfFromWithoutFilter,
    /// `key` is `policer[N].burst`.
    #[error("{key} {burst} is below one full-size packet (1500 bytes)")]
    PolicerBurstTooSmall { key: String, burst: u64 },
    /// A policer in a direction whose receiving end resets or filters the
    /// marking.
    #[error(
        "a policer acts on the wire, before the receiving end's marking (\"{}\"); \
         police on the next link, after the marking",
        .marking.name()
    )]
    PolicerBeforeMarking { marking: Marking },
}
