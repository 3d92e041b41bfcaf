//! `sonde ping HOST`: ICMP/ICMPv6 echo (or STAMP to a sonde reflector),
//! one line per answer and iputils-style statistics with percentiles; a
//! size sweep gives a table of RTT against size.

use crate::failure::Failure;
use crate::output::Output;
use crate::run_args::{duration, family, JsonFormat};
use crate::step_args::StepArgs;
use clap::Args;
use sonde_model::{Dscp, PingProto, PingSpec, TestSpec};
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
    /// TTL (IPv4) or hop limit (IPv6) of the requests, 1 to 255.
    #[arg(short = 't', long)]
    pub ttl: Option<u16>,
    /// Stop this long after the start whatever the count; with -c, send
    /// until that many requests are answered (as iputils).
    #[arg(short = 'w', long, value_parser = duration)]
    pub deadline: Option<Duration>,
    /// Send from this interface (by name) or source address.
    #[arg(short = 'I', long, value_name = "INTERFACE|ADDRESS")]
    pub interface: Option<String>,
    /// Numeric output only: sonde never looks names up in reverse, so
    /// this is always so (accepted for iputils users).
    #[arg(short = 'n', long)]
    pub numeric: bool,
    /// Print the Unix time before each answer line: [1700000000.123456].
    #[arg(short = 'D', long)]
    pub timestamps: bool,
    /// icmp (echo) or udp (STAMP, RFC 8762, to a sonde reflector).
    #[arg(long, default_value = "icmp", value_parser = parse_proto)]
    pub proto: PingProto,
    /// The reflector's UDP port (--proto udp).
    #[arg(short = 'p', long, default_value_t = 862)]
    pub port: u16,
    /// File with the reflector's key in hex: authenticated STAMP (--proto udp).
    #[arg(long, value_name = "FILE")]
    pub key_file: Option<std::path::PathBuf>,
    /// RFC 8972's Class of Service TLV (--proto udp): replies asked to carry
    /// the requests' DSCP, and the DSCP each way reported.
    #[arg(long)]
    pub cos: bool,
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
    /// A title for the output and the stored result.
    #[arg(long)]
    pub title: Option<String>,
    #[command(flatten)]
    pub step: StepArgs,
    #[command(flatten)]
    pub archive: crate::archive_args::KeepArgs,
}

fn parse_proto(s: &str) -> Result<PingProto, String> {
    match s {
        "icmp" => Ok(PingProto::Icmp),
        "udp" => Ok(PingProto::Udp),
        _ => Err(format!("'{s}': use icmp or udp")),
    }
}

impl PingArgs {
    /// The flags as a spec (checked by the runner's `validate`).
    pub fn to_spec(&self) -> PingSpec {
        // Neither -s nor --sizes: the spec's default for the protocol.
        let sizes = match self.size {
            Some(s) => vec![s],
            None => self.sizes.clone(),
        };
        PingSpec {
            host: self.host.clone(),
            proto: self.proto,
            port: self.port,
            count: self.count,
            interval: self.interval,
            sizes,
            dscp: self.dscp,
            family: family(self.ipv4, self.ipv6),
            report_interval: self.report_interval,
            timeout: self.timeout,
            clock_synced: self.clock_synced,
            key_file: self.key_file.clone(),
            key: None,
            cos: self.cos,
            title: self.title.clone(),
            ttl: self.ttl,
            deadline: self.deadline,
            interface: self.interface.clone(),
            timestamps: self.timestamps,
        }
    }
}

pub fn run(args: PingArgs) -> Result<(), Failure> {
    let output = Output {
        // ping has no iperf3 layout: -J is sonde's.
        json: args.json.then_some(JsonFormat::Sonde),
        live: !args.json && !args.quiet,
        flags: true,
        archive: args.archive.kept(),
        ..Output::default()
    };
    let spec = TestSpec::Ping(args.to_spec());
    if args.step.is_method() {
        return crate::repeat_cmd::run_repeated(spec, &args.step, output);
    }
    output.run(&spec)
}
