//! `sonde tcp HOST`: flags as iperf3 users know them → a [`TcpSpec`] →
//! the runner → printed.

use crate::failure::Failure;
use crate::output::{run_and_print, Output};
use crate::run_args::RunArgs;
use crate::step_args::StepArgs;
use clap::Args;
use sonde_model::{ByteSize, Rate, TcpSpec, TestSpec};

#[derive(Debug, Args)]
pub struct TcpArgs {
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub step: StepArgs,
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
    /// Set TCP_NODELAY (no Nagle delay) on the data streams.
    #[arg(short = 'N', long)]
    pub no_delay: bool,
    /// Send without copying the data from user space (sendfile from a memory file, as iperf3 -Z).
    #[arg(short = 'Z', long)]
    pub zerocopy: bool,
}

impl TcpArgs {
    /// The flags as a spec (checked by the runner's `validate`).
    pub fn to_spec(&self) -> TcpSpec {
        TcpSpec {
            window: self.window,
            congestion: self.congestion.clone(),
            mss: self.mss,
            length: self.length,
            // iperf3's `-b 0` means unpaced, which the spec says as None.
            bitrate: self.bitrate.filter(|b| b.bps() > 0),
            no_delay: self.no_delay,
            zerocopy: self.zerocopy,
            ..TcpSpec::default()
        }
        .with_core(self.run.core())
    }
}

pub fn run(args: TcpArgs) -> Result<(), Failure> {
    args.run.print_notes();
    let spec = TestSpec::Tcp(TcpSpec {
        token: args.run.token()?,
        ..args.to_spec()
    });
    if args.step.is_method() {
        let output = Output::of_args(&spec, &args.run)?;
        return crate::repeat_cmd::run_repeated(spec, &args.step, output);
    }
    run_and_print(&spec, &args.run)
}
