//! A trace as text: the header, a line per hop as it is complete (each
//! answering address once, each probe's time, `*` for none, the class the
//! probe arrived with there, and the hop where it changed), then the path
//! MTU and whether the target answered.

use sonde_model::{Dscp, TestResult, TraceHop, TraceProto, TraceSpec};
use std::fmt::Write;
use std::net::IpAddr;

/// A DSCP by its name (`EF`), or its number where it has none.
pub fn dscp_name(v: u8) -> String {
    Dscp::new(v).map_or_else(
        || v.to_string(),
        |d| d.name().map_or(v.to_string(), str::to_string),
    )
}

/// "trace to HOST (ADDR), 30 hops max, 3 probes each, ICMPv6 echo, DSCP CS0".
pub fn header(spec: &TraceSpec, target: IpAddr) -> String {
    let probes = match (spec.proto, target.is_ipv6()) {
        (TraceProto::Udp, _) => "UDP to port 33434".to_string(),
        (TraceProto::Tcp, _) => format!("TCP SYN to port {}", spec.port),
        (TraceProto::Icmp, true) => "ICMPv6 echo".to_string(),
        (TraceProto::Icmp, false) => "ICMP echo".to_string(),
    };
    let each = if spec.queries == 1 { "probe" } else { "probes" };
    let per_hop = if spec.multipath {
        format!(
            "multipath: each hop's interfaces found with {} % confidence (at least {} {each} each)",
            spec.confidence.unwrap_or(95.0),
            spec.queries
        )
    } else {
        format!("{} {each} each", spec.queries)
    };
    format!(
        "trace to {} ({target}), {} hops max, {per_hop}, {probes}, DSCP {}\n",
        spec.host,
        spec.max_hops,
        dscp_name(spec.dscp_value())
    )
}

/// A multipath hop's probes: each interface once, with how many flows
/// reached it and their median round trip, the most flows first; then the
/// flows no one answered.
fn interfaces(h: &TraceHop) -> String {
    let mut by: Vec<(IpAddr, Vec<f64>)> = Vec::new();
    for p in h.probes.iter().flatten() {
        match by.iter_mut().find(|(a, _)| *a == p.from) {
            Some((_, rtts)) => rtts.push(p.rtt_ms),
            None => by.push((p.from, vec![p.rtt_ms])),
        }
    }
    by.sort_by_key(|b| std::cmp::Reverse(b.1.len()));
    let mut out = String::new();
    for (a, mut rtts) in by {
        rtts.sort_by(f64::total_cmp);
        let n = rtts.len();
        let each = if n == 1 { "flow" } else { "flows" };
        let _ = write!(out, "  {a} ({n} {each}, {:.3} ms)", rtts[n / 2]);
    }
    let silent = h.probes.iter().filter(|p| p.is_none()).count();
    if silent > 0 {
        let _ = write!(out, "  * ({silent} unanswered)");
    }
    out
}

/// A hop's line; `changed_from`: the DSCP sent, when this is the first
/// hop whose quotation shows another. A multipath trace's hop (its probes
/// carry their flow) lists each interface once.
pub fn hop_line(h: &TraceHop, changed_from: Option<u8>) -> String {
    let mut line = format!("{:>2} ", h.ttl);
    if h.probes.iter().flatten().any(|p| p.flow.is_some()) {
        line.push(' ');
        line += interfaces(h).trim_start();
        return dscp_part(h, changed_from, line);
    }
    let mut last: Option<IpAddr> = None;
    for p in &h.probes {
        match p {
            None => line += " *",
            Some(p) => {
                if last != Some(p.from) {
                    let _ = write!(line, " {}", p.from);
                    last = Some(p.from);
                }
                let _ = write!(line, "  {:.3} ms", p.rtt_ms);
                if let Some(m) = p.mtu {
                    let _ = write!(line, " (MTU {m})");
                }
            }
        }
    }
    dscp_part(h, changed_from, line)
}

/// The MPLS label stacks the hop reported (RFC 4950), each once, as
/// `[MPLS L=16005 TC=5 TTL=1, L=299776 TC=5 TTL=1]`: outermost first.
fn mpls_part(h: &TraceHop) -> String {
    let mut stacks: Vec<&[sonde_model::MplsLabel]> = Vec::new();
    for p in h.probes.iter().flatten().filter(|p| !p.mpls.is_empty()) {
        if !stacks.contains(&p.mpls.as_slice()) {
            stacks.push(&p.mpls);
        }
    }
    let mut out = String::new();
    for stack in stacks {
        let entries: Vec<String> = stack
            .iter()
            .map(|l| format!("L={} TC={} TTL={}", l.label, l.tc, l.ttl))
            .collect();
        let _ = write!(out, "  [MPLS {}]", entries.join(", "));
    }
    out
}

/// The hop's line ended by its MPLS labels, if any, and the class its
/// probes arrived with.
fn dscp_part(h: &TraceHop, changed_from: Option<u8>, mut line: String) -> String {
    line += &mpls_part(h);
    if let Some(d) = h.arrived_dscp() {
        let _ = write!(line, "  {}", dscp_name(d));
        if let Some(sent) = changed_from {
            let _ = write!(
                line,
                "  <- DSCP changed here ({} to {})",
                dscp_name(sent),
                dscp_name(d)
            );
        }
    }
    line.push('\n');
    line
}

/// What follows the hops: where the path got smaller and its MTU, or that
/// the target never answered.
pub fn trace_summary(r: &TestResult) -> String {
    let (Some(t), sonde_model::TestSpec::Trace(spec)) = (&r.trace, &r.spec) else {
        return String::new();
    };
    let mut out = String::new();
    if spec.mtu {
        for s in &t.mtu_steps {
            let hop = s.hop.map(|h| format!(" (hop {h})")).unwrap_or_default();
            let _ = writeln!(
                out,
                "{}{hop}: its next link carries {} bytes",
                s.from, s.mtu
            );
        }
        let _ = match t.path_mtu {
            Some(m) => writeln!(out, "path MTU {m} bytes"),
            None => writeln!(
                out,
                "path MTU not found: no probe from {} bytes down arrived",
                spec.mtu_start
            ),
        };
    }
    if spec.multipath {
        let balanced: Vec<String> = t
            .hops
            .iter()
            .filter_map(|h| {
                let mut seen: Vec<IpAddr> = h.probes.iter().flatten().map(|p| p.from).collect();
                seen.sort();
                seen.dedup();
                (seen.len() > 1).then(|| format!("hop {} ({} interfaces)", h.ttl, seen.len()))
            })
            .collect();
        let _ = if balanced.is_empty() {
            writeln!(
                out,
                "one path: no hop answered from more than one interface"
            )
        } else {
            writeln!(out, "load-balanced at {}", balanced.join(", "))
        };
    }
    if !t.arrived && !r.interrupted {
        let _ = writeln!(
            out,
            "the target did not answer within {} hops",
            spec.max_hops
        );
    }
    out
}

/// The whole trace after the fact (`results show`): the header, every
/// hop, the summary.
pub fn trace_text(r: &TestResult) -> String {
    let (Some(t), sonde_model::TestSpec::Trace(spec)) = (&r.trace, &r.spec) else {
        return String::new();
    };
    let mut out = header(spec, t.target);
    for h in &t.hops {
        let changed = (t.dscp_changed_at == Some(h.ttl)).then_some(t.dscp_sent);
        out += &hop_line(h, changed);
    }
    out + &trace_summary(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_model::{MplsLabel, TraceAnswer, TraceProbe};

    fn probe(from: &str, rtt_ms: f64, flow: Option<u16>) -> Option<TraceProbe> {
        Some(TraceProbe {
            from: from.parse().unwrap(),
            rtt_ms,
            answer: TraceAnswer::TimeExceeded,
            mtu: None,
            dscp: Some(46),
            ecn: None,
            quoted_ttl: None,
            flow_label: None,
            flow,
            mpls: Vec::new(),
        })
    }

    #[test]
    fn a_multipath_hop_lists_each_interface_once_with_its_flows() {
        let h = TraceHop {
            ttl: 2,
            probes: vec![
                probe("2001:db8::3", 0.5, Some(40001)),
                probe("2001:db8::2", 0.2, Some(40002)),
                probe("2001:db8::2", 0.4, Some(40003)),
                None,
                probe("2001:db8::2", 0.3, Some(40005)),
            ],
        };
        assert_eq!(
            hop_line(&h, None),
            " 2  2001:db8::2 (3 flows, 0.300 ms)  2001:db8::3 (1 flow, 0.500 ms)  \
             * (1 unanswered)  EF\n"
        );
        // One flow for the whole trace: each probe in turn, as traceroute.
        let paris = TraceHop {
            ttl: 2,
            probes: vec![probe("2001:db8::2", 0.2, None), None],
        };
        assert_eq!(hop_line(&paris, None), " 2  2001:db8::2  0.200 ms *  EF\n");
    }

    #[test]
    fn a_hop_in_an_mpls_tunnel_shows_its_label_stack_once() {
        let labelled = |label| {
            probe("2001:db8::1", 0.1, None).map(|p| TraceProbe {
                mpls: vec![
                    MplsLabel {
                        label,
                        tc: 5,
                        ttl: 1,
                    },
                    MplsLabel {
                        label: 299_776,
                        tc: 5,
                        ttl: 1,
                    },
                ],
                ..p
            })
        };
        let h = TraceHop {
            ttl: 1,
            probes: vec![labelled(16005), labelled(16005), None],
        };
        assert_eq!(
            hop_line(&h, None),
            " 1  2001:db8::1  0.100 ms  0.100 ms *  \
             [MPLS L=16005 TC=5 TTL=1, L=299776 TC=5 TTL=1]  EF\n"
        );
        // Two stacks (two LSPs under one address): each shown.
        let two = TraceHop {
            ttl: 1,
            probes: vec![labelled(16005), labelled(16006)],
        };
        assert_eq!(hop_line(&two, None).matches("[MPLS").count(), 2);
    }
}
