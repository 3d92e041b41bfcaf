//! `sonde tcp HOST`: flags as iperf3 users know them, turned into a
//! [`TcpSpec`], run, and printed.

use crate::cli::Failure;
use anyhow::anyhow;
use clap::Args;
use sonde_engine::{run_tcp, TestEvent};
use sonde_model::{ByteSize, Direction, Dscp, IpFamily, Rate, StreamRole, TcpResult, TcpSpec};
use sonde_report::{tcp_summary, LiveTable};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub fn duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s)
        .or_else(|_| {
            s.parse::<f64>()
                .map_err(|_| ())
                .and_then(|v| Duration::try_from_secs_f64(v).map_err(|_| ()))
        })
        .map_err(|()| format!("'{s}' is not a duration (e.g. 10s, 500ms, 5m)"))
}

#[derive(Debug, Args)]
pub struct TcpArgs {
    /// The sonde server: host name, IPv6 or IPv4 address.
    pub host: String,
    /// Server port.
    #[arg(short = 'p', long, default_value_t = 5201)]
    pub port: u16,
    /// How long to send after the warm-up (10s, 5m; bare numbers are seconds).
    #[arg(short = 't', long = "time", default_value = "10s", value_parser = duration)]
    pub time: Duration,
    /// Interval between reports; 0 for none.
    #[arg(short = 'i', long, default_value = "1s", value_parser = duration)]
    pub interval: Duration,
    /// Warm-up to leave out of the summary (TCP slow start).
    #[arg(short = 'O', long, default_value = "0s", value_parser = duration)]
    pub omit: Duration,
    /// Parallel streams (per direction), 1–128.
    #[arg(short = 'P', long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=128))]
    pub parallel: u16,
    /// Server sends, client receives.
    #[arg(short = 'R', long, conflicts_with = "bidir")]
    pub reverse: bool,
    /// Both directions at once, reported per direction.
    #[arg(long)]
    pub bidir: bool,
    /// Socket send and receive buffer on both ends (e.g. 256K, 4M).
    #[arg(short = 'w', long)]
    pub window: Option<ByteSize>,
    /// Congestion control algorithm (cubic, bbr, reno, ...).
    #[arg(short = 'C', long)]
    pub congestion: Option<String>,
    /// TCP maximum segment size in bytes.
    #[arg(short = 'M', long)]
    pub mss: Option<u32>,
    /// Bytes per write (e.g. 128K; iperf3's default is 128K).
    #[arg(short = 'l', long, default_value = "256K")]
    pub length: ByteSize,
    /// Pace each stream to this rate (e.g. 100M); 0 = unpaced.
    #[arg(short = 'b', long)]
    pub bitrate: Option<Rate>,
    /// DSCP for data packets: EF, AF11…AF43, CS0…CS7, LE, or 0–63.
    #[arg(short = 'S', long)]
    pub dscp: Option<Dscp>,
    /// IPv6 flow label for the data streams (0–1048575).
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=0xF_FFFF))]
    pub flowlabel: Option<u32>,
    /// IPv4 only.
    #[arg(short = '4', long = "ipv4", conflicts_with = "ipv6")]
    pub ipv4: bool,
    /// IPv6 only.
    #[arg(short = '6', long = "ipv6")]
    pub ipv6: bool,
    /// A title for the output and the stored result.
    #[arg(long)]
    pub title: Option<String>,
    /// Print one JSON document (see docs/schema/tcp-result-v1.schema.json).
    #[arg(short = 'J', long)]
    pub json: bool,
}

impl TcpArgs {
    /// The flags as a spec (checked afterwards by `TcpSpec::validate`).
    pub fn to_spec(&self) -> TcpSpec {
        TcpSpec {
            host: self.host.clone(),
            port: self.port,
            time: self.time,
            interval: self.interval,
            omit: self.omit,
            parallel: self.parallel,
            direction: if self.bidir {
                Direction::Bidir
            } else if self.reverse {
                Direction::Reverse
            } else {
                Direction::Forward
            },
            window: self.window,
            congestion: self.congestion.clone(),
            mss: self.mss,
            length: self.length,
            bitrate: self.bitrate.filter(|r| r.bps() > 0),
            dscp: self.dscp,
            flowlabel: self.flowlabel,
            family: match (self.ipv4, self.ipv6) {
                (true, _) => IpFamily::V4,
                (_, true) => IpFamily::V6,
                _ => IpFamily::Any,
            },
            title: self.title.clone(),
        }
    }
}

/// Runs a spec, printing live lines unless `quiet`; `stop` ends it early.
pub fn measure(spec: &TcpSpec, quiet: bool, stop: &Arc<AtomicBool>) -> anyhow::Result<TcpResult> {
    let mut table = LiveTable::new();
    let prefix = spec
        .title
        .as_ref()
        .map(|t| format!("{t}: "))
        .unwrap_or_default();
    let mut out = std::io::stdout();
    let result = run_tcp(spec, stop, &mut |event| {
        if quiet {
            return;
        }
        let text = match event {
            TestEvent::Accepted { server, env } => format!(
                "{prefix}Connected to {server} (sonde {} on {} {})\n",
                env.sonde_version, env.os, env.kernel
            ),
            TestEvent::Started { streams } => streams
                .iter()
                .map(|(i, role, local, remote)| {
                    let role = match role {
                        StreamRole::Sender => "sending",
                        StreamRole::Receiver => "receiving",
                    };
                    format!("{prefix}[{i:>3}] local {local} connected to {remote} ({role})\n")
                })
                .collect(),
            TestEvent::Interval(live) => {
                let lines = table.interval(live.window, live.omitted, &live.streams, |s| {
                    spec.stream_direction(usize::from(s))
                });
                lines.lines().map(|l| format!("{prefix}{l}\n")).collect()
            }
        };
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    })?;
    Ok(result)
}

/// A flag that the first Ctrl-C sets (the test then stops and reports
/// what it measured); a second Ctrl-C exits at once.
pub fn interrupt_flag() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let installed = ctrlc::set_handler(move || {
        if flag.swap(true, Ordering::Relaxed) {
            std::process::exit(130);
        }
        eprintln!("sonde: interrupted; stopping the test (Ctrl-C again to quit at once)");
    });
    if let Err(e) = installed {
        tracing::debug!(error = %e, "no Ctrl-C handler");
    }
    stop
}

pub fn run(args: TcpArgs) -> Result<(), Failure> {
    let spec = args.to_spec();
    spec.validate()
        .map_err(|e| Failure::Usage(anyhow!("invalid test: {e}")))?;
    let result = measure(&spec, args.json, &interrupt_flag())?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &result)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", tcp_summary(&result))?;
    }
    if result.interrupted {
        return Err(Failure::Interrupted);
    }
    Ok(())
}
