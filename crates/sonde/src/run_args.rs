//! Flags every measurement shares (`sonde tcp`, `sonde udp`, …): where,
//! how long, how many streams, which way, marking, output. Parsed once
//! here, flattened into each command.

use crate::cli::Failure;
use clap::Args;
use sonde_engine::ping::latency::measure_idle;
use sonde_model::LatencyUnderLoad;
use sonde_model::{Direction, Dscp, IpFamily};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A duration as humantime (`10s`, `500ms`, `5m`) or bare seconds.
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
pub struct RunArgs {
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
    /// Warm-up shown but left out of the summary.
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
    /// DSCP of the data packets: EF, AF11…AF43, CS0…CS7, LE, or 0–63.
    #[arg(short = 'S', long)]
    pub dscp: Option<Dscp>,
    /// IPv6 flow label of the client's data packets (0–1048575).
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
    /// Print one JSON document: sonde's (schemas in docs/schema/), or with
    /// `--json=iperf3` in iperf3's layout, for scripts written for iperf3.
    #[arg(short = 'J', long, num_args = 0..=1, require_equals = true, default_missing_value = "sonde", value_name = "FORMAT")]
    pub json: Option<JsonFormat>,
    /// Ping the server (ICMP) for 1 s before the test and all through it:
    /// RTT idle, under load, and the increase (a bloated buffer shows here).
    #[arg(long)]
    pub latency: bool,
    /// The server is a stock iperf3 server: speak its protocol (without
    /// this flag sonde switches to it when the server turns out to be one).
    #[arg(long)]
    pub iperf3: bool,
}

/// Which server a test talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// sonde's protocol, falling back to iperf3's if the server speaks it.
    Sonde,
    /// iperf3's protocol from the start (`--iperf3`).
    Iperf3,
}

/// Says on stderr that the server at `host`:`port` turned out to speak
/// iperf3's protocol, which the test now switches to.
pub fn note_iperf3_server(host: &str, port: u16) {
    eprintln!("sonde: {host}:{port} is an iperf3 server; speaking iperf3's protocol");
}

/// The layout of `-J` output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum JsonFormat {
    /// sonde's own result (docs/schema/).
    Sonde,
    /// iperf3's `-J` layout.
    Iperf3,
}

impl RunArgs {
    /// The kind of server `--iperf3` says this is.
    pub fn peer(&self) -> Peer {
        if self.iperf3 {
            Peer::Iperf3
        } else {
            Peer::Sonde
        }
    }

    /// Whether any JSON was asked for (live text lines are then off).
    pub fn json(&self) -> bool {
        self.json.is_some()
    }

    pub fn direction(&self) -> Direction {
        if self.bidir {
            Direction::Bidir
        } else if self.reverse {
            Direction::Reverse
        } else {
            Direction::Forward
        }
    }

    pub fn family(&self) -> IpFamily {
        match (self.ipv4, self.ipv6) {
            (true, _) => IpFamily::V4,
            (_, true) => IpFamily::V6,
            _ => IpFamily::Any,
        }
    }
}

/// Runs `load` with latency pings around it when `args.latency` asks;
/// `attach` puts the figure into the load's result.
pub fn with_latency<R>(
    args: &RunArgs,
    load: impl FnOnce() -> anyhow::Result<R>,
    attach: impl FnOnce(&mut R, LatencyUnderLoad),
) -> anyhow::Result<R> {
    if !args.latency {
        return load();
    }
    let idle =
        measure_idle(&args.host, args.family()).map_err(|e| anyhow::anyhow!("--latency: {e}"))?;
    let loaded = idle.start_loaded();
    let mut result = load()?;
    attach(
        &mut result,
        loaded
            .finish()
            .map_err(|e| anyhow::anyhow!("--latency: {e}"))?,
    );
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

/// Prints a result as JSON (sonde's, or `iperf3`'s layout made by
/// `as_iperf3`) or as the text `summary` makes of it; an interrupted
/// result is printed, then reported as [`Failure::Interrupted`].
pub fn print_result<T: serde::Serialize>(
    result: &T,
    json: Option<JsonFormat>,
    summary: fn(&T) -> String,
    as_iperf3: fn(&T) -> serde_json::Value,
    interrupted: bool,
) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    match json {
        Some(JsonFormat::Sonde) => {
            serde_json::to_writer_pretty(&mut out, result)?;
            writeln!(out)?;
        }
        Some(JsonFormat::Iperf3) => {
            serde_json::to_writer_pretty(&mut out, &as_iperf3(result))?;
            writeln!(out)?;
        }
        None => write!(out, "{}", summary(result))?,
    }
    if interrupted {
        return Err(Failure::Interrupted);
    }
    Ok(())
}
