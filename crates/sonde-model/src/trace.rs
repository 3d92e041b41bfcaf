//! A path trace as a test: [`TraceSpec`] (what `sonde trace` asks, as a
//! flag, a campaign step or a JSON body) and [`TraceFigures`] (the hops
//! it found, each probe with what its ICMP error quoted), and the route
//! two traces of one path are compared by ([`TraceFigures::route`],
//! [`route_change`]).

use crate::spec::{bad, check_host, check_title};
use crate::{Dscp, IpFamily, SpecError};
use serde::{Deserialize, Serialize};
use std::net::IpAddr;
use std::time::Duration;

/// What a trace's probes are.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum TraceProto {
    /// ICMP or ICMPv6 echo requests.
    #[default]
    Icmp,
    /// UDP to port 33434, every probe one flow (Paris traceroute's rule).
    Udp,
    /// TCP SYNs to `port`.
    Tcp,
}

impl TraceProto {
    pub fn name(self) -> &'static str {
        match self {
            TraceProto::Icmp => "icmp",
            TraceProto::Udp => "udp",
            TraceProto::Tcp => "tcp",
        }
    }
}

/// A trace test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct TraceSpec {
    #[schemars(length(min = 1, max = 253), regex(pattern = r"^[^\s\x00-\x1f\x7f]+$"))]
    pub host: String,
    pub proto: TraceProto,
    /// The port TCP SYNs go to (`proto = tcp`).
    #[schemars(range(min = 1))]
    pub port: u16,
    pub family: IpFamily,
    /// The first TTL / hop limit probed.
    #[schemars(range(min = 1))]
    pub first_hop: u8,
    /// The last TTL / hop limit probed; the trace ends sooner at the
    /// target.
    #[schemars(range(min = 1))]
    pub max_hops: u8,
    /// Probes per hop.
    #[schemars(range(min = 1, max = 10))]
    pub queries: u8,
    /// How long a probe waits for its answer.
    #[schemars(with = "f64")]
    #[serde(with = "crate::serde_secs", rename = "wait_s")]
    #[schemars(range(max = 10), extend("exclusiveMinimum" = 0))]
    pub wait: Duration,
    #[schemars(range(min = 0, max = 63))]
    pub dscp: Option<Dscp>,
    /// Also find the path MTU (tracepath's way).
    pub mtu: bool,
    /// The first size the MTU search tries, in bytes of IP packet.
    #[schemars(range(min = 68, max = 65535))]
    pub mtu_start: u32,
    /// Enumerate the load-balanced paths (MDA): each hop probed by as many
    /// flows (UDP source ports) as it takes to find every interface there
    /// with 95 % confidence, instead of one flow. UDP probes only.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub multipath: bool,
    /// With `multipath`: the confidence, in per cent, that a hop has no
    /// interface its flows did not find (default 95).
    #[serde(rename = "confidence_pct", skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 50, max = 99.99))]
    pub confidence: Option<f64>,
    #[schemars(length(max = 200))]
    pub title: Option<String>,
}

impl Default for TraceSpec {
    fn default() -> Self {
        Self {
            host: String::new(),
            proto: TraceProto::Icmp,
            port: 80,
            family: IpFamily::Any,
            first_hop: 1,
            max_hops: 30,
            queries: 3,
            wait: Duration::from_secs(1),
            dscp: None,
            mtu: false,
            mtu_start: 1500,
            multipath: false,
            confidence: None,
            title: None,
        }
    }
}

/// The longest a probe may wait: a trace of 255 hops of 10 probes each
/// stays bounded.
pub const MAX_TRACE_WAIT: Duration = Duration::from_secs(10);

impl TraceSpec {
    pub fn validate(&self) -> Result<(), SpecError> {
        check_host(&self.host)?;
        check_title(self.title.as_deref())?;
        if self.first_hop == 0 {
            return Err(bad("first_hop", "TTLs start at 1"));
        }
        if self.max_hops == 0 {
            return Err(bad("max_hops", "at least 1 hop"));
        }
        if self.first_hop > self.max_hops {
            return Err(bad(
                "first_hop",
                format!(
                    "{} is beyond the last hop probed ({})",
                    self.first_hop, self.max_hops
                ),
            ));
        }
        if !(1..=10).contains(&self.queries) {
            return Err(bad("queries", "1 to 10 probes per hop"));
        }
        if self.wait.is_zero() || self.wait > MAX_TRACE_WAIT {
            return Err(bad("wait_s", "more than 0 and at most 10 s"));
        }
        if self.port == 0 {
            return Err(bad("port", "1 to 65535"));
        }
        if !(68..=65535).contains(&self.mtu_start) {
            return Err(bad("mtu_start", "68 to 65535 bytes"));
        }
        if let Some(c) = self.confidence {
            if !self.multipath {
                return Err(bad("confidence_pct", "only with multipath"));
            }
            if !(50.0..=99.99).contains(&c) {
                return Err(bad("confidence_pct", format!("{c}: 50 to 99.99 %")));
            }
        }
        if self.multipath && self.proto != TraceProto::Udp {
            return Err(bad(
                "multipath",
                format!(
                    "needs proto = \"udp\": the flows are UDP source ports (not {})",
                    self.proto.name()
                ),
            ));
        }
        Ok(())
    }

    /// The chance a multipath trace accepts of missing an interface at a
    /// hop: 1 − the confidence (5 % by default).
    pub fn miss_chance(&self) -> f64 {
        1.0 - self.confidence.unwrap_or(95.0) / 100.0
    }

    /// The DSCP the probes carry (0 unless asked).
    pub fn dscp_value(&self) -> u8 {
        self.dscp.map_or(0, Dscp::value)
    }
}

/// How a probe was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TraceAnswer {
    /// The target, to an echo request.
    EchoReply,
    /// The target, to a UDP probe.
    PortUnreachable,
    /// The target, to a TCP SYN: open.
    SynAck,
    /// The target, to a TCP SYN: closed.
    Rst,
    /// A hop on the way.
    TimeExceeded,
    /// A hop that could not forward it.
    Unreachable,
    /// A hop whose next link is smaller (with `mtu`).
    TooBig,
}

/// One probe's answer, and what the answering hop quoted of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceProbe {
    pub from: IpAddr,
    #[schemars(range(min = 0))]
    pub rtt_ms: f64,
    pub answer: TraceAnswer,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    /// The DSCP and ECN the probe arrived with at this hop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dscp: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 3))]
    pub ecn: Option<u8>,
    /// The TTL / hop limit it had left there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quoted_ttl: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 1048575))]
    pub flow_label: Option<u32>,
    /// The flow that carried it (a multipath trace's: its UDP source
    /// port); none where every probe is one flow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub flow: Option<u16>,
    /// The MPLS label stack the probe carried when its TTL ran out at
    /// this hop, outermost first, as the hop reported it in an ICMP
    /// extension (RFC 4884, RFC 4950); empty for a hop that says none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1))]
    pub mpls: Vec<MplsLabel>,
}

/// One MPLS label stack entry of an ICMP extension (RFC 4950 §7): the
/// label, its traffic class (the former EXP bits) and its TTL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MplsLabel {
    #[schemars(range(max = 1048575))]
    pub label: u32,
    #[schemars(range(max = 7))]
    pub tc: u8,
    pub ttl: u8,
}

/// One TTL: a probe per query, `None` for no answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceHop {
    #[schemars(range(min = 1))]
    pub ttl: u8,
    pub probes: Vec<Option<TraceProbe>>,
}

impl TraceHop {
    /// Whether the target itself answered here.
    pub fn arrived(&self) -> bool {
        self.probes.iter().flatten().any(|p| {
            matches!(
                p.answer,
                TraceAnswer::EchoReply
                    | TraceAnswer::PortUnreachable
                    | TraceAnswer::SynAck
                    | TraceAnswer::Rst
            )
        })
    }

    /// The DSCP the hop's quotations show (the first that has one).
    pub fn arrived_dscp(&self) -> Option<u8> {
        self.probes.iter().flatten().find_map(|p| p.dscp)
    }

    /// The address that answered most of the hop's probes (the first of
    /// them on a tie); `None` when none answered.
    pub fn address(&self) -> Option<IpAddr> {
        let answered: Vec<IpAddr> = self.probes.iter().flatten().map(|p| p.from).collect();
        answered.iter().copied().max_by_key(|a| {
            let n = answered.iter().filter(|b| *b == a).count();
            let first = answered.iter().position(|b| b == a).unwrap_or(0);
            (n, usize::MAX - first)
        })
    }
}

/// A hop that said the path is smaller past it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceMtuStep {
    pub from: IpAddr,
    /// Its TTL in the trace, when it answered there too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub hop: Option<u8>,
    pub mtu: u32,
}

/// What a trace found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TraceFigures {
    pub target: IpAddr,
    pub dscp_sent: u8,
    pub hops: Vec<TraceHop>,
    /// Whether the target answered.
    pub arrived: bool,
    /// The first hop whose quotation shows another DSCP than was sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub dscp_changed_at: Option<u8>,
    /// With `mtu`: the largest packet that arrived, and the hops that
    /// said the path is smaller past them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 68))]
    pub path_mtu: Option<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mtu_steps: Vec<TraceMtuStep>,
}

impl TraceFigures {
    /// The figures of a trace toward `target` of one probe a hop, each
    /// answered from `route` in turn (`None`: no answer), the last hop
    /// the target's echo reply when it is `target`: a trace made from a
    /// known route (the archive's, the alerts' and the API's tests).
    pub fn of_route(target: IpAddr, route: &[Option<IpAddr>]) -> Self {
        let hops: Vec<TraceHop> = route
            .iter()
            .zip(1u8..)
            .map(|(from, ttl)| TraceHop {
                ttl,
                probes: vec![from.map(|a| TraceProbe {
                    from: a,
                    rtt_ms: f64::from(ttl),
                    answer: if a == target {
                        TraceAnswer::EchoReply
                    } else {
                        TraceAnswer::TimeExceeded
                    },
                    mtu: None,
                    dscp: None,
                    ecn: None,
                    quoted_ttl: None,
                    flow_label: None,
                    flow: None,
                    mpls: Vec::new(),
                })],
            })
            .collect();
        Self {
            target,
            dscp_sent: 0,
            arrived: hops.last().is_some_and(TraceHop::arrived),
            hops,
            dscp_changed_at: None,
            path_mtu: None,
            mtu_steps: Vec::new(),
        }
    }

    /// The route: each hop's address in TTL order, `None` for a hop that
    /// did not answer.
    pub fn route(&self) -> Vec<Option<IpAddr>> {
        self.hops.iter().map(TraceHop::address).collect()
    }

    /// The round-trip times of the hop at `ttl`, in probe order.
    pub fn rtts_ms(&self, ttl: u8) -> Vec<f64> {
        self.hops
            .iter()
            .filter(|h| h.ttl == ttl)
            .flat_map(|h| h.probes.iter().flatten().map(|p| p.rtt_ms))
            .collect()
    }
}

/// How one route differs from the one before it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RouteChange {
    /// The first hop (TTL) where the two differ.
    pub at_hop: u8,
    /// The hops before, and after, each `None` where no hop answered.
    pub before: Vec<Option<IpAddr>>,
    pub after: Vec<Option<IpAddr>>,
}

/// Whether `after` is another route than `before`: a hop that answered
/// in both with different addresses, or a different number of hops to a
/// target both reached. A hop that did not answer in either is a
/// wildcard (a lost probe or a silent router is not a path change); so
/// is a route cut short where one trace did not arrive.
pub fn route_change(
    before: &[Option<IpAddr>],
    before_arrived: bool,
    after: &[Option<IpAddr>],
    after_arrived: bool,
    first_hop: u8,
) -> Option<RouteChange> {
    let change = |k: usize| RouteChange {
        at_hop: first_hop.saturating_add(u8::try_from(k).unwrap_or(u8::MAX)),
        before: before.to_vec(),
        after: after.to_vec(),
    };
    for (k, (a, b)) in before.iter().zip(after).enumerate() {
        if let (Some(a), Some(b)) = (a, b) {
            if a != b {
                return Some(change(k));
            }
        }
    }
    if before_arrived && after_arrived && before.len() != after.len() {
        return Some(change(before.len().min(after.len()).saturating_sub(1)));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hop(ttl: u8, from: &[Option<&str>]) -> TraceHop {
        TraceHop {
            ttl,
            probes: from
                .iter()
                .map(|f| {
                    f.map(|a| TraceProbe {
                        from: a.parse().unwrap(),
                        rtt_ms: 1.0,
                        answer: TraceAnswer::TimeExceeded,
                        mtu: None,
                        dscp: None,
                        ecn: None,
                        quoted_ttl: None,
                        flow_label: None,
                        flow: None,
                        mpls: Vec::new(),
                    })
                })
                .collect(),
        }
    }

    fn r(addrs: &[Option<&str>]) -> Vec<Option<IpAddr>> {
        addrs
            .iter()
            .map(|a| a.map(|a| a.parse().unwrap()))
            .collect()
    }

    #[test]
    fn a_hop_is_the_address_most_of_its_probes_came_from() {
        assert_eq!(
            hop(1, &[Some("::1"), Some("::2"), Some("::2")]).address(),
            Some("::2".parse().unwrap())
        );
        assert_eq!(
            hop(1, &[None, Some("::3"), Some("::4")]).address(),
            Some("::3".parse().unwrap()),
            "the first on a tie"
        );
        assert_eq!(hop(1, &[None, None]).address(), None);
    }

    #[test]
    fn routes_differ_where_both_answered_differently_or_in_length() {
        let a = r(&[Some("::1"), Some("::2"), Some("::9")]);
        assert_eq!(route_change(&a, true, &a, true, 1), None);
        // A silent hop, in either trace, is a wildcard.
        let silent = r(&[Some("::1"), None, Some("::9")]);
        assert_eq!(route_change(&a, true, &silent, true, 1), None);
        assert_eq!(route_change(&silent, true, &a, true, 1), None);
        // Hop 2 answered from another router.
        let moved = r(&[Some("::1"), Some("::3"), Some("::9")]);
        let c = route_change(&a, true, &moved, true, 1).unwrap();
        assert_eq!((c.at_hop, c.after[1]), (2, Some("::3".parse().unwrap())));
        // The first TTL probed numbers the hops.
        assert_eq!(route_change(&a, true, &moved, true, 3).unwrap().at_hop, 4);
        // One hop more to the same target.
        let longer = r(&[Some("::1"), Some("::2"), Some("::5"), Some("::9")]);
        assert_eq!(route_change(&a, true, &longer, true, 1).unwrap().at_hop, 3);
        // A trace that did not arrive is cut short, not changed.
        let cut = r(&[Some("::1"), Some("::2")]);
        assert_eq!(route_change(&a, true, &cut, false, 1), None);
    }

    #[test]
    fn a_spec_is_checked_field_by_field() {
        let ok = TraceSpec {
            host: "::1".into(),
            ..TraceSpec::default()
        };
        ok.validate().unwrap();
        for (bad_spec, field) in [
            (
                TraceSpec {
                    first_hop: 5,
                    max_hops: 4,
                    ..ok.clone()
                },
                "first_hop",
            ),
            (
                TraceSpec {
                    queries: 11,
                    ..ok.clone()
                },
                "queries",
            ),
            (
                TraceSpec {
                    wait: Duration::from_secs(11),
                    ..ok.clone()
                },
                "wait_s",
            ),
            (
                TraceSpec {
                    mtu_start: 20,
                    ..ok.clone()
                },
                "mtu_start",
            ),
            (
                TraceSpec {
                    multipath: true,
                    ..ok.clone()
                },
                "multipath: needs proto = \"udp\"",
            ),
            (
                TraceSpec {
                    confidence: Some(99.0),
                    ..ok.clone()
                },
                "confidence_pct: only with multipath",
            ),
            (
                TraceSpec {
                    proto: TraceProto::Udp,
                    multipath: true,
                    confidence: Some(100.0),
                    ..ok.clone()
                },
                "confidence_pct",
            ),
        ] {
            let e = bad_spec.validate().unwrap_err();
            assert!(e.to_string().contains(field), "{e}");
        }
        let from_toml: TraceSpec =
            toml::from_str("host = \"::1\"\nproto = \"tcp\"\nport = 443\nwait_s = 0.5").unwrap();
        assert_eq!(
            (from_toml.proto, from_toml.port, from_toml.wait),
            (TraceProto::Tcp, 443, Duration::from_millis(500))
        );
    }
}
