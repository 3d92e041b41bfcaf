//! `sonde tcp HOST`: flags as iperf3 users know them, turned into a
//! [`TcpSpec`], run, and printed.

use crate::cli::Failure;
use crate::run_args::{
    interrupt_flag, note_iperf3_server, print_result, with_latency, Peer, RunArgs,
};
use anyhow::anyhow;
use clap::Args;
use sonde_engine::iperf3::tcp_client::run_iperf3_tcp;
use sonde_engine::{run_tcp, EngineError, TestEvent};
use sonde_model::StreamLayout;
use sonde_model::{ByteSize, Rate, StreamRole, TcpResult, TcpSpec};
use sonde_report::{tcp_summary, tcp_to_iperf3, LiveTable};
use std::io::Write;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

#[derive(Debug, Args)]
pub struct TcpArgs {
    #[command(flatten)]
    pub run: RunArgs,
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
}

impl TcpArgs {
    /// The flags as a spec (checked afterwards by `TcpSpec::validate`).
    pub fn to_spec(&self) -> TcpSpec {
        let r = &self.run;
        TcpSpec {
            host: r.host.clone(),
            port: r.port,
            time: r.time,
            interval: r.interval,
            omit: r.omit,
            parallel: r.parallel,
            direction: r.direction(),
            window: self.window,
            congestion: self.congestion.clone(),
            mss: self.mss,
            length: self.length,
            bitrate: self.bitrate.filter(|b| b.bps() > 0),
            dscp: r.dscp,
            flowlabel: r.flowlabel,
            family: r.family(),
            title: r.title.clone(),
        }
    }
}

/// Runs a spec, printing live lines unless `quiet`; `stop` ends it early.
pub fn measure(spec: &TcpSpec, quiet: bool, stop: &Arc<AtomicBool>) -> anyhow::Result<TcpResult> {
    measure_with(spec, Peer::Sonde, quiet, stop)
}

/// [`measure`] against the given kind of server.
pub fn measure_with(
    spec: &TcpSpec,
    peer: Peer,
    quiet: bool,
    stop: &Arc<AtomicBool>,
) -> anyhow::Result<TcpResult> {
    let mut table = LiveTable::new();
    let prefix = spec
        .title
        .as_ref()
        .map(|t| format!("{t}: "))
        .unwrap_or_default();
    let mut out = std::io::stdout();
    let mut on_event = |event: TestEvent<'_>| {
        if quiet {
            return;
        }
        let text = match event {
            TestEvent::Accepted { server, env } if env.os.is_empty() => {
                format!("{prefix}Connected to {server} ({})\n", env.sonde_version)
            }
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
    };
    let result = match peer {
        Peer::Iperf3 => run_iperf3_tcp(spec, stop, &mut on_event),
        Peer::Sonde => match run_tcp(spec, stop, &mut on_event) {
            Err(EngineError::PeerIsIperf3) => {
                note_iperf3_server(&spec.host, spec.port);
                run_iperf3_tcp(spec, stop, &mut on_event)
            }
            other => other,
        },
    }?;
    Ok(result)
}

pub fn run(args: TcpArgs) -> Result<(), Failure> {
    let spec = args.to_spec();
    spec.validate()
        .map_err(|e| Failure::Usage(anyhow!("invalid test: {e}")))?;
    let stop = interrupt_flag();
    let result = with_latency(
        &args.run,
        || measure_with(&spec, args.run.peer(), args.run.json(), &stop),
        |r, l| r.latency = Some(l),
    )?;
    print_result(
        &result,
        args.run.json,
        tcp_summary,
        tcp_to_iperf3,
        result.interrupted,
    )
}
