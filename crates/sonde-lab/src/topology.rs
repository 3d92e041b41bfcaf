//! The topology file of `sonde lab up`: nodes, links, and how each link
//! direction behaves. Every key is documented in `docs/lab.md`.
//!
//! ```toml
//! name = "ladder"
//! [[node]]
//! name = "a"
//! [[node]]
//! name = "r"
//! kind = "router"
//! [[link]]
//! a = "a"
//! b = "r"
//! rate = "100M"        # both directions
//! [link.b_to_a]
//! loss = "1%"          # one direction only
//! ```

use serde::Deserialize;
use sonde_model::Rate;
use std::collections::BTreeSet;
use std::time::Duration;

/// What a node does with packets not addressed to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum NodeKind {
    /// Ends traffic; does not forward.
    #[default]
    Host,
    /// Forwards between its links.
    Router,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    pub name: String,
    #[serde(default)]
    pub kind: NodeKind,
}

/// How one direction of a link behaves. Keys not given stay as the
/// link-wide value, then as a plain link.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirectionProfile {
    /// Bottleneck rate (TBF on the sending interface).
    pub rate: Option<Rate>,
    /// Queue of the bottleneck, in milliseconds at the rate (default 50).
    pub queue_ms: Option<u32>,
    /// Random loss, as a percentage string ("1%") or a fraction (0.01).
    pub loss: Option<Loss>,
    /// One-way delay added by sonde's link emulator ("20ms").
    #[serde(default, deserialize_with = "opt_duration")]
    pub delay: Option<Duration>,
    /// Uniform jitter of ± this around the delay ("2ms"); frames leave in
    /// release order, so it reorders when larger than their spacing.
    #[serde(default, deserialize_with = "opt_duration")]
    pub jitter: Option<Duration>,
    /// Shape of the jitter: "uniform" (± jitter, default) or "normal"
    /// (standard deviation jitter).
    pub jitter_dist: Option<JitterDistName>,
}

/// The jitter distributions a topology may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JitterDistName {
    Uniform,
    Normal,
}

fn opt_duration<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    let s = String::deserialize(d)?;
    humantime::parse_duration(&s)
        .map(Some)
        .map_err(|_| serde::de::Error::custom(format!("'{s}' is not a duration (e.g. 20ms)")))
}

/// A loss probability in [0, 1].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Loss(pub f64);

impl<'de> Deserialize<'de> for Loss {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Fraction(f64),
            Text(String),
        }
        let p = match Raw::deserialize(d)? {
            Raw::Fraction(f) => f,
            Raw::Text(t) => {
                let body = t.trim();
                let (num, scale) = match body.strip_suffix('%') {
                    Some(n) => (n.trim(), 100.0),
                    None => (body, 1.0),
                };
                num.parse::<f64>().map(|v| v / scale).map_err(|_| {
                    serde::de::Error::custom(format!("'{t}' is not a loss (e.g. \"1%\" or 0.01)"))
                })?
            }
        };
        if !(0.0..=1.0).contains(&p) {
            return Err(serde::de::Error::custom(format!(
                "loss {p} is outside 0–100 %"
            )));
        }
        Ok(Loss(p))
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    pub a: String,
    pub b: String,
    /// MTU of both ends (default 1500).
    pub mtu: Option<u32>,
    #[serde(flatten)]
    pub both: DirectionProfile,
    /// Overrides for packets from `a` to `b`.
    #[serde(default)]
    pub a_to_b: Option<DirectionProfile>,
    #[serde(default)]
    pub b_to_a: Option<DirectionProfile>,
}

impl LinkSpec {
    /// Whether either direction needs sonde's emulator (delay, jitter).
    pub fn emulated(&self) -> bool {
        [true, false].iter().any(|&a| {
            let d = self.direction(a);
            d.delay.is_some() || d.jitter.is_some()
        })
    }

    /// The profile of one direction: its own keys over the link-wide ones.
    pub fn direction(&self, from_a: bool) -> DirectionProfile {
        let own = if from_a { &self.a_to_b } else { &self.b_to_a };
        let own = own.clone().unwrap_or_default();
        DirectionProfile {
            rate: own.rate.or(self.both.rate),
            queue_ms: own.queue_ms.or(self.both.queue_ms),
            loss: own.loss.or(self.both.loss),
            delay: own.delay.or(self.both.delay),
            jitter: own.jitter.or(self.both.jitter),
            jitter_dist: own.jitter_dist.or(self.both.jitter_dist),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Topology {
    /// Lab name (letters, digits, '-'; at most 12). Default: the file name.
    pub name: Option<String>,
    #[serde(rename = "node")]
    pub nodes: Vec<NodeSpec>,
    #[serde(rename = "link", default)]
    pub links: Vec<LinkSpec>,
}

/// A topology that cannot be built, naming what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TopologyError(pub String);

fn valid_name(s: &str, max: usize) -> bool {
    !s.is_empty() && s.len() <= max && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

impl Topology {
    pub fn from_toml(text: &str, origin: &str) -> Result<Self, TopologyError> {
        let t: Topology = toml::from_str(text).map_err(|e| {
            TopologyError(format!(
                "{origin}: {}",
                e.to_string().trim().replace('\n', " ")
            ))
        })?;
        t.validate()?;
        Ok(t)
    }

    /// The one place a topology is checked.
    pub fn validate(&self) -> Result<(), TopologyError> {
        let err = |m: String| Err(TopologyError(m));
        if let Some(n) = &self.name {
            if !valid_name(n, 12) {
                return err(format!("name '{n}': use 1–12 letters, digits or '-'"));
            }
        }
        if self.nodes.is_empty() {
            return err("no [[node]]: a lab needs at least one".into());
        }
        let mut names = BTreeSet::new();
        for n in &self.nodes {
            if !valid_name(&n.name, 12) {
                return err(format!(
                    "node '{}': use 1–12 letters, digits or '-'",
                    n.name
                ));
            }
            if !names.insert(n.name.as_str()) {
                return err(format!("node '{}' is defined twice", n.name));
            }
        }
        if self.links.len() > 250 {
            return err(format!("{} links; at most 250", self.links.len()));
        }
        for (i, l) in self.links.iter().enumerate() {
            for end in [&l.a, &l.b] {
                if !names.contains(end.as_str()) {
                    return err(format!(
                        "link {} names node '{end}', which is not defined",
                        i + 1
                    ));
                }
            }
            if l.a == l.b {
                return err(format!("link {} joins '{}' to itself", i + 1, l.a));
            }
            if let Some(m) = l.mtu {
                if !(1280..=9000).contains(&m) {
                    return err(format!(
                        "link {} ({}–{}): mtu {m}; use 1280 to 9000 (IPv6 needs 1280)",
                        i + 1,
                        l.a,
                        l.b
                    ));
                }
            }
            for from_a in [true, false] {
                let d = l.direction(from_a);
                let uniform = d.jitter_dist != Some(JitterDistName::Normal);
                if d.delay.is_some_and(|x| x > Duration::from_secs(10))
                    || (uniform && d.jitter.is_some_and(|j| j > d.delay.unwrap_or_default()))
                {
                    return err(format!(
                        "link {} ({}–{}): delay at most 10s, and uniform jitter at most the delay",
                        i + 1,
                        l.a,
                        l.b
                    ));
                }
                if d.rate.is_some_and(|r| r.bps() < 8_000) {
                    return err(format!(
                        "link {} ({}–{}): rate below 8 kbit/s",
                        i + 1,
                        l.a,
                        l.b
                    ));
                }
            }
        }
        Ok(())
    }

    pub fn kind_of(&self, node: &str) -> NodeKind {
        self.nodes
            .iter()
            .find(|n| n.name == node)
            .map_or(NodeKind::Host, |n| n.kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LADDER: &str = r#"
        name = "t1"
        [[node]]
        name = "a"
        [[node]]
        name = "r"
        kind = "router"
        [[node]]
        name = "b"
        [[link]]
        a = "a"
        b = "r"
        rate = "100M"
        [link.b_to_a]
        loss = "1%"
        [[link]]
        a = "r"
        b = "b"
        mtu = 9000
    "#;

    #[test]
    fn a_ladder_parses_with_per_direction_overrides() {
        let t = Topology::from_toml(LADDER, "t.toml").unwrap();
        assert_eq!(t.kind_of("r"), NodeKind::Router);
        let l = &t.links[0];
        assert_eq!(l.direction(true).rate, Some(Rate::from_bps(100_000_000)));
        assert_eq!(l.direction(true).loss, None);
        assert_eq!(l.direction(false).loss, Some(Loss(0.01)));
        assert_eq!(l.direction(false).rate, Some(Rate::from_bps(100_000_000)));
    }

    #[test]
    fn mistakes_are_named() {
        let bad = |extra: &str, needle: &str| {
            let e = Topology::from_toml(&format!("{LADDER}\n{extra}"), "t.toml").unwrap_err();
            assert!(e.0.contains(needle), "{e}");
        };
        bad("[[link]]\na = \"a\"\nb = \"zz\"", "'zz'");
        bad("[[node]]\nname = \"a\"", "defined twice");
        bad(
            "[[link]]\na = \"a\"\nb = \"b\"\ndelay = \"10ms\"\njitter = \"20ms\"",
            "jitter at most",
        );
        bad("[[link]]\na = \"a\"\nb = \"b\"\ndelay = \"soon\"", "soon");
        bad("[[link]]\na = \"a\"\nb = \"b\"\nloss = \"150%\"", "outside");
        bad("[[link]]\na = \"a\"\nb = \"b\"\nspeed = 1", "speed");
    }
}
