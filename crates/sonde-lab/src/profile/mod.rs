//! How one direction of a lab link behaves: the keys of a topology file's
//! `[[link]]`, `[link.a_to_b]` and `[link.b_to_a]` tables and their values.
//! Every key is documented in `docs/lab.md`.
//!
//! The keys are read here by hand, not by serde, so that a value that
//! cannot be read comes back as a [`ProfileError`] naming its key and the
//! value as written, which a caller can tell apart from other mistakes.

mod error;
#[cfg(test)]
mod hop_tests;
mod read;
mod rio;
#[cfg(test)]
mod tests;

pub use error::ProfileError;

/// An MPLS hop as `sonde lab set --mpls` takes it: `off` (none), or the
/// `mpls` key's inline table, read and checked as in a topology file.
pub fn mpls_setting(text: &str) -> Result<Option<Lsr>, ProfileError> {
    if text.trim() == "off" {
        return Ok(None);
    }
    let not_a_table = || ProfileError::WrongType {
        key: "mpls".into(),
        expected: "off, or a table { labels = [16005], address = [\"2001:db8::1\"] }",
        found: "text",
    };
    let table: Table = toml::from_str(&format!("mpls = {text}")).map_err(|_| not_a_table())?;
    // Only the one value: text that goes on past it is not the key's.
    let value = table
        .get("mpls")
        .filter(|_| table.len() == 1)
        .ok_or_else(not_a_table)?;
    read_mpls("mpls", value).map(Some)
}

use crate::emulator::{Exceed, Gilbert, Impairment, JitterDist, Lsr, Policer, Rio, Suite, Tunnel};
use ipnet::IpNet;
use read::*;
use rio::read_rio;
use serde::Deserialize;
use sonde_model::{ByteSize, Dscp, Rate};
use std::time::Duration;
use toml::Table;

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
    /// Most packets queued for the line (default: as many as come).
    pub line_queue: Option<u32>,
    /// RED with In and Out on the line's queue (seed 004 §5.1).
    pub rio: Option<Rio>,
    /// Fraction of frames sent twice.
    pub duplicate: Option<Probability>,
    /// Fraction of frames that skip the delay (and so overtake).
    pub reorder: Option<Probability>,
    pub policer: Option<Vec<PolicerSpec>>,
    pub diffserv: Option<DiffservSpec>,
    /// What the receiving end does with the DSCP of arriving packets.
    pub marking: Option<Marking>,
    /// The flow label the receiving end gives every arriving IPv6 packet.
    pub flow_label: Option<u32>,
    /// With `marking = "filter"`: the sources whose EF is kept.
    pub ef_from: Option<Vec<IpNet>>,
    /// An MPLS hop at the start of the direction (sonde's emulator).
    pub mpls: Option<Lsr>,
    /// A tunnel over the direction: overhead per packet, an MTU.
    pub tunnel: Option<Tunnel>,
}

/// The line's queue with RIO and no `line_queue`: seed 004 §5.1's 30
/// packets, which Table 8's thresholds are fractions of.
pub const RIO_QUEUE: u32 = 30;

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
            line_queue: opt(t, "", "line_queue", read_u32)?,
            rio: opt(t, "", "rio", read_rio)?,
            duplicate: opt(t, "", "duplicate", read_probability_key)?,
            reorder: opt(t, "", "reorder", read_probability_key)?,
            policer: opt(t, "", "policer", read_policers)?,
            diffserv: opt(t, "", "diffserv", read_diffserv)?,
            marking: opt(t, "", "marking", read_marking)?,
            flow_label: opt(t, "", "flow_label", read_flow_label)?,
            ef_from: opt(t, "", "ef_from", read_prefixes)?,
            mpls: opt(t, "", "mpls", read_mpls)?,
            tunnel: opt(t, "", "tunnel", read_tunnel)?,
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
            line_queue: o.line_queue.or(b.line_queue),
            rio: o.rio.or(b.rio),
            duplicate: o.duplicate.or(b.duplicate),
            reorder: o.reorder.or(b.reorder),
            policer: o.policer.or(b.policer),
            diffserv: o.diffserv.or(b.diffserv),
            marking: o.marking.or(b.marking),
            flow_label: o.flow_label.or(b.flow_label),
            ef_from: o.ef_from.or(b.ef_from),
            mpls: o.mpls.or(b.mpls),
            tunnel: o.tunnel.or(b.tunnel),
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
            line_queue: self
                .line_queue
                .unwrap_or(if self.rio.is_some() { RIO_QUEUE } else { 0 }),
            rio: self.rio,
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
            mpls: self.mpls.clone(),
            tunnel: self.tunnel.clone(),
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
        if self.line_rate.is_none() {
            for (key, set) in [
                ("line_queue", self.line_queue.is_some()),
                ("rio", self.rio.is_some()),
            ] {
                if set {
                    return Err(ProfileError::LineQueueWithoutLineRate { key });
                }
            }
        }
        if self.line_queue == Some(0) {
            return Err(ProfileError::BadLineQueue {
                key: "line_queue".into(),
                why: "at least 1 packet (leave it out for a queue without a limit)",
            });
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
