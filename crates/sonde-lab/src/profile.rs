//! How one direction of a lab link behaves: the keys of a topology file's
//! `[[link]]`, `[link.a_to_b]` and `[link.b_to_a]` tables and their values.
//! Every key is documented in `docs/lab.md`.
//!
//! The keys are read here by hand, not by serde, so that a value that
//! cannot be read comes back as a [`ProfileError`] naming its key and the
//! value as written, which a caller can tell apart from other mistakes.

use crate::emulator::{Exceed, Gilbert, Impairment, JitterDist, Policer};
use ipnet::IpNet;
use serde::Deserialize;
use sonde_model::dscp::DscpError;
use sonde_model::{ByteSize, Dscp, Rate, UnitError};
use std::time::Duration;
use toml::{Table, Value};

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

/// Keys not given stay as the link-wide value, then as a plain link.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DirectionProfile {
    /// Bottleneck rate (TBF, or HTB with `diffserv`, on the sending end).
    pub rate: Option<Rate>,
    /// Queue of the bottleneck, in milliseconds at the rate (default 50).
    pub queue_ms: Option<u32>,
    /// Queue of the bottleneck in packets ("100p") or bytes ("64K").
    pub queue: Option<QueueLimit>,
    /// Random loss ("1%", 0.01) or a Gilbert-Elliott model.
    pub loss: Option<LossSpec>,
    pub delay: Option<Duration>,
    pub jitter: Option<Duration>,
    pub jitter_dist: Option<JitterDist>,
    /// Line rate: each frame takes its size / rate to cross (emulator).
    pub line_rate: Option<Rate>,
    /// Fraction of frames sent twice.
    pub duplicate: Option<Probability>,
    /// Fraction of frames that skip the delay (and so overtake).
    pub reorder: Option<Probability>,
    pub policer: Option<Vec<PolicerSpec>>,
    pub diffserv: Option<DiffservSpec>,
    /// What the receiving end does with the DSCP of arriving packets.
    pub marking: Option<Marking>,
    /// With `marking = "filter"`: the sources whose EF is kept.
    pub ef_from: Option<Vec<IpNet>>,
}

/// The keys of a direction, in the order they are read.
const DIRECTION_KEYS: [&str; 14] = [
    "rate",
    "queue_ms",
    "queue",
    "loss",
    "delay",
    "jitter",
    "jitter_dist",
    "line_rate",
    "duplicate",
    "reorder",
    "policer",
    "diffserv",
    "marking",
    "ef_from",
];
const DIRECTION_KNOWN: &str = "rate, queue_ms, queue, loss, delay, jitter, jitter_dist, \
                               line_rate, duplicate, reorder, policer, diffserv, marking, ef_from";
const GILBERT_KEYS: [&str; 4] = ["p", "r", "loss_good", "loss_bad"];
const GILBERT_KNOWN: &str = "p, r, loss_good, loss_bad";
const POLICER_KEYS: [&str; 6] = ["rate", "burst", "dscp", "protocol", "action", "punish"];
const POLICER_KNOWN: &str = "rate, burst, dscp, protocol, action, punish";
const DIFFSERV_KEYS: [&str; 3] = ["priority", "lbe", "lbe_min"];
const DIFFSERV_KNOWN: &str = "priority, lbe, lbe_min";

/// `key` inside `table` ("" for the direction's own keys).
fn path(table: &str, key: &str) -> String {
    if table.is_empty() {
        key.to_string()
    } else {
        format!("{table}.{key}")
    }
}

fn wrong_type(key: &str, expected: &'static str, v: &Value) -> ProfileError {
    ProfileError::WrongType {
        key: key.to_string(),
        expected,
        found: v.type_str(),
    }
}

/// A string or a number as written (numbers in decimal).
fn scalar(key: &str, expected: &'static str, v: &Value) -> Result<String, ProfileError> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Integer(i) => Ok(i.to_string()),
        Value::Float(f) => Ok(f.to_string()),
        _ => Err(wrong_type(key, expected, v)),
    }
}

/// The first key of `t` not in `known`.
fn unknown_key(
    table: &str,
    t: &Table,
    keys: &[&str],
    known: &'static str,
) -> Result<(), ProfileError> {
    match t.keys().find(|k| !keys.contains(&k.as_str())) {
        Some(k) => Err(ProfileError::UnknownKey {
            key: path(table, k),
            known,
        }),
        None => Ok(()),
    }
}

/// `key` of `t`, read by `read` if present.
fn opt<T>(
    t: &Table,
    table: &str,
    key: &str,
    read: fn(&str, &Value) -> Result<T, ProfileError>,
) -> Result<Option<T>, ProfileError> {
    t.get(key).map(|v| read(&path(table, key), v)).transpose()
}

fn read_rate(key: &str, v: &Value) -> Result<Rate, ProfileError> {
    scalar(key, "a rate such as \"100M\"", v)?
        .parse()
        .map_err(|source| ProfileError::BadRate {
            key: key.to_string(),
            source,
        })
}

fn read_size(key: &str, v: &Value) -> Result<ByteSize, ProfileError> {
    scalar(key, "a size such as \"15K\"", v)?
        .parse()
        .map_err(|source| ProfileError::BadSize {
            key: key.to_string(),
            source,
        })
}

fn read_duration(key: &str, v: &Value) -> Result<Duration, ProfileError> {
    let s = scalar(key, "a duration such as \"20ms\"", v)?;
    // The one duration parser: "20ms", or a bare number of seconds.
    sonde_model::parse_duration(&s).map_err(|_| ProfileError::BadDuration {
        key: key.to_string(),
        value: s,
    })
}

fn read_u32(key: &str, v: &Value) -> Result<u32, ProfileError> {
    let s = scalar(key, "a whole number", v)?;
    s.trim().parse().map_err(|_| ProfileError::BadInteger {
        key: key.to_string(),
        value: s,
    })
}

/// A probability in [0, 1], written "1%" or 0.01.
fn read_probability(key: &str, v: &Value) -> Result<f64, ProfileError> {
    let expected = "a percentage (\"1%\" or 0.01)";
    let (p, written) = match v {
        Value::Integer(i) => (*i as f64, i.to_string()),
        Value::Float(f) => (*f, f.to_string()),
        Value::String(t) => {
            let body = t.trim();
            let (num, scale) = match body.strip_suffix('%') {
                Some(n) => (n.trim(), 100.0),
                None => (body, 1.0),
            };
            let p = num
                .parse::<f64>()
                .map_err(|_| ProfileError::BadPercentage {
                    key: key.to_string(),
                    value: t.clone(),
                })?;
            (p / scale, t.clone())
        }
        _ => return Err(wrong_type(key, expected, v)),
    };
    if (0.0..=1.0).contains(&p) {
        Ok(p)
    } else {
        Err(ProfileError::PercentageOutOfRange {
            key: key.to_string(),
            value: written,
        })
    }
}

fn read_dscp(key: &str, v: &Value) -> Result<Dscp, ProfileError> {
    scalar(key, "a DSCP (\"EF\", 46)", v)?
        .parse()
        .map_err(|source| ProfileError::BadDscp {
            key: key.to_string(),
            source,
        })
}

fn read_dscps(key: &str, v: &Value) -> Result<Vec<Dscp>, ProfileError> {
    let Value::Array(items) = v else {
        return Err(wrong_type(key, "a list of DSCPs ([\"EF\", 46])", v));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, d)| read_dscp(&format!("{key}[{}]", i + 1), d))
        .collect()
}

fn read_prefixes(key: &str, v: &Value) -> Result<Vec<IpNet>, ProfileError> {
    let Value::Array(items) = v else {
        return Err(wrong_type(key, "a list of prefixes ([\"2001:2::/48\"])", v));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let key = format!("{key}[{}]", i + 1);
            let s = scalar(&key, "a prefix such as \"2001:2::/48\"", p)?;
            s.trim()
                .parse()
                .map_err(|_| ProfileError::BadPrefix { key, value: s })
        })
        .collect()
}

/// A string naming one of an enum's (serde) variants.
fn read_choice<T: serde::de::DeserializeOwned>(
    key: &str,
    v: &Value,
    choices: &'static str,
) -> Result<T, ProfileError> {
    let Value::String(s) = v else {
        return Err(wrong_type(key, choices, v));
    };
    let d = serde::de::value::StrDeserializer::<serde::de::value::Error>::new(s);
    T::deserialize(d).map_err(|_| ProfileError::UnknownChoice {
        key: key.to_string(),
        value: s.clone(),
        choices,
    })
}

fn read_jitter_dist(key: &str, v: &Value) -> Result<JitterDist, ProfileError> {
    read_choice(key, v, "\"uniform\", \"normal\" or \"pareto-normal\"")
}

fn read_marking(key: &str, v: &Value) -> Result<Marking, ProfileError> {
    read_choice(key, v, "\"trust\", \"reset\" or \"filter\"")
}

fn read_protocol(key: &str, v: &Value) -> Result<PolicedProtocol, ProfileError> {
    read_choice(key, v, "\"udp\" or \"tcp\"")
}

fn read_queue(key: &str, v: &Value) -> Result<QueueLimit, ProfileError> {
    let text = match v {
        // A bare number counts packets.
        Value::Integer(_) | Value::Float(_) => format!("{}p", scalar(key, "", v)?),
        Value::String(s) => s.clone(),
        _ => {
            return Err(wrong_type(
                key,
                "packets (\"100p\") or bytes (\"64K\", \"150000B\")",
                v,
            ))
        }
    };
    let t = text.trim();
    let bad = || ProfileError::BadQueue {
        key: key.to_string(),
        value: t.to_string(),
    };
    let limit = if let Some(n) = t.strip_suffix("packets").or_else(|| t.strip_suffix('p')) {
        n.trim()
            .parse::<u32>()
            .map(QueueLimit::Packets)
            .map_err(|_| bad())?
    } else {
        t.parse::<ByteSize>()
            .map(|b| QueueLimit::Bytes(b.bytes()))
            .map_err(|_| bad())?
    };
    match limit {
        QueueLimit::Packets(0) | QueueLimit::Bytes(0) => Err(bad()),
        l => Ok(l),
    }
}

fn read_loss(key: &str, v: &Value) -> Result<LossSpec, ProfileError> {
    let m = match v {
        Value::Table(m) => m,
        Value::String(_) | Value::Integer(_) | Value::Float(_) => {
            return read_probability(key, v).map(LossSpec::Random)
        }
        _ => return Err(wrong_type(
            key,
            "a percentage (\"1%\", 0.01) or a Gilbert-Elliott table { p, r, loss_good, loss_bad }",
            v,
        )),
    };
    unknown_key(key, m, &GILBERT_KEYS, GILBERT_KNOWN)?;
    let get = |k: &str, default: Option<f64>| match (m.get(k), default) {
        (Some(v), _) => read_probability(&path(key, k), v),
        (None, Some(d)) => Ok(d),
        (None, None) => Err(ProfileError::MissingKey {
            key: path(key, k),
            why: "Gilbert-Elliott loss needs p (good→bad) and r (bad→good), per packet",
        }),
    };
    Ok(LossSpec::Gilbert(Gilbert {
        p: get("p", None)?,
        r: get("r", None)?,
        loss_good: get("loss_good", Some(0.0))?,
        loss_bad: get("loss_bad", Some(1.0))?,
    }))
}

fn read_probability_key(key: &str, v: &Value) -> Result<Probability, ProfileError> {
    read_probability(key, v).map(Probability)
}

fn read_police_action(key: &str, v: &Value) -> Result<PoliceAction, ProfileError> {
    let s = scalar(key, "\"drop\" or \"remark:DSCP\"", v)?;
    match s.trim().split_once(':') {
        None if s.trim() == "drop" => Ok(PoliceAction::Drop),
        Some(("remark", dscp)) => {
            dscp.parse()
                .map(PoliceAction::Remark)
                .map_err(|source| ProfileError::BadDscp {
                    key: key.to_string(),
                    source,
                })
        }
        _ => Err(ProfileError::BadPoliceAction {
            key: key.to_string(),
            value: s,
        }),
    }
}

fn read_policer(key: &str, v: &Value) -> Result<PolicerSpec, ProfileError> {
    let Value::Table(t) = v else {
        return Err(wrong_type(
            key,
            "a table { rate, burst, dscp, protocol, action, punish }",
            v,
        ));
    };
    unknown_key(key, t, &POLICER_KEYS, POLICER_KNOWN)?;
    Ok(PolicerSpec {
        rate: opt(t, key, "rate", read_rate)?.ok_or_else(|| ProfileError::MissingKey {
            key: path(key, "rate"),
            why: "a policer needs a rate",
        })?,
        burst: opt(t, key, "burst", read_size)?,
        dscp: opt(t, key, "dscp", read_dscp)?,
        protocol: opt(t, key, "protocol", read_protocol)?,
        action: opt(t, key, "action", read_police_action)?,
        punish: opt(t, key, "punish", read_probability_key)?,
    })
}

fn read_policers(key: &str, v: &Value) -> Result<Vec<PolicerSpec>, ProfileError> {
    let Value::Array(items) = v else {
        return Err(wrong_type(
            key,
            "a list of policers ([{ rate = \"1M\" }])",
            v,
        ));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, p)| read_policer(&format!("{key}[{}]", i + 1), p))
        .collect()
}

fn read_diffserv(key: &str, v: &Value) -> Result<DiffservSpec, ProfileError> {
    let Value::Table(t) = v else {
        return Err(wrong_type(key, "a table { priority, lbe, lbe_min }", v));
    };
    unknown_key(key, t, &DIFFSERV_KEYS, DIFFSERV_KNOWN)?;
    Ok(DiffservSpec {
        priority: opt(t, key, "priority", read_dscps)?,
        lbe: opt(t, key, "lbe", read_dscps)?,
        lbe_min: opt(t, key, "lbe_min", read_probability_key)?,
    })
}

/// A probability in [0, 1], written "1%" or 0.01.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Probability(pub f64);

/// Loss on a link direction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LossSpec {
    /// Each packet lost with this probability (nftables, at the receiver).
    Random(f64),
    /// Bursts (sonde's emulator).
    Gilbert(Gilbert),
}

/// A queue limit in packets or bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueLimit {
    Packets(u32),
    Bytes(u64),
}

/// A policer on a link direction (sonde's emulator: nftables' byte limit
/// has a one-second bucket, too coarse to stand for a router's policer).
#[derive(Debug, Clone, PartialEq)]
pub struct PolicerSpec {
    pub rate: Rate,
    /// Bucket depth (default: 10 ms at the rate, at least 3000 bytes).
    pub burst: Option<ByteSize>,
    /// Police only this DSCP (default: every IP packet).
    pub dscp: Option<Dscp>,
    /// Police only "udp" or "tcp" (default: every protocol).
    pub protocol: Option<PolicedProtocol>,
    /// "drop" (default) or "remark:DSCP".
    pub action: Option<PoliceAction>,
    /// Punishing limiter: beyond the rate only this fraction passes.
    pub punish: Option<Probability>,
}

impl PolicerSpec {
    pub fn burst_bytes(&self) -> u64 {
        self.burst
            .map(|b| b.bytes())
            .unwrap_or((self.rate.bytes_per_sec() / 100).max(3000))
    }
}

/// The transport a policer may be limited to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PolicedProtocol {
    Udp,
    Tcp,
}

impl PolicedProtocol {
    pub fn number(self) -> u8 {
        match self {
            PolicedProtocol::Udp => 17,
            PolicedProtocol::Tcp => 6,
        }
    }
}

/// What a policer does with the excess.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoliceAction {
    Drop,
    Remark(Dscp),
}

/// DiffServ queues on the sending end: strict priority, best effort and
/// less than best effort with a minimum share (HTB).
#[derive(Debug, Clone, PartialEq)]
pub struct DiffservSpec {
    /// DSCPs of the strict-priority class (default EF).
    pub priority: Option<Vec<Dscp>>,
    /// DSCPs of the less-than-best-effort class (default CS1, DSCP 8).
    pub lbe: Option<Vec<Dscp>>,
    /// The LBE class's guaranteed share of the rate (default 1 %).
    pub lbe_min: Option<Probability>,
}

impl DiffservSpec {
    pub fn priority_dscps(&self) -> Vec<Dscp> {
        self.priority.clone().unwrap_or(vec![Dscp::EF])
    }
    pub fn lbe_dscps(&self) -> Vec<Dscp> {
        self.lbe
            .clone()
            .unwrap_or(vec![Dscp::new(8).unwrap_or_default()])
    }
    pub fn lbe_share(&self) -> f64 {
        self.lbe_min.map_or(0.01, |p| p.0)
    }
}

/// Ingress marking at the receiving end of a direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Marking {
    /// Keep every DSCP (the default).
    Trust,
    /// Everything to 0 (6NET's NON-PARTICIPANT policy).
    Reset,
    /// EF kept only from `ef_from` prefixes; other EF to 0 (FILTERED-IN).
    Filter,
}

impl Marking {
    /// As written in a topology file.
    pub fn name(self) -> &'static str {
        match self {
            Marking::Trust => "trust",
            Marking::Reset => "reset",
            Marking::Filter => "filter",
        }
    }
}

impl DirectionProfile {
    /// Reads one table of direction keys: a `[[link]]`'s own keys (less
    /// `a`, `b`, `mtu` and the direction tables) or `[link.a_to_b]`.
    pub fn from_table(t: &Table) -> Result<Self, ProfileError> {
        unknown_key("", t, &DIRECTION_KEYS, DIRECTION_KNOWN)?;
        Ok(DirectionProfile {
            rate: opt(t, "", "rate", read_rate)?,
            queue_ms: opt(t, "", "queue_ms", read_u32)?,
            queue: opt(t, "", "queue", read_queue)?,
            loss: opt(t, "", "loss", read_loss)?,
            delay: opt(t, "", "delay", read_duration)?,
            jitter: opt(t, "", "jitter", read_duration)?,
            jitter_dist: opt(t, "", "jitter_dist", read_jitter_dist)?,
            line_rate: opt(t, "", "line_rate", read_rate)?,
            duplicate: opt(t, "", "duplicate", read_probability_key)?,
            reorder: opt(t, "", "reorder", read_probability_key)?,
            policer: opt(t, "", "policer", read_policers)?,
            diffserv: opt(t, "", "diffserv", read_diffserv)?,
            marking: opt(t, "", "marking", read_marking)?,
            ef_from: opt(t, "", "ef_from", read_prefixes)?,
        })
    }

    /// This direction's own keys over `base`.
    pub fn over(&self, base: &DirectionProfile) -> DirectionProfile {
        let o = self.clone();
        let b = base.clone();
        DirectionProfile {
            rate: o.rate.or(b.rate),
            queue_ms: o.queue_ms.or(b.queue_ms),
            queue: o.queue.or(b.queue),
            loss: o.loss.or(b.loss),
            delay: o.delay.or(b.delay),
            jitter: o.jitter.or(b.jitter),
            jitter_dist: o.jitter_dist.or(b.jitter_dist),
            line_rate: o.line_rate.or(b.line_rate),
            duplicate: o.duplicate.or(b.duplicate),
            reorder: o.reorder.or(b.reorder),
            policer: o.policer.or(b.policer),
            diffserv: o.diffserv.or(b.diffserv),
            marking: o.marking.or(b.marking),
            ef_from: o.ef_from.or(b.ef_from),
        }
    }

    /// What sonde's emulator must do for this direction.
    pub fn impairment(&self) -> Impairment {
        let ns = |d: Option<Duration>| d.unwrap_or_default().as_nanos() as u64;
        Impairment {
            delay_ns: ns(self.delay),
            jitter_ns: ns(self.jitter),
            dist: self.jitter_dist.unwrap_or_default(),
            gilbert: match self.loss {
                Some(LossSpec::Gilbert(g)) => Some(g),
                _ => None,
            },
            duplicate: self.duplicate.map_or(0.0, |p| p.0),
            reorder: self.reorder.map_or(0.0, |p| p.0),
            line_rate_bps: self.line_rate.map_or(0, Rate::bps),
            policers: self
                .policer
                .iter()
                .flatten()
                .map(|p| Policer {
                    rate_bps: p.rate.bps(),
                    burst: p.burst_bytes(),
                    dscp: p.dscp.map(Dscp::value),
                    protocol: p.protocol.map(PolicedProtocol::number),
                    exceed: match p.action {
                        Some(PoliceAction::Remark(d)) => Exceed::Remark(d.value()),
                        _ => Exceed::Drop,
                    },
                    punish: p.punish.map(|p| p.0),
                })
                .collect(),
        }
    }

    /// Whether this direction needs sonde's emulator.
    pub fn emulated(&self) -> bool {
        self.impairment() != Impairment::default()
    }

    /// The random loss the kernel applies (nftables), if any.
    pub fn random_loss(&self) -> Option<f64> {
        match self.loss {
            Some(LossSpec::Random(p)) if p > 0.0 => Some(p),
            _ => None,
        }
    }

    /// What is wrong with this direction, if anything: keys that are each
    /// fine but do not go together.
    pub fn check(&self) -> Result<(), ProfileError> {
        let delay = self.delay.unwrap_or_default();
        if delay > Duration::from_secs(10) {
            return Err(ProfileError::DelayTooLong { delay });
        }
        let uniform = self.jitter_dist.unwrap_or_default() == JitterDist::Uniform;
        if let Some(jitter) = self.jitter.filter(|j| uniform && *j > delay) {
            return Err(ProfileError::JitterAboveDelay { jitter, delay });
        }
        for (key, rate) in [("rate", self.rate), ("line_rate", self.line_rate)] {
            if let Some(bps) = rate.map(Rate::bps).filter(|b| *b < 8_000) {
                return Err(ProfileError::RateTooLow {
                    key: key.into(),
                    bps,
                });
            }
        }
        if self.queue.is_some() && self.queue_ms.is_some() {
            return Err(ProfileError::QueueAndQueueMs);
        }
        if self.reorder.is_some_and(|p| p.0 > 0.0) && delay.is_zero() {
            return Err(ProfileError::ReorderWithoutDelay);
        }
        if let Some(d) = &self.diffserv {
            if self.rate.is_none() {
                return Err(ProfileError::DiffservWithoutRate);
            }
            if d.lbe_share() >= 1.0 {
                return Err(ProfileError::LbeShareTooHigh {
                    lbe_min: d.lbe_share(),
                });
            }
            let prio = d.priority_dscps();
            if let Some(&dscp) = d.lbe_dscps().iter().find(|x| prio.contains(x)) {
                return Err(ProfileError::DscpInPriorityAndLbe { dscp });
            }
        }
        match (self.marking, &self.ef_from) {
            (Some(Marking::Filter), None) => return Err(ProfileError::FilterWithoutEfFrom),
            (m, Some(_)) if m != Some(Marking::Filter) => {
                return Err(ProfileError::EfFromWithoutFilter)
            }
            _ => {}
        }
        for (i, p) in self.policer.iter().flatten().enumerate() {
            if p.rate.bps() < 8_000 {
                return Err(ProfileError::RateTooLow {
                    key: format!("policer[{}].rate", i + 1),
                    bps: p.rate.bps(),
                });
            }
            if p.burst_bytes() < 1500 {
                return Err(ProfileError::PolicerBurstTooSmall {
                    key: format!("policer[{}].burst", i + 1),
                    burst: p.burst_bytes(),
                });
            }
        }
        if let Some(marking @ (Marking::Reset | Marking::Filter)) = self.marking {
            if self.policer.as_ref().is_some_and(|p| !p.is_empty()) {
                return Err(ProfileError::PolicerBeforeMarking { marking });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ProfileError as P;

    /// The direction keys `text` (TOML), read.
    fn read(text: &str) -> Result<DirectionProfile, ProfileError> {
        DirectionProfile::from_table(&toml::from_str::<Table>(text).unwrap())
    }

    /// The direction keys `text`, read and checked.
    fn checked(text: &str) -> Result<DirectionProfile, ProfileError> {
        let p = read(text)?;
        p.check()?;
        Ok(p)
    }

    fn key_of(e: &ProfileError) -> &str {
        match e {
            P::UnknownKey { key, .. }
            | P::MissingKey { key, .. }
            | P::WrongType { key, .. }
            | P::BadRate { key, .. }
            | P::BadSize { key, .. }
            | P::BadDuration { key, .. }
            | P::BadPercentage { key, .. }
            | P::PercentageOutOfRange { key, .. }
            | P::BadInteger { key, .. }
            | P::BadQueue { key, .. }
            | P::BadDscp { key, .. }
            | P::BadPrefix { key, .. }
            | P::UnknownChoice { key, .. }
            | P::BadPoliceAction { key, .. }
            | P::RateTooLow { key, .. }
            | P::PolicerBurstTooSmall { key, .. } => key,
            other => panic!("{other:?} names no key"),
        }
    }

    #[test]
    fn every_key_reads() {
        // Read, not checked: a policer and filtering do not go together.
        let p = read(
            r#"
            rate = "155M"
            queue_ms = 20
            loss = { p = "1%", r = 0.25 }
            delay = "10ms 500us"
            jitter = "1ms"
            jitter_dist = "normal"
            line_rate = 2000000
            duplicate = "0.5%"
            reorder = 0.02
            policer = [{ rate = "7.75M", burst = "15K", dscp = "EF", protocol = "tcp", action = "remark:CS1", punish = "5%" }]
            diffserv = { priority = ["EF", 40], lbe = ["CS1"], lbe_min = "2%" }
            marking = "filter"
            ef_from = ["2001:2::/48", "198.18.0.0/15"]
            "#,
        )
        .unwrap();
        assert_eq!(p.rate, Some(Rate::from_bps(155_000_000)));
        assert_eq!(p.queue_ms, Some(20));
        assert_eq!(p.delay, Some(Duration::from_micros(10_500)));
        assert_eq!(p.jitter_dist, Some(JitterDist::Normal));
        assert_eq!(p.line_rate, Some(Rate::from_bps(2_000_000)));
        assert_eq!(p.reorder, Some(Probability(0.02)));
        let g = match p.loss {
            Some(LossSpec::Gilbert(g)) => g,
            other => panic!("{other:?}"),
        };
        assert_eq!((g.p, g.r, g.loss_good, g.loss_bad), (0.01, 0.25, 0.0, 1.0));
        let pol = &p.policer.as_ref().unwrap()[0];
        assert_eq!(pol.burst_bytes(), 15 * 1024);
        assert_eq!(pol.protocol, Some(PolicedProtocol::Tcp));
        assert_eq!(
            pol.action,
            Some(PoliceAction::Remark(Dscp::new(8).unwrap()))
        );
        let d = p.diffserv.as_ref().unwrap();
        assert_eq!(d.priority_dscps(), vec![Dscp::EF, Dscp::new(40).unwrap()]);
        assert_eq!(d.lbe_share(), 0.02);
        assert_eq!(p.marking, Some(Marking::Filter));
        assert_eq!(p.ef_from.as_ref().map(Vec::len), Some(2));
        // Queues: packets, bytes, a bare number of packets.
        for (text, limit) in [
            ("\"100p\"", QueueLimit::Packets(100)),
            ("\"100 packets\"", QueueLimit::Packets(100)),
            ("\"64K\"", QueueLimit::Bytes(65_536)),
            ("50", QueueLimit::Packets(50)),
        ] {
            assert_eq!(read(&format!("queue = {text}")).unwrap().queue, Some(limit));
        }
        assert_eq!(
            read("loss = 0.01").unwrap().loss,
            Some(LossSpec::Random(0.01))
        );
    }

    #[test]
    fn a_bare_number_of_seconds_is_a_duration_as_everywhere() {
        let p = read("delay = 0.02\njitter = \"1ms\"").unwrap();
        assert_eq!(p.delay, Some(Duration::from_millis(20)));
        assert_eq!(p.jitter, Some(Duration::from_millis(1)));
    }

    #[test]
    fn a_value_that_cannot_be_read_names_its_key_and_value() {
        let e = read("delay = \"soon\"").unwrap_err();
        assert_eq!(
            e,
            P::BadDuration {
                key: "delay".into(),
                value: "soon".into()
            }
        );
        assert!(matches!(
            read("jitter = \"5 parsecs\"").unwrap_err(),
            P::BadDuration { key, value } if key == "jitter" && value == "5 parsecs"
        ));
        assert!(matches!(
            read("rate = \"fast\"").unwrap_err(),
            P::BadRate { key, source: UnitError::Malformed { input, .. } }
                if key == "rate" && input == "fast"
        ));
        assert!(matches!(
            read("line_rate = -5").unwrap_err(),
            P::BadRate { key, .. } if key == "line_rate"
        ));
        assert_eq!(
            read("loss = \"150%\"").unwrap_err(),
            P::PercentageOutOfRange {
                key: "loss".into(),
                value: "150%".into()
            }
        );
        assert_eq!(
            read("duplicate = 1.5").unwrap_err(),
            P::PercentageOutOfRange {
                key: "duplicate".into(),
                value: "1.5".into()
            }
        );
        assert_eq!(
            read("reorder = \"abc\"").unwrap_err(),
            P::BadPercentage {
                key: "reorder".into(),
                value: "abc".into()
            }
        );
        assert_eq!(
            read("queue_ms = -1").unwrap_err(),
            P::BadInteger {
                key: "queue_ms".into(),
                value: "-1".into()
            }
        );
        for q in ["\"lots\"", "\"0p\"", "0"] {
            assert!(
                matches!(read(&format!("queue = {q}")).unwrap_err(), P::BadQueue { key, .. } if key == "queue"),
                "{q}"
            );
        }
        assert_eq!(
            read("jitter_dist = \"wobbly\"").unwrap_err(),
            P::UnknownChoice {
                key: "jitter_dist".into(),
                value: "wobbly".into(),
                choices: "\"uniform\", \"normal\" or \"pareto-normal\""
            }
        );
        assert!(matches!(
            read("marking = \"paint\"").unwrap_err(),
            P::UnknownChoice { key, .. } if key == "marking"
        ));
        assert_eq!(
            read("ef_from = [\"2001:2::/48\", \"nope\"]").unwrap_err(),
            P::BadPrefix {
                key: "ef_from[2]".into(),
                value: "nope".into()
            }
        );
        assert!(matches!(
            read("speed = 1").unwrap_err(),
            P::UnknownKey { key, .. } if key == "speed"
        ));
        // The wrong TOML type.
        for (text, key, found) in [
            ("loss = [1]", "loss", "array"),
            ("queue = true", "queue", "boolean"),
            ("delay = { ms = 1 }", "delay", "table"),
            ("policer = { rate = \"1M\" }", "policer", "table"),
            ("policer = [\"1M\"]", "policer[1]", "string"),
            ("diffserv = \"EF\"", "diffserv", "string"),
            ("ef_from = \"2001:2::/48\"", "ef_from", "string"),
            ("jitter_dist = 1", "jitter_dist", "integer"),
        ] {
            assert!(
                matches!(read(text).unwrap_err(), P::WrongType { key: k, found: f, .. } if k == key && f == found),
                "{text}"
            );
        }
    }

    #[test]
    fn nested_keys_are_named_by_their_path() {
        assert_eq!(
            read("loss = { p = \"1%\" }").unwrap_err(),
            P::MissingKey {
                key: "loss.r".into(),
                why: "Gilbert-Elliott loss needs p (good→bad) and r (bad→good), per packet"
            }
        );
        assert!(matches!(
            read("loss = { p = \"1%\", r = 0.3, q = 1 }").unwrap_err(),
            P::UnknownKey { key, .. } if key == "loss.q"
        ));
        assert!(matches!(
            read("loss = { p = \"1%\", r = \"300%\" }").unwrap_err(),
            P::PercentageOutOfRange { key, value } if key == "loss.r" && value == "300%"
        ));
        assert!(matches!(
            read("policer = [{ rate = \"1M\" }, { burst = 3000 }]").unwrap_err(),
            P::MissingKey { key, .. } if key == "policer[2].rate"
        ));
        assert!(matches!(
            read("policer = [{ rate = \"1M\", colour = \"red\" }]").unwrap_err(),
            P::UnknownKey { key, .. } if key == "policer[1].colour"
        ));
        assert_eq!(
            read("policer = [{ rate = \"1M\", action = \"shout\" }]").unwrap_err(),
            P::BadPoliceAction {
                key: "policer[1].action".into(),
                value: "shout".into()
            }
        );
        assert!(matches!(
            read("policer = [{ rate = \"1M\", action = \"remark:QQ\" }]").unwrap_err(),
            P::BadDscp { key, .. } if key == "policer[1].action"
        ));
        assert!(matches!(
            read("policer = [{ rate = \"1M\", dscp = \"XX\" }]").unwrap_err(),
            P::BadDscp { key, .. } if key == "policer[1].dscp"
        ));
        assert!(matches!(
            read("policer = [{ rate = \"1M\", protocol = \"icmp\" }]").unwrap_err(),
            P::UnknownChoice { key, .. } if key == "policer[1].protocol"
        ));
        assert!(matches!(
            read("policer = [{ rate = \"1M\", burst = \"big\" }]").unwrap_err(),
            P::BadSize { key, .. } if key == "policer[1].burst"
        ));
        assert!(matches!(
            read("policer = [{ rate = \"fast\" }]").unwrap_err(),
            P::BadRate { key, .. } if key == "policer[1].rate"
        ));
        assert!(matches!(
            read("policer = [{ rate = \"1M\", punish = \"200%\" }]").unwrap_err(),
            P::PercentageOutOfRange { key, .. } if key == "policer[1].punish"
        ));
        assert!(matches!(
            read("diffserv = { lbe = [\"CS1\", 64] }").unwrap_err(),
            P::BadDscp { key, .. } if key == "diffserv.lbe[2]"
        ));
        assert!(matches!(
            read("diffserv = { lbe_min = \"x\" }").unwrap_err(),
            P::BadPercentage { key, .. } if key == "diffserv.lbe_min"
        ));
        assert!(matches!(
            read("diffserv = { share = 1 }").unwrap_err(),
            P::UnknownKey { key, .. } if key == "diffserv.share"
        ));
    }

    #[test]
    fn keys_that_do_not_go_together_are_each_their_own_kind() {
        let err = |text: &str| checked(text).unwrap_err();
        assert_eq!(
            err("delay = \"11s\""),
            P::DelayTooLong {
                delay: Duration::from_secs(11)
            }
        );
        assert_eq!(
            err("delay = \"10ms\"\njitter = \"20ms\""),
            P::JitterAboveDelay {
                jitter: Duration::from_millis(20),
                delay: Duration::from_millis(10)
            }
        );
        // Normal jitter may exceed the delay.
        assert!(checked("delay = \"10ms\"\njitter = \"20ms\"\njitter_dist = \"normal\"").is_ok());
        assert_eq!(
            err("rate = \"1k\""),
            P::RateTooLow {
                key: "rate".into(),
                bps: 1000
            }
        );
        assert!(matches!(err("line_rate = 100"), P::RateTooLow { key, .. } if key == "line_rate"));
        assert_eq!(err("queue = \"10p\"\nqueue_ms = 5"), P::QueueAndQueueMs);
        assert_eq!(err("reorder = \"5%\""), P::ReorderWithoutDelay);
        assert_eq!(err("diffserv = {}"), P::DiffservWithoutRate);
        assert_eq!(
            err("rate = \"10M\"\ndiffserv = { lbe_min = \"100%\" }"),
            P::LbeShareTooHigh { lbe_min: 1.0 }
        );
        assert_eq!(
            err("rate = \"10M\"\ndiffserv = { lbe = [\"EF\"] }"),
            P::DscpInPriorityAndLbe { dscp: Dscp::EF }
        );
        assert_eq!(err("marking = \"filter\""), P::FilterWithoutEfFrom);
        assert_eq!(err("ef_from = [\"2001:2::/48\"]"), P::EfFromWithoutFilter);
        assert_eq!(
            err("marking = \"trust\"\nef_from = [\"2001:2::/48\"]"),
            P::EfFromWithoutFilter
        );
        assert_eq!(
            err("policer = [{ rate = \"1M\" }, { rate = \"1k\" }]"),
            P::RateTooLow {
                key: "policer[2].rate".into(),
                bps: 1000
            }
        );
        assert_eq!(
            err("policer = [{ rate = \"1M\", burst = 1000 }]"),
            P::PolicerBurstTooSmall {
                key: "policer[1].burst".into(),
                burst: 1000
            }
        );
        for marking in [Marking::Reset, Marking::Filter] {
            let e = err(&format!(
                "policer = [{{ rate = \"1M\" }}]\nmarking = \"{}\"\n{}",
                marking.name(),
                if marking == Marking::Filter {
                    "ef_from = [\"2001:2::/48\"]"
                } else {
                    ""
                }
            ));
            assert_eq!(e, P::PolicerBeforeMarking { marking });
        }
        // An empty list of policers is no policer.
        assert!(checked("policer = []\nmarking = \"reset\"").is_ok());
    }

    #[test]
    fn every_read_error_names_a_key() {
        for text in [
            "speed = 1",
            "loss = { p = \"1%\" }",
            "loss = [1]",
            "rate = \"x\"",
            "policer = [{ rate = \"1M\", burst = \"x\" }]",
            "delay = \"x\"",
            "duplicate = \"x\"",
            "duplicate = 2",
            "queue_ms = \"x\"",
            "queue = \"x\"",
            "policer = [{ rate = \"1M\", dscp = 99 }]",
            "ef_from = [\"x\"]",
            "marking = \"x\"",
            "policer = [{ rate = \"1M\", action = \"x\" }]",
        ] {
            let e = read(text).unwrap_err();
            let key = key_of(&e);
            assert!(e.to_string().contains(key), "{text}: {e}");
        }
    }
}
