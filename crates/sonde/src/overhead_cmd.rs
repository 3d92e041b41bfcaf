//! `sonde overhead`: bytes on the wire per packet for protocol stacks
//! (one stack's layers, or several side by side), a result's goodput
//! corrected for a stack assumed (`--correct-for`), and a path's own
//! overhead measured (`--measure HOST`, through
//! `sonde_methods::run_method`). The arithmetic is
//! `sonde_methods::overhead`'s.

use crate::failure::Failure;
use crate::method_output::{method_failure, print_method, with_printer, MethodOut};
use crate::output::interrupt_flag;
use crate::run_args::{duration, family};
use crate::sweep_values::{self, Values};
use anyhow::anyhow;
use clap::Args;
use sonde_methods::overhead::{correction_factor, payload_per_packet, Stack};
use sonde_model::method::OverheadSpec;
use sonde_model::{
    Direction, Event, MethodEvent, MethodResult, MethodSpec, Rate, TestResult, TestSpec, TraceSpec,
    UdpSpec,
};
use sonde_report::StackRow;
use sonde_run::{Events, LocalRunner, Stop};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct OverheadArgs {
    /// Protocol stacks, layers outermost first joined by '/': l1, eth,
    /// mac, fcs, vlan, ipv4 (6in4), ipv6[:ext=N], udp, tcp, tcp-ts,
    /// gre[:key,seq], vxlan, wireguard, openvpn:CIPHER[+HMAC],
    /// esp-tunnel:CIPHER[+HMAC], esp-transport:…, tunnel:BYTES.
    /// E.g. l1/eth/ipv4/esp-tunnel:aes-cbc+sha1/ipv6/tcp-ts.
    #[arg(value_name = "STACK")]
    pub stacks: Vec<String>,
    /// Payload sizes (bytes inside the innermost layer): a list or
    /// START:STOP:STEP.
    #[arg(long, value_name = "RANGE|LIST", value_parser = sweep_values::payloads,
          default_value = "64,128,256,512,1024,1280,1400")]
    pub payloads: Values<u32>,
    /// Correct the goodput of the results in FILE… (sonde JSON: tests, or
    /// methods' trials) for this stack: what the path carried on the
    /// wire, over the same packets without the stack's tunnels.
    #[arg(long, value_name = "STACK", requires = "files")]
    pub correct_for: Option<String>,
    /// With --correct-for: the payload per packet to assume (default: each
    /// result's own: UDP length, TCP MSS).
    #[arg(long, value_name = "BYTES")]
    pub payload: Option<u32>,
    /// The path's MTU (bytes of IP packet, as `sonde trace --mtu`
    /// measures it): each stack's packet above it is named on stderr, and
    /// marked `exceeds_mtu` in JSON.
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(68..=65535))]
    pub mtu: Option<u32>,
    /// Measure the path MTU toward HOST first (as `sonde trace HOST
    /// --mtu -q 1`), then check each stack against it as --mtu does.
    #[arg(long, value_name = "HOST", conflicts_with_all = ["mtu", "measure", "correct_for"])]
    pub path_mtu: Option<String>,
    /// Result files for --correct-for.
    #[arg(long = "file", value_name = "FILE", num_args = 1..)]
    pub files: Vec<PathBuf>,
    /// Measure a path's overhead: goodput at each --payloads size (unpaced
    /// UDP fills the bottleneck) toward this sonde server.
    #[arg(long, value_name = "HOST", conflicts_with_all = ["stacks", "correct_for"])]
    pub measure: Option<String>,
    /// With --measure: server port, time per size, rate (0: unpaced), gap.
    #[arg(short = 'p', long, default_value_t = 5201)]
    pub port: u16,
    #[arg(short = 't', long = "time", default_value = "3s", value_parser = duration)]
    pub time: Duration,
    #[arg(short = 'b', long, default_value = "0")]
    pub bitrate: Rate,
    #[arg(long, default_value = "1s", value_parser = duration)]
    pub gap: Duration,
    /// IPv4 only.
    #[arg(short = '4', long = "ipv4", conflicts_with = "ipv6")]
    pub ipv4: bool,
    /// IPv6 only.
    #[arg(short = '6', long = "ipv6")]
    pub ipv6: bool,
    /// Print JSON instead of text.
    #[arg(short = 'J', long)]
    pub json: bool,
    #[command(flatten)]
    pub archive: crate::archive_args::KeepArgs,
}

/// The path MTU toward `host`, found by a trace that probes for it (one
/// probe a hop), and said on stderr with the hop that told it.
fn measured_mtu(host: &str, family: sonde_model::IpFamily) -> Result<u32, Failure> {
    let spec = TestSpec::Trace(TraceSpec {
        host: host.to_string(),
        family,
        queries: 1,
        mtu: true,
        ..TraceSpec::default()
    });
    let result = sonde_run::run(&spec, &Stop::new(), &Events::new())
        .map_err(|e| Failure::Run(anyhow!("--path-mtu {host}: {e}")))?;
    let t = result.trace.as_ref();
    let Some(mtu) = t.and_then(|t| t.path_mtu) else {
        return Err(Failure::Run(anyhow!(
            "--path-mtu {host}: no path MTU found (no probe of 1500 bytes or less arrived)"
        )));
    };
    let told = t
        .and_then(|t| t.mtu_steps.last())
        .map(|s| {
            let hop = s.hop.map(|h| format!("hop {h}, ")).unwrap_or_default();
            format!(" (told by {hop}{})", s.from)
        })
        .unwrap_or_default();
    eprintln!("sonde: path MTU toward {host}: {mtu} B{told}");
    Ok(mtu)
}

fn parse_stack(s: &str) -> Result<Stack, Failure> {
    s.parse::<Stack>().map_err(|e| Failure::Usage(e.into()))
}

pub fn run(args: OverheadArgs) -> Result<(), Failure> {
    if let Some(host) = &args.measure {
        let spec = OverheadSpec {
            probe: UdpSpec {
                host: host.clone(),
                port: args.port,
                time: args.time,
                interval: Duration::ZERO,
                bitrate: args.bitrate,
                family: family(args.ipv4, args.ipv6),
                ..UdpSpec::default()
            },
            payloads: args.payloads.0.clone(),
            gap: args.gap,
        };
        return run_measure_spec(&spec, MethodOut::new(args.json, &args.archive));
    }
    if let Some(stack) = &args.correct_for {
        return correct(&parse_stack(stack)?, stack, &args);
    }
    if args.stacks.is_empty() {
        return Err(Failure::Usage(anyhow!(
            "give one or more STACKs, --correct-for STACK --file FILE…, or --measure HOST"
        )));
    }
    let stacks = args
        .stacks
        .iter()
        .map(|s| parse_stack(s))
        .collect::<Result<Vec<_>, _>>()?;
    let payloads = &args.payloads.0;
    let mtu = match &args.path_mtu {
        Some(host) => Some(measured_mtu(host, family(args.ipv4, args.ipv6))?),
        None => args.mtu,
    };
    let over = |s: &Stack, p: u32| mtu.is_some_and(|m| s.packet_bytes(p) > m);
    if let Some(mtu) = mtu {
        for s in &stacks {
            let too_big: Vec<String> = payloads
                .iter()
                .filter(|&&p| over(s, p))
                .map(|&p| format!("{p} B ({} B of packet)", s.packet_bytes(p)))
                .collect();
            if !too_big.is_empty() {
                eprintln!(
                    "sonde: {s}: above the MTU of {mtu} B at payload {}: such packets are \
                     fragmented or dropped on this path",
                    too_big.join(", ")
                );
            }
        }
    }
    let out = if args.json {
        let doc: Vec<serde_json::Value> = stacks
            .iter()
            .map(|s| {
                serde_json::json!({
                    "stack": s.to_string(),
                    "payloads": payloads.iter().map(|&p| serde_json::json!({
                        "payload_bytes": p,
                        "layers": s.breakdown(p).iter().map(|l| serde_json::json!({
                            "layer": l.layer.to_string(), "bytes": l.bytes
                        })).collect::<Vec<_>>(),
                        "wire_bytes": s.wire_bytes(p),
                        "packet_bytes": s.packet_bytes(p),
                        "efficiency": s.efficiency(p),
                        "exceeds_mtu": mtu.map(|_| over(s, p)),
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        serde_json::to_string_pretty(&doc)? + "\n"
    } else if stacks.len() == 1 {
        let s = &stacks[0];
        let rows: Vec<StackRow> = payloads
            .iter()
            .map(|&p| StackRow {
                payload: p,
                layers: s
                    .breakdown(p)
                    .into_iter()
                    .map(|l| (l.layer.to_string(), l.bytes))
                    .collect(),
                wire: s.wire_bytes(p),
            })
            .collect();
        sonde_report::stack_table(&s.to_string(), &rows)
    } else {
        let names: Vec<String> = stacks.iter().map(ToString::to_string).collect();
        let wire: Vec<Vec<u32>> = stacks
            .iter()
            .map(|s| payloads.iter().map(|&p| s.wire_bytes(p)).collect())
            .collect();
        sonde_report::stacks_compared(&names, payloads, &wire)
    };
    std::io::stdout().write_all(out.as_bytes())?;
    Ok(())
}

/// Runs an `overhead` spec (from flags, or a file given to `sonde run`).
pub fn run_measure_spec(spec: &OverheadSpec, mo: MethodOut) -> Result<(), Failure> {
    let json = mo.json;
    spec.validate()
        .map_err(|e| Failure::Usage(anyhow!("invalid {}: {}", e.field, e.reason)))?;
    let stop = interrupt_flag();
    let mut out = std::io::stdout();
    if !json {
        let _ = writeln!(out, "{:>8} {:>14}", "payload", "goodput");
    }
    let print = move |e: &Event| {
        if let (false, Event::Method(MethodEvent::OverheadPoint(p))) = (json, e) {
            let _ = writeln!(
                out,
                "{:>8} {:>9.3} Mbit/s",
                p.payload_bytes,
                p.goodput_bps / 1e6
            );
        }
    };
    let method = MethodSpec::Overhead(spec.clone());
    let result = with_printer(print, |events| {
        sonde_methods::run_method(&LocalRunner, &method, &stop, events)
    })
    .map_err(method_failure)?;
    print_method(&result, &mo, sonde_report::overhead_summary)
}

/// The test results in a file: one test's, or a method's trials.
fn results_in(path: &PathBuf) -> Result<Vec<TestResult>, Failure> {
    let bad = |e: String| Failure::Usage(anyhow!("{}: {e}", path.display()));
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    if value.get("method").is_some() {
        let m: MethodResult = serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
        return Ok(m.trials);
    }
    sonde_model::load_value(value)
        .map(|r| vec![r])
        .map_err(|e| bad(e.to_string()))
}

/// Each result's goodput per direction, and corrected for `stack`.
fn correct(stack: &Stack, written: &str, args: &OverheadArgs) -> Result<(), Failure> {
    let mut rows = Vec::new();
    for path in &args.files {
        for r in results_in(path)? {
            let Some(payload) = args.payload.or_else(|| payload_per_packet(&r)) else {
                continue;
            };
            let factor = correction_factor(stack, payload);
            for d in [Direction::Forward, Direction::Reverse] {
                let Some(g) = r.summary.direction(d).and_then(|f| f.throughput_bps) else {
                    continue;
                };
                rows.push(serde_json::json!({
                    "id": r.id.to_string(),
                    "test": r.spec.kind().name(),
                    "direction": d,
                    "payload_bytes": payload,
                    "throughput_bps": g,
                    "factor": factor,
                    "corrected_bps": (g as f64 * factor).round(),
                }));
            }
        }
    }
    let out = if args.json {
        serde_json::to_string_pretty(&serde_json::json!({
            "stack": stack.to_string(),
            "untunnelled": stack.untunnelled().to_string(),
            "rows": rows,
        }))? + "\n"
    } else {
        let mut t = format!(
            "corrected for {written}: wire bytes over those of {} at each result's payload\n",
            stack.untunnelled()
        );
        t += &format!(
            "{:<38} {:<5} {:<8} {:>8} {:>12} {:>8} {:>12}\n",
            "result", "test", "dir", "payload", "Mbit/s", "factor", "corrected"
        );
        for row in &rows {
            t += &format!(
                "{:<38} {:<5} {:<8} {:>8} {:>12.3} {:>8.4} {:>12.3}\n",
                row["id"].as_str().unwrap_or(""),
                row["test"].as_str().unwrap_or(""),
                row["direction"].as_str().unwrap_or(""),
                row["payload_bytes"],
                row["throughput_bps"].as_f64().unwrap_or(0.0) / 1e6,
                row["factor"].as_f64().unwrap_or(0.0),
                row["corrected_bps"].as_f64().unwrap_or(0.0) / 1e6,
            );
        }
        t
    };
    std::io::stdout().write_all(out.as_bytes())?;
    Ok(())
}
