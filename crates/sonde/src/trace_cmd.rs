//! `sonde trace HOST`: the path hop by hop over ICMP / ICMPv6 echo, each
//! hop with its round-trip times and the DSCP and ECN the probe arrived
//! with there, as the hop's ICMP error quoted it; the hop where the DSCP
//! changed is named (docs/trace.md).

use crate::cli::Failure;
use crate::run_args::{duration, family};
use anyhow::anyhow;
use clap::Args;
use serde::Serialize;
use sonde_engine::trace::answer::AnswerKind;
use sonde_engine::trace::{Hop, ProbeKind, TraceOptions};
use sonde_model::Dscp;
use std::io::Write;
use std::net::IpAddr;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct TraceArgs {
    /// The host to trace toward (name or address).
    pub host: String,
    /// The first TTL / hop limit probed.
    #[arg(short = 'f', long = "first-hop", default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=255))]
    pub first_hop: u8,
    /// The last TTL / hop limit probed (the trace ends sooner at the
    /// target).
    #[arg(short = 'm', long = "max-hops", default_value_t = 30, value_parser = clap::value_parser!(u8).range(1..=255))]
    pub max_hops: u8,
    /// Probes per hop.
    #[arg(short = 'q', long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(1..=10))]
    pub queries: u8,
    /// How long a probe waits for its answer.
    #[arg(short = 'w', long, default_value = "1s", value_parser = duration)]
    pub wait: Duration,
    /// DSCP of the probes (name or number): each hop shows the class the
    /// probe arrived with, and the hop that changed it is named.
    #[arg(short = 'S', long)]
    pub dscp: Option<Dscp>,
    /// icmp (echo requests), udp (to port 33434, Paris traceroute's:
    /// every probe one flow, told apart by its checksum) or tcp (SYNs to
    /// --port, told apart by their sequence numbers).
    #[arg(long, default_value = "icmp", value_parser = ["icmp", "udp", "tcp"])]
    pub proto: String,
    /// With --proto tcp: the port the SYNs go to.
    #[arg(short = 'p', long, default_value_t = 80)]
    pub port: u16,
    /// IPv4 only.
    #[arg(short = '4', long = "ipv4", conflicts_with = "ipv6")]
    pub ipv4: bool,
    /// IPv6 only.
    #[arg(short = '6', long = "ipv6")]
    pub ipv6: bool,
    /// Also find the path MTU, tracepath's way: whole packets of
    /// --mtu-start bytes, each hop's Packet Too Big / Fragmentation Needed
    /// lowering the size, until one arrives.
    #[arg(long)]
    pub mtu: bool,
    /// The first size --mtu tries (bytes of IP packet).
    #[arg(long, default_value_t = 1500, value_parser = clap::value_parser!(u32).range(68..=65535))]
    pub mtu_start: u32,
    /// Print one JSON document.
    #[arg(short = 'J', long)]
    pub json: bool,
}

/// A hop that said the path is smaller past it.
#[derive(Debug, Serialize)]
struct MtuOut {
    from: IpAddr,
    /// Its TTL in the trace, when it answered there too.
    #[serde(skip_serializing_if = "Option::is_none")]
    hop: Option<u8>,
    mtu: u32,
}

/// One probe, as printed and in JSON.
#[derive(Debug, Serialize)]
struct ProbeOut {
    from: IpAddr,
    rtt_ms: f64,
    /// `echo_reply`, `port_unreachable` (the target, to a UDP probe),
    /// `syn_ack` or `rst` (the target, to a TCP probe), `time_exceeded`,
    /// `unreachable`, `too_big`.
    answer: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    mtu: Option<u32>,
    /// The DSCP and ECN the probe arrived with at this hop (its quotation).
    #[serde(skip_serializing_if = "Option::is_none")]
    dscp: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ecn: Option<u8>,
    /// The TTL / hop limit it had left there.
    #[serde(skip_serializing_if = "Option::is_none")]
    quoted_ttl: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    flow_label: Option<u32>,
}

#[derive(Debug, Serialize)]
struct HopOut {
    ttl: u8,
    /// One per probe: `null` for no answer.
    probes: Vec<Option<ProbeOut>>,
}

#[derive(Debug, Serialize)]
struct TraceOut {
    host: String,
    target: IpAddr,
    dscp_sent: u8,
    hops: Vec<HopOut>,
    /// Whether the target answered.
    arrived: bool,
    /// The first hop whose quotation shows another DSCP than was sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    dscp_changed_at: Option<u8>,
    /// With --mtu: the path MTU (the largest packet that arrived), and
    /// the hops that said the path is smaller past them.
    #[serde(skip_serializing_if = "Option::is_none")]
    path_mtu: Option<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    mtu_steps: Vec<MtuOut>,
}

fn hop_out(h: &Hop) -> HopOut {
    HopOut {
        ttl: h.ttl,
        probes: h
            .probes
            .iter()
            .map(|p| {
                p.as_ref().map(|p| ProbeOut {
                    from: p.from,
                    rtt_ms: p.rtt.as_secs_f64() * 1e3,
                    answer: match p.kind {
                        AnswerKind::EchoReply => "echo_reply",
                        AnswerKind::PortUnreachable => "port_unreachable",
                        AnswerKind::TcpReply { open: true } => "syn_ack",
                        AnswerKind::TcpReply { open: false } => "rst",
                        AnswerKind::TimeExceeded => "time_exceeded",
                        AnswerKind::Unreachable(_) => "unreachable",
                        AnswerKind::TooBig(_) => "too_big",
                    },
                    mtu: match p.kind {
                        AnswerKind::TooBig(m) => Some(m),
                        _ => None,
                    },
                    dscp: p.quoted.map(|q| q.tos >> 2),
                    ecn: p.quoted.map(|q| q.tos & 3),
                    quoted_ttl: p.quoted.map(|q| q.ttl),
                    flow_label: p.quoted.and_then(|q| q.flow_label),
                })
            })
            .collect(),
    }
}

/// The DSCP a hop's quotations show (the first that has one).
fn arrived_dscp(h: &HopOut) -> Option<u8> {
    h.probes.iter().flatten().find_map(|p| p.dscp)
}

fn dscp_name(v: u8) -> String {
    Dscp::new(v).map_or_else(
        || v.to_string(),
        |d| d.name().map_or(v.to_string(), str::to_string),
    )
}

/// A hop's line: its TTL, each answering address once, each probe's time
/// (`*` for none), the class it arrived with.
fn hop_line(h: &HopOut, changed: bool, sent: u8) -> String {
    let mut line = format!("{:>2} ", h.ttl);
    let mut last: Option<IpAddr> = None;
    for p in &h.probes {
        match p {
            None => line += " *",
            Some(p) => {
                if last != Some(p.from) {
                    line += &format!(" {}", p.from);
                    last = Some(p.from);
                }
                line += &format!("  {:.3} ms", p.rtt_ms);
                if let Some(m) = p.mtu {
                    line += &format!(" (MTU {m})");
                }
            }
        }
    }
    if let Some(d) = arrived_dscp(h) {
        line += &format!("  {}", dscp_name(d));
        if changed {
            line += &format!(
                "  <- DSCP changed here ({} to {})",
                dscp_name(sent),
                dscp_name(d)
            );
        }
    }
    line
}

pub fn run(a: TraceArgs) -> Result<(), Failure> {
    if a.first_hop > a.max_hops {
        return Err(Failure::Usage(anyhow!(
            "--first-hop {} is beyond --max-hops {}",
            a.first_hop,
            a.max_hops
        )));
    }
    let fam = family(a.ipv4, a.ipv6);
    let target = sonde_engine::connect::resolve(&a.host, 0, fam)
        .map_err(|e| Failure::Run(anyhow!(e)))?
        .first()
        .map(|s| s.ip())
        .ok_or_else(|| Failure::Run(anyhow!("{}: no address", a.host)))?;
    let sent = a.dscp.map_or(0, Dscp::value);
    let opts = TraceOptions {
        first_hop: a.first_hop,
        max_hops: a.max_hops,
        queries: a.queries,
        wait: a.wait,
        tos: sent << 2,
        probes: match a.proto.as_str() {
            "udp" => ProbeKind::Udp,
            "tcp" => ProbeKind::Tcp(a.port),
            _ => ProbeKind::Icmp,
        },
    };
    let stop = crate::output::interrupt_flag();
    let mut out = std::io::stdout();
    if !a.json {
        let family = match (a.proto.as_str(), target.is_ipv6()) {
            ("udp", _) => "UDP to port 33434,".to_string(),
            ("tcp", _) => format!("TCP SYN to port {},", a.port),
            (_, true) => "ICMPv6 echo,".to_string(),
            (_, false) => "ICMP echo,".to_string(),
        };
        let probes = if a.queries == 1 { "probe" } else { "probes" };
        writeln!(
            out,
            "trace to {} ({target}), {} hops max, {} {probes} each, {family} DSCP {}",
            a.host,
            a.max_hops,
            a.queries,
            dscp_name(sent)
        )?;
    }
    let mut changed_at: Option<u8> = None;
    let json = a.json;
    let mut show = |h: &Hop| {
        let h = hop_out(h);
        let changed = changed_at.is_none() && arrived_dscp(&h).is_some_and(|d| d != sent);
        if changed {
            changed_at = Some(h.ttl);
        }
        if !json {
            let _ = writeln!(std::io::stdout(), "{}", hop_line(&h, changed, sent));
        }
    };
    let hops = sonde_engine::trace::trace(target, &opts, stop.flag(), &mut show)
        .map_err(|e| Failure::Run(anyhow!(e)))?;
    let arrived = hops.last().is_some_and(Hop::arrived);
    let (path_mtu, mtu_steps) = if a.mtu && !stop.is_stopped() {
        let found = sonde_engine::trace::mtu::path_mtu(target, a.mtu_start, a.wait, stop.flag())
            .map_err(|e| Failure::Run(anyhow!(e)))?;
        let steps: Vec<MtuOut> = found
            .steps
            .iter()
            .map(|s| MtuOut {
                from: s.from,
                hop: hops
                    .iter()
                    .find(|h| h.probes.iter().flatten().any(|p| p.from == s.from))
                    .map(|h| h.ttl),
                mtu: s.mtu,
            })
            .collect();
        (found.mtu, steps)
    } else {
        (None, Vec::new())
    };
    if a.mtu && !a.json {
        for s in &mtu_steps {
            let hop = s.hop.map(|h| format!(" (hop {h})")).unwrap_or_default();
            writeln!(
                out,
                "{}{hop}: its next link carries {} bytes",
                s.from, s.mtu
            )?;
        }
        match path_mtu {
            Some(m) => writeln!(out, "path MTU {m} bytes")?,
            None => writeln!(
                out,
                "path MTU not found: no probe from {} bytes down arrived",
                a.mtu_start
            )?,
        }
    }
    if a.json {
        let doc = TraceOut {
            host: a.host.clone(),
            target,
            dscp_sent: sent,
            hops: hops.iter().map(hop_out).collect(),
            arrived,
            dscp_changed_at: changed_at,
            path_mtu,
            mtu_steps,
        };
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else if !arrived {
        writeln!(out, "the target did not answer within {} hops", a.max_hops)?;
    }
    if stop.is_stopped() {
        return Err(Failure::Interrupted);
    }
    Ok(())
}
