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

pub use crate::profile::{DirectionProfile, ProfileError};
use serde::Deserialize;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

#[cfg(test)]
mod tests;

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
    /// Sends no ICMP of its own about the path: no Time Exceeded, no
    /// Destination Unreachable, no echo reply (a router that filters its
    /// ICMP, as many do: a trace shows it as `*`). Packet Too Big still
    /// goes out, and so does neighbour discovery.
    #[serde(default)]
    pub silent: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LinkSpec {
    pub a: String,
    pub b: String,
    /// MTU of both ends (default 1500).
    pub mtu: Option<u32>,
    /// The share of one core the link's emulator gets (its routers' or
    /// encryption boxes' CPU); none: what the machine gives.
    pub cpu: Option<f64>,
    /// The link's own direction keys, for both directions.
    pub both: DirectionProfile,
    /// Overrides for packets from `a` to `b`.
    pub a_to_b: Option<DirectionProfile>,
    pub b_to_a: Option<DirectionProfile>,
}

impl LinkSpec {
    /// Whether either direction needs sonde's emulator.
    pub fn emulated(&self) -> bool {
        self.cpu.is_some() || self.direction(true).emulated() || self.direction(false).emulated()
    }

    /// The profile of one direction: its own keys over the link-wide ones.
    pub fn direction(&self, from_a: bool) -> DirectionProfile {
        let own = if from_a { &self.a_to_b } else { &self.b_to_a };
        own.clone().unwrap_or_default().over(&self.both)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Topology {
    /// Lab name (1–12 letters or digits). Default: the file name.
    pub name: Option<String>,
    pub nodes: Vec<NodeSpec>,
    pub links: Vec<LinkSpec>,
}

/// The file as TOML gives it; direction keys are read by
/// [`DirectionProfile::from_table`], which names the key that is wrong.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTopology {
    name: Option<String>,
    #[serde(rename = "node", default)]
    nodes: Vec<NodeSpec>,
    #[serde(rename = "link", default)]
    links: Vec<RawLink>,
}

#[derive(Deserialize)]
struct RawLink {
    a: String,
    b: String,
    mtu: Option<u32>,
    cpu: Option<f64>,
    a_to_b: Option<toml::Table>,
    b_to_a: Option<toml::Table>,
    #[serde(flatten)]
    both: toml::Table,
}

/// A topology that cannot be built, naming what is wrong and where.
/// Links are numbered from 1, in the order of the file.
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    /// The file cannot be read.
    #[error("cannot read {}: {source}", .file.display())]
    Read {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Not TOML, or not shaped as a topology: a missing or unknown
    /// top-level, node or link key, a value of the wrong type, a node
    /// `kind` that does not exist. `line` and `column` count from 1.
    #[error("{file}: TOML parse error{}: {message}", at(*.line, *.column, .text))]
    Syntax {
        file: String,
        line: Option<usize>,
        column: Option<usize>,
        /// The line as written.
        text: Option<String>,
        message: String,
    },
    #[error("name '{name}': use 1–12 letters or digits")]
    BadLabName { name: String },
    #[error("no [[node]]: a lab needs at least one")]
    NoNodes,
    #[error("node '{name}': use 1–12 letters, digits or '-'")]
    BadNodeName { name: String },
    /// `NODE-lN` names a node's end of link N in the lab's hosts files.
    #[error("node '{name}': a name ending in -l and a number is a link end's (b-l3: b on link 3)")]
    LinkEndName { name: String },
    #[error("node '{name}' is defined twice")]
    DuplicateNode { name: String },
    #[error("{count} links; at most 250")]
    TooManyLinks { count: usize },
    /// A link end that is not a `[[node]]`.
    #[error("link {link} names node '{node}', which is not defined")]
    UnknownNode { link: usize, node: String },
    #[error("link {link} joins '{node}' to itself")]
    SelfLink { link: usize, node: String },
    #[error(
        "link {link} ({a}–{b}): cpu {cpu}; give the share of one core its emulator gets, 0.01 to 1"
    )]
    BadCpu {
        link: usize,
        a: String,
        b: String,
        cpu: f64,
    },
    #[error("link {link} ({a}–{b}): mtu {mtu}; use 1280 to 9000 (IPv6 needs 1280)")]
    BadMtu {
        link: usize,
        a: String,
        b: String,
        mtu: u32,
    },
    /// A direction key of a link: a value that cannot be read, or keys
    /// that do not go together. `direction` is the direction of a value in
    /// `[link.a_to_b]` / `[link.b_to_a]`, and of every combination, which is
    /// checked per direction; `None` for a value among the link's own keys,
    /// which apply to both.
    #[error("link {link} ({a}–{b}){}: {source}", toward(*.direction, .a, .b))]
    Profile {
        link: usize,
        a: String,
        b: String,
        direction: Option<LinkDirection>,
        #[source]
        source: Box<ProfileError>,
    },
}

/// One direction of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkDirection {
    /// From end `a` to end `b` (`[link.a_to_b]`).
    AToB,
    BToA,
}

impl LinkDirection {
    pub fn from_a(from_a: bool) -> Self {
        if from_a {
            LinkDirection::AToB
        } else {
            LinkDirection::BToA
        }
    }
}

fn at(line: Option<usize>, column: Option<usize>, text: &Option<String>) -> String {
    let (Some(l), Some(c)) = (line, column) else {
        return String::new();
    };
    match text {
        Some(t) => format!(" at line {l}, column {c} (`{t}`)"),
        None => format!(" at line {l}, column {c}"),
    }
}

fn toward(direction: Option<LinkDirection>, a: &str, b: &str) -> String {
    match direction {
        Some(LinkDirection::AToB) => format!(", {a} → {b}"),
        Some(LinkDirection::BToA) => format!(", {b} → {a}"),
        None => String::new(),
    }
}

impl TopologyError {
    /// The direction-key error inside, if this is one.
    pub fn profile_error(&self) -> Option<&ProfileError> {
        match self {
            TopologyError::Profile { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }

    fn syntax(file: &str, text: &str, e: &toml::de::Error) -> Self {
        let place = e.span().map(|span| {
            let before = text.get(..span.start).unwrap_or(text);
            let line_start = before.rfind('\n').map_or(0, |i| i + 1);
            let line = before.matches('\n').count() + 1;
            let column = before[line_start..].chars().count() + 1;
            let written = text[line_start..].lines().next().unwrap_or("").trim();
            (line, column, written.chars().take(80).collect::<String>())
        });
        TopologyError::Syntax {
            file: file.to_string(),
            line: place.as_ref().map(|p| p.0),
            column: place.as_ref().map(|p| p.1),
            text: place.map(|p| p.2).filter(|t| !t.is_empty()),
            message: e.message().trim().replace('\n', " "),
        }
    }
}

fn valid_name(s: &str, max: usize) -> bool {
    !s.is_empty() && s.len() <= max && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

impl Topology {
    /// Reads and checks the topology file `path`.
    pub fn load(path: &Path) -> Result<Self, TopologyError> {
        let text = std::fs::read_to_string(path).map_err(|source| TopologyError::Read {
            file: path.to_path_buf(),
            source,
        })?;
        Self::from_toml(&text, &path.display().to_string())
    }

    /// Reads and checks a topology; `origin` (the file) names it in a
    /// syntax error.
    pub fn from_toml(text: &str, origin: &str) -> Result<Self, TopologyError> {
        let raw: RawTopology =
            toml::from_str(text).map_err(|e| TopologyError::syntax(origin, text, &e))?;
        let mut links = Vec::with_capacity(raw.links.len());
        for (i, l) in raw.links.into_iter().enumerate() {
            let read = |t: &toml::Table, direction: Option<LinkDirection>| {
                DirectionProfile::from_table(t).map_err(|source| TopologyError::Profile {
                    link: i + 1,
                    a: l.a.clone(),
                    b: l.b.clone(),
                    direction,
                    source: Box::new(source),
                })
            };
            let both = read(&l.both, None)?;
            let a_to_b = l
                .a_to_b
                .as_ref()
                .map(|t| read(t, Some(LinkDirection::AToB)))
                .transpose()?;
            let b_to_a = l
                .b_to_a
                .as_ref()
                .map(|t| read(t, Some(LinkDirection::BToA)))
                .transpose()?;
            links.push(LinkSpec {
                mtu: l.mtu,
                cpu: l.cpu,
                both,
                a_to_b,
                b_to_a,
                a: l.a,
                b: l.b,
            });
        }
        let t = Topology {
            name: raw.name,
            nodes: raw.nodes,
            links,
        };
        t.validate()?;
        Ok(t)
    }

    /// The one place a topology is checked.
    pub fn validate(&self) -> Result<(), TopologyError> {
        if let Some(n) = &self.name {
            // No '-': it separates the lab from the node in namespace names.
            if n.is_empty() || n.len() > 12 || !n.bytes().all(|b| b.is_ascii_alphanumeric()) {
                return Err(TopologyError::BadLabName { name: n.clone() });
            }
        }
        if self.nodes.is_empty() {
            return Err(TopologyError::NoNodes);
        }
        let mut names = BTreeSet::new();
        for n in &self.nodes {
            if !valid_name(&n.name, 12) {
                return Err(TopologyError::BadNodeName {
                    name: n.name.clone(),
                });
            }
            if let Some((_, link)) = n.name.rsplit_once("-l") {
                if !link.is_empty() && link.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(TopologyError::LinkEndName {
                        name: n.name.clone(),
                    });
                }
            }
            if !names.insert(n.name.as_str()) {
                return Err(TopologyError::DuplicateNode {
                    name: n.name.clone(),
                });
            }
        }
        if self.links.len() > 250 {
            return Err(TopologyError::TooManyLinks {
                count: self.links.len(),
            });
        }
        for (i, l) in self.links.iter().enumerate() {
            let link = i + 1;
            for end in [&l.a, &l.b] {
                if !names.contains(end.as_str()) {
                    return Err(TopologyError::UnknownNode {
                        link,
                        node: end.clone(),
                    });
                }
            }
            if l.a == l.b {
                return Err(TopologyError::SelfLink {
                    link,
                    node: l.a.clone(),
                });
            }
            if let Some(mtu) = l.mtu.filter(|m| !(1280..=9000).contains(m)) {
                return Err(TopologyError::BadMtu {
                    link,
                    a: l.a.clone(),
                    b: l.b.clone(),
                    mtu,
                });
            }
            if let Some(cpu) = l
                .cpu
                .filter(|c| !(crate::cpu_share::MIN_SHARE..=1.0).contains(c))
            {
                return Err(TopologyError::BadCpu {
                    link,
                    a: l.a.clone(),
                    b: l.b.clone(),
                    cpu,
                });
            }
            for from_a in [true, false] {
                l.direction(from_a)
                    .check()
                    .map_err(|source| TopologyError::Profile {
                        link,
                        a: l.a.clone(),
                        b: l.b.clone(),
                        direction: Some(LinkDirection::from_a(from_a)),
                        source: Box::new(source),
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
