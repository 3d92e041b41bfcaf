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
    format!(
        "trace to {} ({target}), {} hops max, {} {each} each, {probes}, DSCP {}\n",
        spec.host,
        spec.max_hops,
        spec.queries,
        dscp_name(spec.dscp_value())
    )
}

/// A hop's line; `changed_from`: the DSCP sent, when this is the first
/// hop whose quotation shows another.
pub fn hop_line(h: &TraceHop, changed_from: Option<u8>) -> String {
    let mut line = format!("{:>2} ", h.ttl);
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
