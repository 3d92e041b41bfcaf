//! How one direction of a lab link behaves: the keys of a topology file's
//! `[[link]]`, `[link.a_to_b]` and `[link.b_to_a]` tables and their values.
//! Every key is documented in `docs/lab.md`.

use crate::emulator::{Exceed, Gilbert, Impairment, JitterDist, Policer};
use ipnet::IpNet;
use serde::Deserialize;
use sonde_model::{ByteSize, Dscp, Rate};
use std::collections::BTreeMap;
use std::time::Duration;

/// Keys not given stay as the link-wide value, then as a plain link.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirectionProfile {
    /// Bottleneck rate (TBF, or HTB with `diffserv`, on the sending end).
    pub rate: Option<Rate>,
    /// Queue of the bottleneck, in milliseconds at the rate (default 50).
    pub queue_ms: Option<u32>,
    /// Queue of the bottleneck in packets ("100p") or bytes ("64K").
    pub queue: Option<QueueLimit>,
    /// Random loss ("1%", 0.01) or a Gilbert-Elliott model.
    pub loss: Option<LossSpec>,
    #[serde(default, deserialize_with = "opt_duration")]
    pub delay: Option<Duration>,
    #[serde(default, deserialize_with = "opt_duration")]
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

fn opt_duration<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    let s = String::deserialize(d)?;
    humantime::parse_duration(&s)
        .map(Some)
        .map_err(|_| serde::de::Error::custom(format!("'{s}' is not a duration (e.g. 20ms)")))
}

/// A number or a string, as TOML gives a percentage.
#[derive(Deserialize)]
#[serde(untagged)]
enum RawNumber {
    Number(f64),
    Text(String),
}

impl RawNumber {
    fn probability(&self) -> Result<f64, String> {
        let p = match self {
            RawNumber::Number(f) => *f,
            RawNumber::Text(t) => {
                let body = t.trim();
                let (num, scale) = match body.strip_suffix('%') {
                    Some(n) => (n.trim(), 100.0),
                    None => (body, 1.0),
                };
                num.parse::<f64>()
                    .map(|v| v / scale)
                    .map_err(|_| format!("'{t}' is not a percentage (e.g. \"1%\" or 0.01)"))?
            }
        };
        if (0.0..=1.0).contains(&p) {
            Ok(p)
        } else {
            Err(format!("{p} is outside 0–100 %"))
        }
    }
}

/// A probability in [0, 1], written "1%" or 0.01.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Probability(pub f64);

impl<'de> Deserialize<'de> for Probability {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        RawNumber::deserialize(d)?
            .probability()
            .map(Probability)
            .map_err(serde::de::Error::custom)
    }
}

/// Loss on a link direction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LossSpec {
    /// Each packet lost with this probability (nftables, at the receiver).
    Random(f64),
    /// Bursts (sonde's emulator).
    Gilbert(Gilbert),
}

impl<'de> Deserialize<'de> for LossSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Plain(RawNumber),
            Model(BTreeMap<String, RawNumber>),
        }
        let raw = Raw::deserialize(d).map_err(|_| {
            D::Error::custom(
                "loss is a percentage (\"1%\", 0.01) or a Gilbert-Elliott table { p, r, loss_good, loss_bad }",
            )
        })?;
        match raw {
            Raw::Plain(n) => n
                .probability()
                .map(LossSpec::Random)
                .map_err(D::Error::custom),
            Raw::Model(m) => {
                const KEYS: [&str; 4] = ["p", "r", "loss_good", "loss_bad"];
                if let Some(k) = m.keys().find(|k| !KEYS.contains(&k.as_str())) {
                    return Err(D::Error::custom(format!(
                        "loss: unknown key '{k}' (Gilbert-Elliott takes p, r, loss_good, loss_bad)"
                    )));
                }
                let get = |k: &str, default: Option<f64>| match (m.get(k), default) {
                    (Some(v), _) => v
                        .probability()
                        .map_err(|e| D::Error::custom(format!("loss.{k}: {e}"))),
                    (None, Some(v)) => Ok(v),
                    (None, None) => Err(D::Error::custom(format!(
                        "loss: Gilbert-Elliott needs '{k}' (p: good→bad, r: bad→good, per packet)"
                    ))),
                };
                Ok(LossSpec::Gilbert(Gilbert {
                    p: get("p", None)?,
                    r: get("r", None)?,
                    loss_good: get("loss_good", Some(0.0))?,
                    loss_bad: get("loss_bad", Some(1.0))?,
                }))
            }
        }
    }
}

/// A queue limit in packets or bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueLimit {
    Packets(u32),
    Bytes(u64),
}

impl<'de> Deserialize<'de> for QueueLimit {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let bad = |s: &str| {
            D::Error::custom(format!(
                "queue '{s}': give packets (\"100p\") or bytes (\"64K\", \"150000B\")"
            ))
        };
        let text = match RawNumber::deserialize(d).map_err(|_| bad("?"))? {
            RawNumber::Number(n) => format!("{n}p"),
            RawNumber::Text(t) => t,
        };
        let t = text.trim();
        let limit = if let Some(n) = t.strip_suffix("packets").or_else(|| t.strip_suffix('p')) {
            n.trim()
                .parse::<u32>()
                .map(QueueLimit::Packets)
                .map_err(|_| bad(t))?
        } else {
            t.parse::<ByteSize>()
                .map(|b| QueueLimit::Bytes(b.bytes()))
                .map_err(|_| bad(t))?
        };
        match limit {
            QueueLimit::Packets(0) | QueueLimit::Bytes(0) => Err(bad(t)),
            l => Ok(l),
        }
    }
}

/// A policer on a link direction (sonde's emulator: nftables' byte limit
/// has a one-second bucket, too coarse to stand for a router's policer).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
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

impl<'de> Deserialize<'de> for PoliceAction {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        match s.trim().split_once(':') {
            None if s.trim() == "drop" => Ok(PoliceAction::Drop),
            Some(("remark", dscp)) => dscp
                .parse()
                .map(PoliceAction::Remark)
                .map_err(serde::de::Error::custom),
            _ => Err(serde::de::Error::custom(format!(
                "policer action '{s}': use \"drop\" or \"remark:DSCP\" (e.g. remark:CS0)"
            ))),
        }
    }
}

/// DiffServ queues on the sending end: strict priority, best effort and
/// less than best effort with a minimum share (HTB).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
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

impl DirectionProfile {
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

    /// What is wrong with this direction, if anything.
    pub fn check(&self) -> Result<(), String> {
        if self.delay.is_some_and(|x| x > Duration::from_secs(10)) {
            return Err("delay at most 10s".into());
        }
        let uniform = self.jitter_dist.unwrap_or_default() == JitterDist::Uniform;
        if uniform
            && self
                .jitter
                .is_some_and(|j| j > self.delay.unwrap_or_default())
        {
            return Err("uniform jitter at most the delay".into());
        }
        if self.rate.is_some_and(|r| r.bps() < 8_000) {
            return Err("rate below 8 kbit/s".into());
        }
        if self.line_rate.is_some_and(|r| r.bps() < 8_000) {
            return Err("line_rate below 8 kbit/s".into());
        }
        if self.queue.is_some() && self.queue_ms.is_some() {
            return Err("give queue or queue_ms, not both".into());
        }
        if self.reorder.is_some_and(|p| p.0 > 0.0) && self.delay.unwrap_or_default().is_zero() {
            return Err("reorder needs a delay: a reordered frame skips it".into());
        }
        if let Some(d) = &self.diffserv {
            if self.rate.is_none() {
                return Err("diffserv needs a rate: the classes share it".into());
            }
            if d.lbe_share() >= 1.0 {
                return Err("diffserv lbe_min must be below 100 %".into());
            }
            let prio = d.priority_dscps();
            if let Some(x) = d.lbe_dscps().iter().find(|x| prio.contains(x)) {
                return Err(format!("diffserv: DSCP {x} is in both priority and lbe"));
            }
        }
        match (self.marking, &self.ef_from) {
            (Some(Marking::Filter), None) => {
                return Err(
                    "marking = \"filter\" needs ef_from = [prefixes whose EF is kept]".into(),
                )
            }
            (m, Some(_)) if m != Some(Marking::Filter) => {
                return Err("ef_from is only for marking = \"filter\"".into())
            }
            _ => {}
        }
        for p in self.policer.iter().flatten() {
            if p.rate.bps() < 8_000 {
                return Err("policer rate below 8 kbit/s".into());
            }
            if p.burst_bytes() < 1500 {
                return Err(format!(
                    "policer burst {} is below one full-size packet (1500 bytes)",
                    p.burst_bytes()
                ));
            }
        }
        if self.policer.as_ref().is_some_and(|p| !p.is_empty())
            && matches!(self.marking, Some(Marking::Reset | Marking::Filter))
        {
            return Err(
                "a policer acts on the wire, before the receiving end's marking; \
                 police on the next link, after the marking"
                    .into(),
            );
        }
        Ok(())
    }
}
