//! What `sonde compare` compares: each selection read as observations (a
//! direction of a test, or an RFC 2544 rate found at one frame size), each
//! in its group. Rows pair A's group with the same group of B: by test and
//! direction always, and by what `--by` names (the campaign step, the
//! payload size, the offered rate, the address family): seed 000's Table
//! 2/3 per step, 001's goodput per packet size, 002's IPv6 against IPv4
//! per frame size.

use clap::ValueEnum;
use sonde_archive::{ArchiveError, ResultFilter, Store};
use sonde_model::method::family_used;
use sonde_model::{Direction, Figures, IpFamily, MethodKind, MethodResult, Metric, TestResult};
use std::collections::{BTreeSet, HashMap};
use std::time::UNIX_EPOCH;

/// What rows are split by, beside the test and the direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum By {
    /// The campaign step (the `step` label a campaign gives each result).
    Step,
    /// Bytes per UDP payload or TCP write (NDR: the UDP payload of each
    /// frame size, which differs between IPv4 and IPv6).
    Payload,
    /// Ethernet frame bytes: NDR's frame sizes (RFC 2544), the same for
    /// IPv4 and IPv6 (002's packet sizes).
    Frame,
    /// The rate offered per stream (UDP `-b`, paced TCP).
    Rate,
    /// IPv6 or IPv4, as the test ran.
    Family,
}

impl By {
    /// Whether the group's value is a number to draw on a chart's x axis.
    pub fn numeric(self) -> bool {
        matches!(self, By::Payload | By::Frame | By::Rate)
    }

    /// The x axis of a chart drawn against this key.
    pub fn axis(self) -> &'static str {
        match self {
            By::Payload => "payload (bytes)",
            By::Frame => "frame (bytes)",
            By::Rate => "offered rate (Mbit/s)",
            By::Step => "step",
            By::Family => "family",
        }
    }
}

/// A group's value of one key: a number (payload bytes, rate in bit/s)
/// sorts as one.
#[derive(Debug, Clone, PartialEq, PartialOrd)]
pub enum Part {
    Number(f64),
    Text(String),
    /// The observation does not have this key (a ping has no rate).
    None,
}

impl Part {
    fn show(&self, by: By) -> String {
        match (self, by) {
            (Part::Number(v), By::Payload) => format!("{v} B"),
            (Part::Number(v), By::Frame) => format!("{v} B frame"),
            (Part::Number(v), By::Rate) => format!("{} Mbit/s", v / 1e6),
            (Part::Number(v), _) => format!("{v}"),
            (Part::Text(s), _) => s.clone(),
            (Part::None, _) => "–".into(),
        }
    }
}

/// The group of an observation: its value of each `--by` key, in order.
#[derive(Debug, Clone, PartialEq, PartialOrd)]
pub struct Group(pub Vec<(By, Part)>);

impl Group {
    /// How the group is named in a row ("" when not split).
    pub fn name(&self) -> String {
        self.0
            .iter()
            .map(|(by, p)| p.show(*by))
            .collect::<Vec<_>>()
            .join(" · ")
    }

    /// The value of the first numeric key, for a chart's x axis.
    pub fn x(&self) -> Option<(By, f64)> {
        self.0.iter().find_map(|(by, p)| match p {
            Part::Number(v) if by.numeric() => Some((*by, *v)),
            _ => None,
        })
    }

    /// The group without its numeric keys: what a series of a chart
    /// drawn against the numeric key is made of.
    pub fn without_x(&self) -> Group {
        Group(
            self.0
                .iter()
                .filter(|(by, _)| !by.numeric())
                .cloned()
                .collect(),
        )
    }
}

/// One set of figures of a selection.
#[derive(Debug, Clone)]
pub struct Obs {
    /// `tcp`, `udp`, `ping`, `http`, `ndr` (an RFC 2544 rate found), or
    /// `tcp background` and `udp background` (a QoS scenario's load).
    pub test: &'static str,
    /// `forward`, `reverse`, `round_trip` or `total`.
    pub direction: &'static str,
    /// The campaign's endpoints it ran between (its `from` and `to`
    /// labels), and whether both directions ran at once: how its
    /// direction is named (`A to B (with B to A)`).
    pub ends: Option<(String, String)>,
    pub both: bool,
    pub group: Group,
    /// Seconds since the epoch the test (or method) started.
    pub at: f64,
    /// Bytes per packet, for `--correct-for`.
    pub payload: Option<u32>,
    pub figures: Figures,
}

fn secs(t: &sonde_model::Timestamp) -> f64 {
    t.0.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

fn family_part(f: IpFamily) -> Part {
    match f {
        IpFamily::V6 => Part::Text("IPv6".into()),
        IpFamily::V4 => Part::Text("IPv4".into()),
        IpFamily::Any => Part::None,
    }
}

/// A selection's observations: every direction of every test `filter`
/// selects, except the trials of an NDR search (probes at rates the
/// search tried, not figures of the path), and each NDR rate found.
/// `filter.test = ndr` keeps the NDR rates only; `filter.direction`
/// `forward` or `reverse` keeps that direction's figures (a bidirectional
/// test's too); `filter.family` keeps NDR rates of that family.
pub fn observations(
    store: &mut Store,
    filter: &ResultFilter,
    by: &[By],
) -> Result<Vec<Obs>, ArchiveError> {
    let mut filter = filter.clone();
    let ndr_only = filter.test.as_deref() == Some("ndr");
    if ndr_only {
        filter.test = None;
    }
    let one_way = filter
        .direction
        .take_if(|d| d == "forward" || d == "reverse");
    let steps: std::collections::HashMap<String, String> = if by.contains(&By::Step) {
        store.label_values(&filter, "step")?.into_iter().collect()
    } else {
        Default::default()
    };
    let step = |id: &str| match steps.get(id) {
        Some(s) => Part::Text(s.clone()),
        None => Part::None,
    };
    let ndrs: Vec<MethodResult> = store
        .methods_of(&filter, 10_000)?
        .into_iter()
        .filter(|m| m.method == MethodKind::Ndr)
        .collect();
    let probes: BTreeSet<String> = ndrs
        .iter()
        .flat_map(|m| m.trials.iter().map(|t| t.id.to_string()))
        .collect();
    let label = |key: &str, store: &mut Store| -> Result<HashMap<String, String>, ArchiveError> {
        Ok(store.label_values(&filter, key)?.into_iter().collect())
    };
    let (from, to) = (label("from", store)?, label("to", store)?);
    let mut out = Vec::new();
    for m in &ndrs {
        let method_step = m.trials.first().map(|t| step(&t.id.to_string()));
        for s in &m.results {
            let family = match s.family {
                IpFamily::V6 => "v6",
                IpFamily::V4 => "v4",
                IpFamily::Any => "",
            };
            if filter.family.as_deref().is_some_and(|f| f != family) {
                continue;
            }
            let group = Group(
                by.iter()
                    .map(|&b| {
                        let part = match b {
                            By::Step => method_step.clone().unwrap_or(Part::None),
                            By::Payload => Part::Number(f64::from(s.payload_bytes)),
                            By::Frame => Part::Number(f64::from(s.frame_bytes)),
                            By::Rate => Part::None,
                            By::Family => family_part(s.family),
                        };
                        (b, part)
                    })
                    .collect(),
            );
            out.push(Obs {
                test: "ndr",
                direction: "forward",
                ends: None,
                both: false,
                group,
                at: secs(&m.start),
                payload: Some(s.payload_bytes),
                figures: Figures {
                    direction: Some(Direction::Forward),
                    throughput_bps: Some(s.rate_bps),
                    loss_pct: Some(s.loss_pct),
                    ..Figures::default()
                },
            });
        }
    }
    if ndr_only {
        return Ok(out);
    }
    for r in store.list_results(&filter)? {
        let id = r.id.to_string();
        if probes.contains(&id) {
            continue;
        }
        let group = Group(
            by.iter()
                .map(|&b| (b, part_of(&r, b, &step(&id))))
                .collect(),
        );
        let ends = from.get(&id).cloned().zip(to.get(&id).cloned());
        let directions = r.summary.by_direction();
        let both = directions.len() == 2;
        for (d, f) in directions {
            if one_way.as_deref().is_some_and(|w| w != d) {
                continue;
            }
            out.push(Obs {
                test: test_of(&r),
                direction: d,
                ends: ends.clone(),
                both,
                group: group.clone(),
                at: secs(&r.start),
                payload: sonde_methods::overhead::payload_per_packet(&r),
                figures: f.clone(),
            });
        }
    }
    Ok(out)
}

/// The test an observation is of: its kind, or a QoS scenario's
/// background load (a trial titled `background`) apart from the
/// foreground it loads.
fn test_of(r: &TestResult) -> &'static str {
    match (r.spec.kind().name(), r.spec.title()) {
        ("tcp", Some("background")) => "tcp background",
        ("udp", Some("background")) => "udp background",
        (kind, _) => kind,
    }
}

fn part_of(r: &TestResult, by: By, step: &Part) -> Part {
    match by {
        By::Step => step.clone(),
        By::Payload => r
            .spec
            .length()
            .map_or(Part::None, |b| Part::Number(f64::from(b))),
        By::Frame => Part::None,
        By::Rate => r
            .spec
            .offered_rate()
            .map_or(Part::None, |v| Part::Number(v.bps() as f64)),
        By::Family => family_part(family_used(r)),
    }
}

/// The metrics compared (the registry's headline ones), by their short
/// names: throughput, loss, pdr, jitter, rtt, burst.
pub(crate) const METRICS: &[Metric] = &Metric::HEADLINE;

/// The directions a row is made of, in the order rows are listed.
pub(crate) const DIRECTIONS: [&str; 4] = ["forward", "reverse", "round_trip", "total"];

/// The tests rows are made of, in the order rows are listed: a QoS
/// scenario's background load is a test of its own beside its foreground.
pub(crate) const TESTS: [&str; 7] = [
    "tcp",
    "udp",
    "ping",
    "http",
    "ndr",
    "tcp background",
    "udp background",
];

/// The observations of `test` in `group` with figures of `direction`.
pub(crate) fn of<'a>(obs: &'a [Obs], test: &str, group: &Group, direction: &str) -> Vec<&'a Obs> {
    obs.iter()
        .filter(|o| o.test == test && o.direction == direction && &o.group == group)
        .collect()
}

/// The groups of `test` in `obs`, in order (payloads and rates by size).
pub(crate) fn groups(obs: &[Obs], test: &str) -> Vec<Group> {
    let mut out: Vec<Group> = Vec::new();
    for o in obs.iter().filter(|o| o.test == test) {
        if !out.contains(&o.group) {
            out.push(o.group.clone());
        }
    }
    out.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    out
}

/// Whether metric `m` is one of those asked (all when none are).
pub(crate) fn wanted(m: Metric, metrics: &[String]) -> bool {
    metrics.is_empty() || metrics.iter().any(|x| x == m.info().short)
}
