//! `sonde udp HOST`: paced UDP streams; loss, PDR, jitter, delay,
//! reordering and DSCP as the receiver saw them.

use crate::cli::Failure;
use crate::tcp_cmd::{duration, interrupt_flag};
use anyhow::anyhow;
use clap::Args;
use sonde_engine::udp_client::{run_udp, UdpEvent};
use sonde_model::{Direction, Dscp, IpFamily, Profile, Rate, UdpResult, UdpSpec};
use sonde_report::{udp_interval, udp_summary};
use std::io::Write;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct UdpArgs {
    /// The sonde server: host name, IPv6 or IPv4 address.
    pub host: String,
    #[arg(short = 'p', long, default_value_t = 5201)]
    pub port: u16,
    /// How long to send after the warm-up (10s, 5m).
    #[arg(short = 't', long = "time", default_value = "10s", value_parser = duration)]
    pub time: Duration,
    /// Interval between reports; 0 for none.
    #[arg(short = 'i', long, default_value = "1s", value_parser = duration)]
    pub interval: Duration,
    /// Warm-up left out of the summary.
    #[arg(short = 'O', long, default_value = "0s", value_parser = duration)]
    pub omit: Duration,
    /// Parallel streams (per direction), 1–128.
    #[arg(short = 'P', long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=128))]
    pub parallel: u16,
    /// Server sends, client receives.
    #[arg(short = 'R', long, conflicts_with = "bidir")]
    pub reverse: bool,
    /// Both directions at once.
    #[arg(long)]
    pub bidir: bool,
    /// Payload rate per stream (e.g. 1M, 100M); 0 = as fast as possible.
    #[arg(short = 'b', long, default_value = "1M")]
    pub bitrate: Rate,
    /// UDP payload bytes per packet (24–65507).
    #[arg(short = 'l', long, default_value_t = 1400)]
    pub length: u32,
    /// Traffic profile: cbr, onoff:ON/OFF, poisson, voip, video[:gop=N,fps=N].
    #[arg(long, default_value = "cbr")]
    pub profile: Profile,
    /// DSCP of the packets: EF, AF11…AF43, CS0…CS7, LE, or 0–63.
    #[arg(short = 'S', long)]
    pub dscp: Option<Dscp>,
    /// IPv6 flow label of the client's packets.
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=0xF_FFFF))]
    pub flowlabel: Option<u32>,
    #[arg(short = '4', long = "ipv4", conflicts_with = "ipv6")]
    pub ipv4: bool,
    #[arg(short = '6', long = "ipv6")]
    pub ipv6: bool,
    /// Both hosts' clocks are synchronised (PTP, GPS): report one-way delay.
    #[arg(long)]
    pub clock_synced: bool,
    #[arg(long)]
    pub title: Option<String>,
    /// Print one JSON document (see docs/schema/udp-result-v1.schema.json).
    #[arg(short = 'J', long)]
    pub json: bool,
}

impl UdpArgs {
    pub fn to_spec(&self) -> UdpSpec {
        UdpSpec {
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
            bitrate: self.bitrate,
            length: self.length,
            profile: self.profile,
            dscp: self.dscp,
            flowlabel: self.flowlabel,
            family: match (self.ipv4, self.ipv6) {
                (true, _) => IpFamily::V4,
                (_, true) => IpFamily::V6,
                _ => IpFamily::Any,
            },
            title: self.title.clone(),
            clock_synced: self.clock_synced,
        }
    }
}

/// Runs a UDP spec, printing live lines unless `quiet`.
pub fn measure_udp(
    spec: &UdpSpec,
    quiet: bool,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<UdpResult> {
    let prefix = spec
        .title
        .as_ref()
        .map(|t| format!("{t}: "))
        .unwrap_or_default();
    let mut out = std::io::stdout();
    let mut header = true;
    let result = run_udp(spec, stop, &mut |event| {
        if quiet {
            return;
        }
        let text = match event {
            UdpEvent::Accepted { server, env } => format!(
                "{prefix}Connected to {server} (sonde {} on {} {}); UDP {} per stream, {} bytes, profile {}\n",
                env.sonde_version,
                env.os,
                env.kernel,
                if spec.stream_rate().bps() == 0 { "unpaced".to_string() } else { spec.stream_rate().to_string() },
                spec.payload_len(),
                spec.profile
            ),
            UdpEvent::Interval(live) => {
                let lines = udp_interval(live.window, live.omitted, &live.streams, |s| spec.stream_direction(usize::from(s)), header);
                header = false;
                lines.lines().map(|l| format!("{prefix}{l}\n")).collect()
            }
        };
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    })?;
    Ok(result)
}

pub fn run(args: UdpArgs) -> Result<(), Failure> {
    let spec = args.to_spec();
    spec.validate()
        .map_err(|e| Failure::Usage(anyhow!("invalid test: {e}")))?;
    let result = measure_udp(&spec, args.json, &interrupt_flag())?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &result)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", udp_summary(&result))?;
    }
    if result.interrupted {
        return Err(Failure::Interrupted);
    }
    Ok(())
}
