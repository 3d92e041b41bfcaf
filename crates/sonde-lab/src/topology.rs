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

pub use crate::profile::DirectionProfile;
use serde::Deserialize;
use std::collections::BTreeSet;

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
    /// Whether either direction needs sonde's emulator.
    pub fn emulated(&self) -> bool {
        self.direction(true).emulated() || self.direction(false).emulated()
    }

    /// The profile of one direction: its own keys over the link-wide ones.
    pub fn direction(&self, from_a: bool) -> DirectionProfile {
        let own = if from_a { &self.a_to_b } else { &self.b_to_a };
        own.clone().unwrap_or_default().over(&self.both)
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
            // No '-': it separates the lab from the node in namespace names.
            if n.is_empty() || n.len() > 12 || !n.bytes().all(|b| b.is_ascii_alphanumeric()) {
                return err(format!("name '{n}': use 1–12 letters or digits"));
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
                let (from, to) = if from_a { (&l.a, &l.b) } else { (&l.b, &l.a) };
                l.direction(from_a).check().map_err(|m| {
                    TopologyError(format!(
                        "link {} ({}–{}), {from} → {to}: {m}",
                        i + 1,
                        l.a,
                        l.b
                    ))
                })?;
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
        let rate = Some(sonde_model::Rate::from_bps(100_000_000));
        assert_eq!(l.direction(true).rate, rate);
        assert_eq!(l.direction(true).loss, None);
        assert_eq!(l.direction(false).random_loss(), Some(0.01));
        assert_eq!(l.direction(false).rate, rate);
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
        let link = |keys: &str| format!("[[link]]\na = \"a\"\nb = \"b\"\n{keys}");
        bad(&link("loss = { p = \"1%\" }"), "needs 'r'");
        bad(
            &link("loss = { p = \"1%\", r = 0.3, q = 1 }"),
            "unknown key 'q'",
        );
        bad(&link("loss = { p = \"1%\", r = \"300%\" }"), "loss.r");
        bad(&link("reorder = \"5%\""), "reorder needs a delay");
        bad(&link("diffserv = {}"), "diffserv needs a rate");
        bad(
            &link("rate = \"10M\"\ndiffserv = { lbe = [\"EF\"] }"),
            "both priority and lbe",
        );
        bad(&link("marking = \"filter\""), "needs ef_from");
        bad(&link("ef_from = [\"2001:2::/48\"]"), "only for marking");
        bad(&link("queue = \"lots\""), "queue 'lots'");
        bad(&link("queue = \"10p\"\nqueue_ms = 5"), "not both");
        bad(
            &link("policer = [{ rate = \"1M\", action = \"shout\" }]"),
            "'shout'",
        );
        bad(
            &link("policer = [{ rate = \"1M\", burst = 1000 }]"),
            "below one full-size",
        );
        bad(
            &link("policer = [{ rate = \"1M\" }]\nmarking = \"reset\""),
            "before the receiving end's marking",
        );
        // The direction is named in the message.
        bad(&link("[link.b_to_a]\nreorder = \"1%\""), "b → a: reorder");
    }

    #[test]
    fn every_impairment_key_reaches_the_emulator() {
        let t = Topology::from_toml(
            &format!(
                "{LADDER}\n{}",
                r#"[[link]]
                a = "a"
                b = "b"
                delay = "10ms"
                jitter = "1ms"
                jitter_dist = "pareto-normal"
                loss = { p = "1%", r = "25%", loss_bad = "50%" }
                duplicate = "0.5%"
                reorder = 0.02
                queue = "100p"
                policer = [{ rate = "7.75M", dscp = "EF" }, { rate = "1.55M", dscp = 8, protocol = "udp", action = "remark:CS0", punish = "5%" }]
                [link.a_to_b]
                rate = "155M"
                diffserv = { lbe_min = "2%" }
                [link.b_to_a]
                policer = []
                marking = "filter"
                ef_from = ["2001:2:0:1::/64", "198.18.1.0/24"]"#
            ),
            "t.toml",
        )
        .unwrap();
        let l = &t.links[2];
        assert!(l.emulated());
        let d = l.direction(true);
        assert_eq!(d.queue, Some(crate::profile::QueueLimit::Packets(100)));
        assert_eq!(d.diffserv.as_ref().map(|d| d.lbe_share()), Some(0.02));
        let imp = d.impairment();
        assert_eq!((imp.delay_ns, imp.jitter_ns), (10_000_000, 1_000_000));
        assert_eq!(imp.dist, crate::emulator::JitterDist::ParetoNormal);
        let g = imp.gilbert.unwrap();
        assert_eq!((g.p, g.r, g.loss_good, g.loss_bad), (0.01, 0.25, 0.0, 0.5));
        assert_eq!((imp.duplicate, imp.reorder), (0.005, 0.02));
        assert_eq!(imp.policers.len(), 2);
        assert_eq!(imp.policers[0].burst, 9687, "10 ms at 7.75 Mbit/s");
        assert_eq!(imp.policers[0].dscp, Some(46));
        assert_eq!(imp.policers[1].exceed, crate::emulator::Exceed::Remark(0));
        assert_eq!(imp.policers[1].punish, Some(0.05));
        assert_eq!(imp.policers[1].protocol, Some(17));
        // b → a has the link-wide keys but none of a → b's, and its own
        // empty policer list overrides the link's.
        let back = l.direction(false);
        assert!(back.diffserv.is_none() && back.rate.is_none());
        assert_eq!(back.ef_from.as_ref().map(Vec::len), Some(2));
        assert!(back.impairment().policers.is_empty());
        assert_eq!(
            back.impairment().dist,
            crate::emulator::JitterDist::ParetoNormal
        );
    }
}
