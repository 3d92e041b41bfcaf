//! `sonde quickstart`: the first thing to run on a new machine. Starts a
//! server inside this process on loopback and measures TCP over IPv6 and
//! IPv4, each way.

use crate::failure::Failure;
use crate::run_args::duration;
use anyhow::Context;
use clap::Args;
use sonde_model::{Direction, IpFamily, Rate, TcpSpec, TestResult, TestSpec, UdpSpec};
use sonde_model::{PingProto, PingSpec};
use sonde_run::{Events, RunError, Stop};
use sonde_server::{Reflector, ReflectorConfig, Server, ServerConfig};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

/// The archive the quick start keeps its results in.
struct Kept {
    store: sonde_archive::Store,
    count: usize,
}

/// Runs one test of the quick start, with nobody listening to its events,
/// and keeps its result.
fn measure(spec: impl Into<TestSpec>, kept: &mut Kept) -> Result<TestResult, Failure> {
    let r = sonde_run::run(&spec.into(), &Stop::new(), &Events::new())
        .map_err(|e: RunError| Failure::Run(anyhow::anyhow!(e)))?;
    kept.store
        .put_result(&r, &sonde_archive::Placement::default())
        .map_err(|e| Failure::Run(anyhow::anyhow!(e)))?;
    kept.count += 1;
    Ok(r)
}

#[derive(Debug, Args)]
pub struct QuickstartArgs {
    /// Length of each test.
    #[arg(short = 't', long = "time", default_value = "2s", value_parser = duration)]
    pub time: Duration,
    /// Where to keep the results (default: the SQLite archive in
    /// $XDG_DATA_HOME/sonde/sonde.db).
    #[arg(long, require_equals = true, value_name = "PATH|URL")]
    pub archive: Option<String>,
}

pub fn run(args: QuickstartArgs) -> Result<(), Failure> {
    let location = crate::archive_args::resolve(args.archive.as_deref().unwrap_or(""));
    let mut kept = Kept {
        store: sonde_archive::Store::open(&location)
            .map_err(|e| Failure::Run(anyhow::anyhow!(e)))?,
        count: 0,
    };
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
            let r = measure(spec, &mut kept).map_err(|e| match e {
                Failure::Run(e) => Failure::Run(e.context(format!("TCP test to {host}"))),
                other => other,
            })?;
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
            .and_then(|s| s.figures.srtt_ms)
            .map_or_else(|| "-".into(), |v| format!("{v:.3} ms"));
        let total = r.summary.total.clone().unwrap_or_default();
        println!(
            "{:<10} {:<9} {:>16} {:>8} {:>10}",
            host,
            format!("{direction:?}").to_lowercase(),
            shown(total.throughput_bps, |b| Rate::from_bps(b).to_string()),
            total
                .retransmits
                .map_or_else(|| "-".into(), |r| r.to_string()),
            rtt
        );
    }
    println!();
    udp_flows(port, args.time, &mut kept)?;
    println!();
    ping_series(reflector_port, &mut kept)?;
    println!();
    println!("TCP, UDP and RTT over IPv6 and IPv4 on loopback work. Next: `sonde serve` on one host, `sonde tcp HOST` or `sonde udp HOST` on another.");
    let archive_flag = match &args.archive {
        Some(a) => format!(" --archive={a}"),
        None => String::new(),
    };
    println!(
        "{} results kept in {}: list them with `sonde results{archive_flag} list`.",
        kept.count,
        kept.store.location()
    );
    Ok(())
}

/// A 1 Mbit/s UDP flow each way over IPv6 (the seeds' PDR probe).
fn udp_flows(port: u16, time: Duration, kept: &mut Kept) -> Result<(), Failure> {
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
        let r = measure(spec, kept)?;
        let s = r
            .summary
            .forward
            .as_ref()
            .or(r.summary.reverse.as_ref())
            .context("the UDP result has no summary")?;
        let count = |v: Option<u64>| shown(v, |n| n.to_string());
        println!(
            "{:<10} {:<9} {:>14} {:>9} {:>12} {:>11}",
            "::1",
            format!("{direction:?}").to_lowercase(),
            shown(s.throughput_bps, |b| Rate::from_bps(b).to_string()),
            shown(s.pdr_pct, |p| format!("{p:.2}%")),
            format!("{}/{}", count(s.lost_packets), count(s.sent_packets)),
            shown(s.jitter_ms, |j| format!("{j:.3} ms"))
        );
    }
    Ok(())
}

/// Ping series to the in-process server: ICMP echo, and STAMP to its
/// reflector, which gives the delay each way (one clock here).
fn ping_series(reflector_port: u16, kept: &mut Kept) -> Result<(), Failure> {
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
                sizes: vec![PingSpec::default_size(proto, false)],
                family,
                timeout: Duration::from_secs(1),
                clock_synced: true,
                ..PingSpec::default()
            };
            let r = match measure(spec, kept) {
                Ok(r) => r,
                // Without root or ping_group_range, ICMP is not allowed.
                Err(e) if proto == PingProto::Icmp => {
                    println!("{host:<10} {:<14} {}", "icmp", e.message());
                    continue;
                }
                Err(Failure::Run(e)) => {
                    return Err(Failure::Run(e.context(format!("STAMP ping to {host}"))))
                }
                Err(other) => return Err(other),
            };
            let one_way = r.series.first().and_then(|s| s.one_way);
            let rt = r.summary.round_trip.clone().unwrap_or_default();
            println!(
                "{:<10} {:<14} {:>9} {:>10} {:>10} {:>10} {:>10}",
                host,
                r.env.method.map_or("-", |m| m.name()),
                format!(
                    "{}/{}",
                    shown(rt.received_packets, |n| n.to_string()),
                    shown(rt.sent_packets, |n| n.to_string())
                ),
                ms(rt.rtt_ms.map(|t| t.p50)),
                ms(rt.rtt_ms.map(|t| t.p99)),
                ms(one_way.and_then(|o| o.forward_ms).map(|t| t.p50)),
                ms(one_way.and_then(|o| o.backward_ms).map(|t| t.p50)),
            );
        }
    }
    Ok(())
}

/// A figure as text, or "-" when it is unknown (never 0).
fn shown<T>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map_or_else(|| "-".to_string(), f)
}
