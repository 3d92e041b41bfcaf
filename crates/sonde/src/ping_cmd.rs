//! `sonde ping HOST`: ICMP/ICMPv6 echo (or STAMP to a sonde reflector),
//! one line per answer and iputils-style statistics with percentiles; a
//! size sweep gives a table of RTT against size.

use crate::cli::Failure;
use crate::run_args::{duration, interrupt_flag, print_result, JsonFormat};
use anyhow::anyhow;
use clap::Args;
use sonde_engine::ping::{run_ping, PingEvent};
use sonde_model::{Dscp, IpFamily, PingProto, PingSpec};
use sonde_report::{ping_header, ping_reply_line, ping_summary};
use std::io::Write;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct PingArgs {
    /// Host name or address to ping.
    pub host: String,
    /// Requests per size (0: until Ctrl-C).
    #[arg(short = 'c', long, default_value_t = 10)]
    pub count: u64,
    /// Time between requests (at least 1ms).
    #[arg(short = 'i', long, default_value = "1s", value_parser = duration)]
    pub interval: Duration,
    /// Data bytes per request: ICMP data after the 8-byte echo header, or
    /// the whole STAMP packet (UDP payload, at least 44) with --proto udp.
    #[arg(short = 's', long, conflicts_with = "sizes")]
    pub size: Option<u32>,
    /// A size sweep, one series per size: 64,128,256,512,1024,1408.
    #[arg(long, value_delimiter = ',')]
    pub sizes: Vec<u32>,
    /// DSCP of the requests (name or number).
    #[arg(short = 'S', long)]
    pub dscp: Option<Dscp>,
    /// IPv4 only.
    #[arg(short = '4', long = "ipv4", conflicts_with = "ipv6")]
    pub ipv4: bool,
    /// IPv6 only.
    #[arg(short = '6', long = "ipv6")]
    pub ipv6: bool,
    /// How long to wait for answers after the last request.
    #[arg(short = 'W', long, default_value = "2s", value_parser = duration)]
    pub timeout: Duration,
    /// icmp (echo) or udp (STAMP, RFC 8762, to a sonde reflector).
    #[arg(long, default_value = "icmp", value_parser = parse_proto)]
    pub proto: PingProto,
    /// The reflector's UDP port (--proto udp).
    #[arg(short = 'p', long, default_value_t = 862)]
    pub port: u16,
    /// File with the reflector's key in hex: authenticated STAMP (--proto udp).
    #[arg(long, value_name = "FILE")]
    pub key_file: Option<std::path::PathBuf>,
    /// Length of the reporting intervals in the JSON result.
    #[arg(long, default_value = "10s", value_parser = duration)]
    pub report_interval: Duration,
    /// Both hosts' clocks are synchronised: one-way delays are meaningful.
    #[arg(long)]
    pub clock_synced: bool,
    /// Only the summary, not a line per answer.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Print the result as JSON.
    #[arg(short = 'J', long)]
    pub json: bool,
}

fn parse_proto(s: &str) -> Result<PingProto, String> {
    match s {
        "icmp" => Ok(PingProto::Icmp),
        "udp" => Ok(PingProto::Udp),
        _ => Err(format!("'{s}': use icmp or udp")),
    }
}

const STAMP_MIN: u32 = 44;
const STAMP_AUTH_MIN: u32 = 112;

impl PingArgs {
    pub fn to_spec(&self) -> Result<PingSpec, Failure> {
        let usage = |m: String| Err(Failure::Usage(anyhow!(m)));
        if self.interval < Duration::from_millis(1) {
            return usage(format!(
                "--interval {:?}: at least 1ms between requests",
                self.interval
            ));
        }
        if self.key_file.is_some() && self.proto != PingProto::Udp {
            return usage("--key-file is for --proto udp (authenticated STAMP)".into());
        }
        let stamp_min = if self.key_file.is_some() {
            STAMP_AUTH_MIN
        } else {
            STAMP_MIN
        };
        let default = match self.proto {
            PingProto::Icmp => 56,
            PingProto::Udp => stamp_min,
        };
        let sizes = if !self.sizes.is_empty() {
            self.sizes.clone()
        } else {
            vec![self.size.unwrap_or(default)]
        };
        for &s in &sizes {
            let (min, max) = match self.proto {
                PingProto::Icmp => (0, 65_000),
                PingProto::Udp => (stamp_min, 65_000),
            };
            if !(min..=max).contains(&s) {
                return usage(format!("size {s}: use {min} to {max} bytes"));
            }
        }
        Ok(PingSpec {
            host: self.host.clone(),
            proto: self.proto,
            port: self.port,
            count: self.count,
            interval: self.interval,
            sizes,
            dscp: self.dscp,
            family: match (self.ipv4, self.ipv6) {
                (true, _) => IpFamily::V4,
                (_, true) => IpFamily::V6,
                _ => IpFamily::Any,
            },
            report_interval: self.report_interval,
            timeout: self.timeout,
            clock_synced: self.clock_synced,
        })
    }
}

pub fn run(args: PingArgs) -> Result<(), Failure> {
    let spec = args.to_spec()?;
    let key = match &args.key_file {
        None => None,
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| Failure::Usage(anyhow!("--key-file {}: {e}", path.display())))?;
            Some(
                sonde_agent::reflector::parse_key(&text)
                    .map_err(|e| Failure::Usage(anyhow!("--key-file {}: {e}", path.display())))?,
            )
        }
    };
    let stop = interrupt_flag();
    let live = !args.json && !args.quiet;
    let mut out = std::io::stdout();
    let mut target = String::new();
    let mut bytes = 0;
    let result = run_ping(&spec, key.as_deref(), &stop, &mut |event| {
        let text = match event {
            PingEvent::Series {
                size,
                target: t,
                method,
            } => {
                target = t.to_string();
                bytes = match spec.proto {
                    PingProto::Icmp => size + 8,
                    PingProto::Udp => size,
                };
                ping_header(t, &spec.host, size, method)
            }
            PingEvent::Reply(r) => ping_reply_line(&target, r, bytes, spec.clock_synced),
        };
        if live {
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
        }
    })
    .map_err(|e| Failure::Run(e.into()))?;
    // ping has no iperf3 layout: -J is sonde's.
    let json = args.json.then_some(JsonFormat::Sonde);
    let as_value = |r: &sonde_model::PingResult| serde_json::to_value(r).unwrap_or_default();
    print_result(&result, json, ping_summary, as_value, result.interrupted)
}
