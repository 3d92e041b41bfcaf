//! What was measured: [`TestResult`], the one versioned document every
//! test produces.
//!
//! Every result has the same header (`id`, `format_version`,
//! `sonde_version`, `test`, `title`, `spec`, `env`, `start`, `duration_s`,
//! `interrupted`), then `intervals` and `summary`, whose figures are
//! [`Figures`] with the same names in every test. This is what `-J`
//! prints and what the archive stores; its JSON Schema is
//! `docs/schema/result-v3.schema.json` and its changes are listed in
//! docs/result-format.md. A document of an older format is read by
//! [`crate::load`]. Change a field only with a new
//! [`RESULT_FORMAT_VERSION`] and a conversion from the old one.

use crate::ping::OneWayDelays;
use crate::rtt::{LatencyUnderLoad, ProbeMethod};
use crate::schema::leaf_schema;
use crate::{Direction, Figures, HostEnv, PeerKind, SocketInForce, TestKind, TestSpec};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::net::IpAddr;
use std::time::SystemTime;

/// Version of the result document layout.
pub const RESULT_FORMAT_VERSION: u32 = 3;

/// A wall-clock instant written as RFC 3339 (UTC, microseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Timestamp(pub SystemTime);

impl Timestamp {
    /// Now, to the microsecond: the precision a result is written with,
    /// so that a result read back equals the one written.
    pub fn now() -> Self {
        let now = SystemTime::now();
        let sub_us = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos() % 1000);
        Self(now - std::time::Duration::from_nanos(u64::from(sub_us)))
    }
}

leaf_schema!(Timestamp, "Timestamp", {
    "type": "string",
    "format": "date-time",
    "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?Z$",
    "description": "A wall-clock instant written as RFC 3339 (UTC, microseconds)."
});

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&humantime::format_rfc3339_micros(self.0))
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        humantime::parse_rfc3339_weak(&s)
            .map(Timestamp)
            .map_err(serde::de::Error::custom)
    }
}

/// A result's identity: the archive's key, unique across agents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ResultId(pub uuid::Uuid);

leaf_schema!(ResultId, "ResultId", {
    "type": "string",
    "pattern": "^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$",
    "description": "A result's identity: the archive's key, unique across agents. A UUID: random (v4), or for a document upgraded from an older format derived from its bytes (v5), so loading the same old document twice gives the same id."
});

impl ResultId {
    /// A fresh random id (UUID v4).
    pub fn random() -> Self {
        Self(uuid::Uuid::new_v4())
    }

    /// The id an upgraded document gets: derived from its bytes (UUID
    /// v5), so loading the same old document twice gives the same id.
    pub fn of_document(bytes: &[u8]) -> Self {
        const SONDE_RESULTS: uuid::Uuid =
            uuid::Uuid::from_u128(0x5d0e_7e57_0000_4000_8000_736f_6e64_6531);
        Self(uuid::Uuid::new_v5(&SONDE_RESULTS, bytes))
    }
}

impl std::str::FromStr for ResultId {
    type Err = uuid::Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        uuid::Uuid::parse_str(s).map(Self)
    }
}

impl std::fmt::Display for ResultId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// Both ends of a test, so that a figure can be explained later.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TestEnv {
    pub client: HostEnv,
    /// The far end as it described itself (an iperf3 server or a ping
    /// target does not: then only what is known of its software).
    pub server: HostEnv,
    /// The protocol the server spoke (tcp, udp): `sonde` or `iperf3`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<PeerKind>,
    /// The address this host sent from (the test's socket's own; absent
    /// where not known, as in documents from before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<IpAddr>,
    /// The address the test went to (ping's probes, tcp's and udp's
    /// server, http's peer): what identifies the path with `source`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<IpAddr>,
    /// How probes travelled (ping).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<ProbeMethod>,
}

impl TestEnv {
    /// The two ends of a tcp or udp test against a server that spoke
    /// `peer`'s protocol.
    pub fn between(client: HostEnv, server: HostEnv, peer: PeerKind) -> Self {
        Self {
            client,
            server,
            peer: Some(peer),
            source: None,
            target: None,
            method: None,
        }
    }

    /// Records the path's two ends: this host's address and the one the
    /// test went to.
    pub fn set_ends(&mut self, source: IpAddr, target: IpAddr) {
        self.source = Some(source);
        self.target = Some(target);
    }
}

/// Whether an interval that ends `end_s` into the test lies inside a
/// warm-up of `omit` (to the millisecond: a window cut at the omit point
/// a little late still belongs to it).
pub fn in_warm_up(end_s: f64, omit: std::time::Duration) -> bool {
    end_s <= omit.as_secs_f64() + 1e-3
}

/// One reporting interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Interval {
    #[schemars(range(min = 0))]
    pub start_s: f64,
    #[schemars(range(min = 0))]
    pub end_s: f64,
    /// Inside the warm-up (`-O`): shown, not counted in the summary.
    pub omitted: bool,
    /// The request size of the ping series this interval belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 65000))]
    pub size_bytes: Option<u32>,
    /// Each stream (tcp, udp), with `stream` and `direction` set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1))]
    pub streams: Vec<Figures>,
    /// Each direction's streams added up, with `direction` set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1, max = 2))]
    pub sums: Vec<Figures>,
    /// Round trips (ping).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_trip: Option<Figures>,
}

impl Interval {
    /// The sum of one direction, if that direction ran.
    pub fn sum(&self, d: Direction) -> Option<&Figures> {
        self.sums.iter().find(|s| s.direction == Some(d))
    }
}

/// The whole test: a section per direction measured, and totals where
/// they mean something.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
pub struct Summary {
    /// Client to server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forward: Option<Figures>,
    /// Server to client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse: Option<Figures>,
    /// Both directions added up (tcp).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<Figures>,
    /// Every round trip of every series (ping).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_trip: Option<Figures>,
    /// RTT to the server idle and under this test's load (`--latency`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencyUnderLoad>,
}

impl Summary {
    /// The section of one direction (bidir: neither; use forward/reverse).
    pub fn direction(&self, d: Direction) -> Option<&Figures> {
        match d {
            Direction::Forward => self.forward.as_ref(),
            Direction::Reverse => self.reverse.as_ref(),
            Direction::Bidir => None,
        }
    }

    /// The headline, or for a bidirectional test without a total (UDP)
    /// both directions together: throughput added, loss over all packets
    /// sent both ways, the worse jitter. What a result is indexed and
    /// listed by.
    pub fn overall(&self) -> Option<Figures> {
        if let Some(h) = self.headline() {
            return Some(h.clone());
        }
        let (f, b) = (self.forward.as_ref()?, self.reverse.as_ref()?);
        let add = |x: Option<u64>, y: Option<u64>| Some(x? + y?);
        let sent = add(f.sent_packets, b.sent_packets);
        let lost = add(f.lost_packets, b.lost_packets);
        let loss_pct = match (sent, lost) {
            (Some(s), Some(l)) if s > 0 => Some(100.0 * l as f64 / s as f64),
            _ => None,
        };
        Some(Figures {
            direction: Some(Direction::Bidir),
            throughput_bps: add(f.throughput_bps, b.throughput_bps),
            loss_pct,
            pdr_pct: loss_pct.map(|l| 100.0 - l),
            jitter_ms: match (f.jitter_ms, b.jitter_ms) {
                (Some(x), Some(y)) => Some(x.max(y)),
                (x, y) => x.or(y),
            },
            ..Figures::default()
        })
    }

    /// Each direction's own figures, named as the archive and the reports
    /// name them: `forward` and `reverse` (each that ran: both for a
    /// bidirectional test), or else `round_trip` (a ping, HTTP), or else
    /// `total`. Never a sum of two directions: a bidirectional test is
    /// two rows in every table and two series in every chart.
    pub fn by_direction(&self) -> Vec<(&'static str, &Figures)> {
        let mut out = Vec::new();
        if let Some(f) = &self.forward {
            out.push(("forward", f));
        }
        if let Some(r) = &self.reverse {
            out.push(("reverse", r));
        }
        if out.is_empty() {
            if let Some(rt) = &self.round_trip {
                out.push(("round_trip", rt));
            } else if let Some(t) = &self.total {
                out.push(("total", t));
            }
        }
        out
    }

    /// The headline figures: the total, or the one direction that ran, or
    /// the round trips.
    pub fn headline(&self) -> Option<&Figures> {
        self.total
            .as_ref()
            .or(self.round_trip.as_ref())
            .or(match (&self.forward, &self.reverse) {
                (Some(f), None) => Some(f),
                (None, Some(r)) => Some(r),
                _ => None,
            })
    }
}

/// One stream over the whole test, with the sockets as the kernel set
/// them on each end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StreamResult {
    #[serde(flatten)]
    pub figures: Figures,
    pub client_socket: SocketInForce,
    pub server_socket: SocketInForce,
}

/// One request size's series of a ping test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PingSeries {
    pub size_bytes: u32,
    #[serde(flatten)]
    pub figures: Figures,
    /// STAMP: the delay each way and the reflector's dwell time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub one_way: Option<OneWayDelays>,
    /// STAMP with `cos`: the DSCP each way (RFC 8972's Class of Service).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cos: Option<crate::ping::ClassOfServiceSeen>,
    /// Where the send and receive times of the series came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamps: Option<crate::ping::TimestampsUsed>,
}

/// The result of one test: what `-J` prints and the archive stores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TestResult {
    pub id: ResultId,
    #[schemars(extend("const" = 3))]
    pub format_version: u32,
    pub sonde_version: String,
    pub test: TestKind,
    #[schemars(length(max = 200))]
    pub title: Option<String>,
    /// What was asked, as asked.
    pub spec: TestSpec,
    pub env: TestEnv,
    pub start: Timestamp,
    /// Measured time (warm-up excluded): the spec's time, or less if
    /// interrupted.
    #[schemars(range(min = 0))]
    pub duration_s: f64,
    /// The test was stopped before its planned end (Ctrl-C, an abort).
    pub interrupted: bool,
    pub intervals: Vec<Interval>,
    pub summary: Summary,
    /// Each stream over the whole test (tcp, udp).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub streams: Vec<StreamResult>,
    /// Each request size's series (ping).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<PingSeries>,
    /// An iperf3 server's own output, as it sent it when asked
    /// (`--get-server-output`): its text, or its JSON document as text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_output: Option<String>,
    /// An HTTP benchmark's figures (http).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<crate::HttpFigures>,
    /// A path trace's hops (trace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<crate::TraceFigures>,
}

impl TestResult {
    /// A result's figures in a few words (`8.10 Mbit/s`, `1.00 Mbit/s, PDR
    /// 100.00 %`, `loss 0.000 %, rtt p50 94.169 ms`): a line of a listing or of
    /// a campaign's progress. A
    /// bidirectional test's directions each on their own (`forward 10.00
    /// Mbit/s; reverse 5.00 Mbit/s`), never added up.
    pub fn brief(&self) -> String {
        let directions = self.summary.by_direction();
        let named = directions.len() > 1;
        directions
            .into_iter()
            .map(|(d, h)| {
                let mut figures = Vec::new();
                if let Some(t) = h.throughput_bps {
                    figures.push(format!("{:.2} Mbit/s", t as f64 / 1e6));
                }
                // UDP's figure is the studies' PDR (loss is 100 − PDR); a
                // ping's its loss.
                match (h.pdr_pct, h.loss_pct) {
                    (Some(p), _) => figures.push(format!("PDR {p:.2} %")),
                    (None, Some(l)) => figures.push(format!("loss {l:.3} %")),
                    (None, None) => {}
                }
                if let Some(rtt) = &h.rtt_ms {
                    figures.push(format!("rtt p50 {:.3} ms", rtt.p50));
                }
                let figures = figures.join(", ");
                if named {
                    format!("{d} {figures}")
                } else {
                    figures
                }
            })
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// An empty result of `spec`, to be filled by an assembly.
    pub fn new(spec: TestSpec, env: TestEnv, start: Timestamp) -> Self {
        Self {
            id: ResultId::random(),
            format_version: RESULT_FORMAT_VERSION,
            sonde_version: crate::SONDE_VERSION.to_string(),
            test: spec.kind(),
            title: spec.title().map(str::to_string),
            spec,
            env,
            start,
            duration_s: 0.0,
            interrupted: false,
            intervals: Vec::new(),
            summary: Summary::default(),
            streams: Vec::new(),
            series: Vec::new(),
            server_output: None,
            http: None,
            trace: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fig(bps: u64) -> Figures {
        Figures {
            throughput_bps: Some(bps),
            ..Figures::default()
        }
    }

    #[test]
    fn a_bidirectional_test_is_two_rows_and_never_their_sum() {
        let s = Summary {
            forward: Some(fig(10_000_000)),
            reverse: Some(fig(5_000_000)),
            total: Some(fig(15_000_000)),
            ..Summary::default()
        };
        let rows: Vec<(&str, Option<u64>)> = s
            .by_direction()
            .into_iter()
            .map(|(d, f)| (d, f.throughput_bps))
            .collect();
        assert_eq!(
            rows,
            [("forward", Some(10_000_000)), ("reverse", Some(5_000_000))]
        );
        let ping = Summary {
            round_trip: Some(fig(0)),
            ..Summary::default()
        };
        assert_eq!(ping.by_direction()[0].0, "round_trip");
        let only_total = Summary {
            total: Some(fig(1)),
            ..Summary::default()
        };
        assert_eq!(only_total.by_direction()[0].0, "total");
        assert!(Summary::default().by_direction().is_empty());
    }
}
