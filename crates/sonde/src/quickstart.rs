//! `sonde quickstart`: the first thing to run on a new machine. Starts a
//! server inside this process on loopback and measures TCP over IPv6 and
//! IPv4, each way.

use crate::cli::Failure;
use crate::tcp_cmd::measure;
use crate::udp_cmd::measure_udp;
use anyhow::Context;
use clap::Args;
use sonde_agent::{Reflector, ReflectorConfig, Server, ServerConfig};
use sonde_engine::ping::{run_ping, PingEvent};
use sonde_model::{Direction, IpFamily, Rate, TcpSpec, UdpSpec};
use sonde_model::{PingProto, PingSpec};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct QuickstartArgs {
    /// Length of each test.
    #[arg(short = 't', long = "time", default_value = "2s", value_parser = humantime::parse_duration)]
    pub time: Duration,
}

pub fn run(args: QuickstartArgs) -> Result<(), Failure> {
    let config = ServerConfig {
        bind: vec![
            IpAddr::V6(Ipv6Addr::LOCALHOST),
            IpAddr::V4(Ipv4Addr::LOCALHOST),
        ],
        port: 0,
        ..ServerConfig::default()
    };
    let reflector = Reflector::bind(
        &ReflectorConfig {
            port: 0,
            ..ReflectorConfig::default()
        },
        &config.bind,
    )
    .map_err(|e| anyhow::anyhow!("starting the in-process reflector: {e}"))?
    .context("the reflector is off")?;
    let reflector_port = reflector
        .local_addrs()
        .first()
        .map(|a| a.port())
        .context("the reflector has no address")?;
    reflector.spawn();
    let server = Server::bind(config).context("starting the in-process server")?;
    let addrs = server.spawn();
    let port = addrs
        .first()
        .map(|a| a.port())
        .context("the server has no address")?;
    println!(
        "sonde quickstart: server on {} (in this process)",
        addrs
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut rows = Vec::new();
    for (family, host) in [(IpFamily::V6, "::1"), (IpFamily::V4, "127.0.0.1")] {
        for direction in [Direction::Forward, Direction::Reverse] {
            let spec = TcpSpec {
                host: host.to_string(),
                port,
                time: args.time,
                interval: Duration::ZERO,
                family,
                direction,
                ..TcpSpec::default()
            };
            let r = measure(&spec, true, &Arc::new(AtomicBool::new(false)))
                .with_context(|| format!("TCP test to {host}"))?;
            rows.push((host, direction, r));
        }
    }
    println!();
    println!(
        "{:<10} {:<9} {:>16} {:>8} {:>10}",
        "path", "direction", "goodput", "retrans", "rtt"
    );
    for (host, direction, r) in &rows {
        let rtt = r
            .streams
            .first()
            .and_then(|s| s.rtt_ms)
            .map_or_else(|| "-".into(), |v| format!("{v:.3} ms"));
        println!(
            "{:<10} {:<9} {:>16} {:>8} {:>10}",
            host,
            format!("{direction:?}").to_lowercase(),
            Rate::from_bps(r.summary.throughput_bps).to_string(),
            r.summary.retransmits,
            rtt
        );
    }
    println!();
    udp_flows(port, args.time)?;
    println!();
    ping_series(reflector_port)?;
    println!();
    println!("TCP, UDP and RTT over IPv6 and IPv4 on loopback work. Next: `sonde serve` on one host, `sonde tcp HOST` or `sonde udp HOST` on another.");
    Ok(())
}

/// A 1 Mbit/s UDP flow each way over IPv6 (the seeds' PDR probe).
fn udp_flows(port: u16, time: Duration) -> Result<(), Failure> {
    println!(
        "{:<10} {:<9} {:>14} {:>9} {:>12} {:>11}",
        "path", "direction", "UDP rate", "PDR", "lost/sent", "jitter"
    );
    for direction in [Direction::Forward, Direction::Reverse] {
        let spec = UdpSpec {
            host: "::1".to_string(),
            port,
            time,
            interval: Duration::ZERO,
            direction,
            ..UdpSpec::default()
        };
        let r = measure_udp(&spec, true, &Arc::new(AtomicBool::new(false)))
            .context("UDP test to ::1")?;
        let s = r
            .summary
            .forward
            .as_ref()
            .or(r.summary.reverse.as_ref())
            .context("the UDP result has no summary")?;
        println!(
            "{:<10} {:<9} {:>14} {:>8.2}% {:>12} {:>8.3} ms",
            "::1",
            format!("{direction:?}").to_lowercase(),
            Rate::from_bps(s.counts.throughput_bps).to_string(),
            s.counts.pdr_pct,
            format!("{}/{}", s.counts.lost, s.counts.sent),
            s.counts.jitter_ms
        );
    }
    Ok(())
}

/// Ping series to the in-process server: ICMP echo, and STAMP to its
/// reflector, which gives the delay each way (one clock here).
fn ping_series(reflector_port: u16) -> Result<(), Failure> {
    println!(
        "{:<10} {:<14} {:>9} {:>10} {:>10} {:>10} {:>10}",
        "path", "ping", "answered", "rtt p50", "rtt p99", "out", "back"
    );
    let ms = |v: Option<f64>| v.map_or_else(|| "-".into(), |v| format!("{v:.3} ms"));
    for (family, host) in [(IpFamily::V6, "::1"), (IpFamily::V4, "127.0.0.1")] {
        for proto in [PingProto::Icmp, PingProto::Udp] {
            let spec = PingSpec {
                host: host.to_string(),
                proto,
                port: reflector_port,
                count: 20,
                interval: Duration::from_millis(10),
                sizes: vec![if proto == PingProto::Udp { 44 } else { 56 }],
                dscp: None,
                family,
                report_interval: Duration::from_secs(10),
                timeout: Duration::from_secs(1),
                clock_synced: true,
            };
            let r = match run_ping(&spec, None, &AtomicBool::new(false), &mut |_: PingEvent<
                '_,
            >| {})
            {
                Ok(r) => r,
                // Without root or ping_group_range, ICMP is not allowed.
                Err(e) if proto == PingProto::Icmp => {
                    println!("{host:<10} {:<14} {e}", "icmp");
                    continue;
                }
                Err(e) => return Err(Failure::Run(anyhow::anyhow!("STAMP ping to {host}: {e}"))),
            };
            let one_way = r.series.first().and_then(|s| s.one_way);
            println!(
                "{:<10} {:<14} {:>9} {:>10} {:>10} {:>10} {:>10}",
                host,
                r.method,
                format!("{}/{}", r.summary.received, r.summary.sent),
                ms(r.summary.rtt_ms.map(|t| t.p50)),
                ms(r.summary.rtt_ms.map(|t| t.p99)),
                ms(one_way.and_then(|o| o.forward_ms).map(|t| t.p50)),
                ms(one_way.and_then(|o| o.backward_ms).map(|t| t.p50)),
            );
        }
    }
    Ok(())
}
