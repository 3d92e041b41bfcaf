//! `sonde trace HOST`: the path hop by hop over ICMP / ICMPv6 echo, UDP
//! or TCP SYN probes, each hop with its round-trip times and the DSCP and
//! ECN the probe arrived with there, as the hop's ICMP error quoted it;
//! the hop where the DSCP changed is named (docs/trace.md). A test like
//! the others: its result is kept with `--archive`, and `-J` prints it.

use crate::failure::Failure;
use crate::output::Output;
use crate::run_args::{duration, family, JsonFormat};
use clap::Args;
use sonde_model::{Dscp, TestSpec, TraceProto, TraceSpec};
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
    /// Enumerate the load-balanced paths (MDA, with --proto udp): each
    /// hop probed by as many flows (UDP source ports) as it takes to find
    /// every interface there with 95 % confidence; the hops list every
    /// interface with the flows that reached it.
    #[arg(long)]
    pub multipath: bool,
    /// With --multipath: the confidence (per cent, 50 to 99.99) that a
    /// hop has no interface its flows missed.
    #[arg(
        long,
        value_name = "PCT",
        default_value_t = 95.0,
        requires = "multipath"
    )]
    pub confidence: f64,
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
    /// Print the result as JSON.
    #[arg(short = 'J', long)]
    pub json: bool,
    /// A title for the output and the stored result.
    #[arg(long)]
    pub title: Option<String>,
    #[command(flatten)]
    pub archive: crate::archive_args::KeepArgs,
}

impl TraceArgs {
    /// The flags as a spec (checked by the runner's `validate`).
    pub fn to_spec(&self) -> TraceSpec {
        TraceSpec {
            host: self.host.clone(),
            proto: match self.proto.as_str() {
                "udp" => TraceProto::Udp,
                "tcp" => TraceProto::Tcp,
                _ => TraceProto::Icmp,
            },
            port: self.port,
            family: family(self.ipv4, self.ipv6),
            first_hop: self.first_hop,
            max_hops: self.max_hops,
            queries: self.queries,
            wait: self.wait,
            dscp: self.dscp,
            mtu: self.mtu,
            mtu_start: self.mtu_start,
            multipath: self.multipath,
            confidence: (self.multipath && self.confidence != 95.0).then_some(self.confidence),
            title: self.title.clone(),
        }
    }
}

pub fn run(a: TraceArgs) -> Result<(), Failure> {
    let output = Output {
        json: a.json.then_some(JsonFormat::Sonde),
        live: !a.json,
        flags: true,
        archive: a.archive.kept(),
        ..Output::default()
    };
    output.run(&TestSpec::Trace(a.to_spec()))
}
