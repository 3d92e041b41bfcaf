//! `sonde udp HOST`: paced UDP streams → a [`UdpSpec`] → the runner →
//! loss, PDR, jitter, delay, reordering and DSCP as the receiver saw them.

use crate::failure::Failure;
use crate::output::{run_and_print, Output};
use crate::run_args::RunArgs;
use crate::step_args::StepArgs;
use clap::Args;
use sonde_model::{Profile, Rate, TestSpec, UdpSpec};

#[derive(Debug, Args)]
pub struct UdpArgs {
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub step: StepArgs,
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
        UdpSpec {
            bitrate: self.bitrate,
            length: self.length,
            profile: self.profile,
            clock_synced: self.clock_synced,
            ..UdpSpec::default()
        }
        .with_core(self.run.core())
    }
}

pub fn run(args: UdpArgs) -> Result<(), Failure> {
    args.run.print_notes();
    let spec = TestSpec::Udp(UdpSpec {
        token: args.run.token()?,
        ..args.to_spec()
    });
    if args.step.is_method() {
        let output = Output::of_args(&spec, &args.run)?;
        return crate::repeat_cmd::run_repeated(spec, &args.step, output);
    }
    run_and_print(&spec, &args.run)
}
