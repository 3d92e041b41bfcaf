//! `sonde udp HOST`: paced UDP streams; loss, PDR, jitter, delay,
//! reordering and DSCP as the receiver saw them.

use crate::cli::Failure;
use crate::run_args::{
    interrupt_flag, note_iperf3_server, print_result, with_latency, Peer, RunArgs,
};
use anyhow::anyhow;
use clap::Args;
use sonde_engine::iperf3::udp_client::run_iperf3_udp;
use sonde_engine::udp::client::{run_udp, UdpEvent};
use sonde_engine::EngineError;
use sonde_model::StreamLayout;
use sonde_model::{Profile, Rate, UdpResult, UdpSpec};
use sonde_report::{udp_interval, udp_summary, udp_to_iperf3};
use std::io::Write;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

#[derive(Debug, Args)]
pub struct UdpArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Payload rate per stream (e.g. 1M, 100M); 0 = as fast as possible.
    #[arg(short = 'b', long, default_value = "1M")]
    pub bitrate: Rate,
    /// UDP payload bytes per packet (24–65507).
    #[arg(short = 'l', long, default_value_t = 1400)]
    pub length: u32,
    /// Traffic profile: cbr, onoff:ON/OFF, poisson, voip, video[:gop=N,fps=N].
    #[arg(long, default_value = "cbr")]
    pub profile: Profile,
    /// Both hosts' clocks are synchronised (PTP, GPS): report one-way delay.
    #[arg(long)]
    pub clock_synced: bool,
}

impl UdpArgs {
    pub fn to_spec(&self) -> UdpSpec {
        let r = &self.run;
        UdpSpec {
            host: r.host.clone(),
            port: r.port,
            time: r.time,
            interval: r.interval,
            omit: r.omit,
            parallel: r.parallel,
            direction: r.direction(),
            bitrate: self.bitrate,
            length: self.length,
            profile: self.profile,
            dscp: r.dscp,
            flowlabel: r.flowlabel,
            family: r.family(),
            title: r.title.clone(),
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
    measure_udp_with(spec, Peer::Sonde, quiet, stop)
}

/// [`measure_udp`] against the given kind of server. Against iperf3 there
/// are no live interval lines: iperf3's server reports only totals.
pub fn measure_udp_with(
    spec: &UdpSpec,
    peer: Peer,
    quiet: bool,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<UdpResult> {
    if peer == Peer::Iperf3 {
        return Ok(run_iperf3_udp(spec, stop)?);
    }
    let prefix = spec
        .title
        .as_ref()
        .map(|t| format!("{t}: "))
        .unwrap_or_default();
    let mut out = std::io::stdout();
    let mut header = true;
    let result = match run_udp(spec, stop, &mut |event| {
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
    }) {
        Err(EngineError::PeerIsIperf3) => {
            note_iperf3_server(&spec.host, spec.port);
            run_iperf3_udp(spec, stop)
        }
        other => other,
    }?;
    Ok(result)
}

pub fn run(args: UdpArgs) -> Result<(), Failure> {
    let spec = args.to_spec();
    spec.validate()
        .map_err(|e| Failure::Usage(anyhow!("invalid test: {e}")))?;
    let stop = interrupt_flag();
    let result = with_latency(
        &args.run,
        || measure_udp_with(&spec, args.run.peer(), args.run.json(), &stop),
        |r, l| r.latency = Some(l),
    )?;
    print_result(
        &result,
        args.run.json,
        udp_summary,
        udp_to_iperf3,
        result.interrupted,
    )
}
