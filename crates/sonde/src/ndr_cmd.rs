//! `sonde ndr HOST`: RFC 2544 §26.1 throughput, the highest rate a trial
//! passes without loss (or under `--loss`), per frame size, found by
//! sonde-methods' search through the runner. Flags spell an [`NdrSpec`],
//! `sonde_methods::run_method` runs it; text prints a line per trial (as
//! the method's events tell them) and a table per size, `-J` the method
//! document.

use crate::failure::Failure;
use crate::output::{interrupt_flag, Output};
use crate::run_args::duration;
use crate::sink::Sink;
use crate::step_args::{family, percent};
use anyhow::anyhow;
use clap::{Args, ValueEnum};
use sonde_methods::MethodError;
use sonde_model::method::{NdrSpec, NdrTrial, SearchMode, SizeKind, StepPlan, TrialVerdict};
use sonde_model::{
    Direction, DscpFlag, Event, IpFamily, MethodEvent, MethodSpec, PeerKind, Rate, TestSpec,
    UdpSpec,
};
use sonde_report::{ndr_summary, ndr_trial_line};
use sonde_run::LocalRunner;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct NdrArgs {
    /// The server (a sonde server, or an iperf3 server).
    pub host: String,
    /// Server port.
    #[arg(short = 'p', long, default_value_t = 5201)]
    pub port: u16,
    /// Ethernet frame sizes with FCS, RFC 2544's by default; a size too
    /// small for IP, UDP and sonde's test header is raised to the
    /// smallest that carries them (IPv4 70, IPv6 90).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "64,128,256,512,1024,1280,1518",
        conflicts_with = "payloads"
    )]
    pub sizes: Vec<u32>,
    /// UDP payload sizes instead of frame sizes (as the studies gave
    /// them: 64,128,…,1408).
    #[arg(long, value_delimiter = ',')]
    pub payloads: Vec<u32>,
    /// Largest loss a passing trial may have: 0 (no drop, RFC 2544), or
    /// e.g. 0.1% for a partial-drop rate.
    #[arg(long, default_value = "0", value_parser = percent, value_name = "PCT")]
    pub loss: f64,
    /// Stop when the bounds are this close, in % of the upper bound.
    #[arg(long, default_value = "0.5%", value_parser = percent, value_name = "PCT")]
    pub resolution: f64,
    /// The first trial's rate, in Ethernet frame bits per second (default:
    /// as fast as the sender goes).
    #[arg(long, value_name = "RATE")]
    pub max_rate: Option<Rate>,
    /// Length of each search trial.
    #[arg(long, default_value = "2s", value_parser = duration, value_name = "DURATION")]
    pub trial: Duration,
    /// Length of the trial that confirms each rate found (RFC 2544 asks
    /// at least 60s; 0 skips it).
    #[arg(long, default_value = "10s", value_parser = duration, value_name = "DURATION")]
    pub confirm: Duration,
    /// Idle time between trials, so queues drain.
    #[arg(long, default_value = "1s", value_parser = duration, value_name = "DURATION")]
    pub gap: Duration,
    /// The medium's rate, for its theoretical maximum per size.
    #[arg(long, value_name = "RATE")]
    pub link_rate: Option<Rate>,
    /// How the next rate is chosen: informed (from what failed trials
    /// delivered) or bisect (halve the bracket, the classic).
    #[arg(long, value_enum, default_value = "informed")]
    pub search: SearchFlag,
    /// Search each size over these families in turn (6,4) and report the
    /// IPv6/IPv4 ratio of the rates found.
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = family,
          conflicts_with_all = ["ipv4", "ipv6"])]
    pub families: Vec<IpFamily>,
    /// Server sends, client receives.
    #[arg(short = 'R', long)]
    pub reverse: bool,
    /// DSCP of the test packets (EF, AF41, 0–63, or a TOS byte 0x..).
    #[arg(short = 'S', long, visible_alias = "tos")]
    pub dscp: Option<DscpFlag>,
    /// IPv4 only.
    #[arg(short = '4', long = "ipv4", conflicts_with = "ipv6")]
    pub ipv4: bool,
    /// IPv6 only.
    #[arg(short = '6', long = "ipv6")]
    pub ipv6: bool,
    /// Measure RTT under load in the trials (its median at the rate found).
    #[arg(long)]
    pub latency: bool,
    /// A title kept in the result.
    #[arg(short = 'T', long)]
    pub title: Option<String>,
    /// Print the method document as JSON instead of text.
    #[arg(short = 'J', long)]
    pub json: bool,
    #[command(flatten)]
    pub archive: crate::archive_args::KeepArgs,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SearchFlag {
    Informed,
    Bisect,
}

/// The flag that sets a key of the NDR spec.
fn flag_of(field: &str) -> &str {
    match field {
        "sizes" => "--sizes/--payloads",
        "loss_pct" => "--loss",
        "resolution_pct" => "--resolution",
        "max_rate_bps" => "--max-rate",
        "trial_s" => "--trial",
        "families" | "step.families" => "--families",
        "host" | "trial.host" => "HOST",
        other => other,
    }
}

impl NdrArgs {
    fn family(&self) -> IpFamily {
        crate::run_args::family(self.ipv4, self.ipv6)
    }

    pub fn to_spec(&self) -> NdrSpec {
        let (sizes, size_kind) = if self.payloads.is_empty() {
            (self.sizes.clone(), SizeKind::Frame)
        } else {
            (self.payloads.clone(), SizeKind::Payload)
        };
        NdrSpec {
            trial: UdpSpec {
                host: self.host.clone(),
                port: self.port,
                direction: if self.reverse {
                    Direction::Reverse
                } else {
                    Direction::Forward
                },
                dscp: self.dscp.map(DscpFlag::dscp),
                family: self.family(),
                title: self.title.clone(),
                peer: PeerKind::Auto,
                latency: self.latency,
                interval: Duration::ZERO,
                ..UdpSpec::default()
            },
            sizes,
            size_kind,
            loss_pct: self.loss,
            resolution_pct: self.resolution,
            max_rate: self.max_rate,
            trial_time: self.trial,
            confirm_time: self.confirm,
            gap: self.gap,
            link_rate: self.link_rate,
            search: match self.search {
                SearchFlag::Informed => SearchMode::Informed,
                SearchFlag::Bisect => SearchMode::Bisect,
            },
            step: StepPlan {
                families: self.families.clone(),
                ..StepPlan::default()
            },
        }
    }
}

pub fn run(args: NdrArgs) -> Result<(), Failure> {
    let output = Output {
        json: args.json.then_some(crate::run_args::JsonFormat::Sonde),
        archive: args.archive.kept(),
        flags: true,
        sink: Sink::Terminal,
        ..Output::default()
    };
    run_ndr_spec(args.to_spec(), output)
}

/// Runs an NDR spec (from flags, or a file given to `sonde run`: then
/// errors name the spec's keys, not flags) through
/// [`sonde_methods::run_method`], which settles `family = any` from the
/// host's address as a campaign step's does; a host without one is a
/// usage error.
pub fn run_ndr_spec(spec: NdrSpec, output: Output) -> Result<(), Failure> {
    let name = |field: &str| {
        if output.flags {
            flag_of(field).to_string()
        } else {
            field.to_string()
        }
    };
    let json = output.json.is_some();
    let test = TestSpec::Udp(spec.trial.clone());
    if let Err(e) = spec.validate() {
        let failure = Failure::Usage(anyhow!("invalid {}: {}", name(e.field), e.reason));
        return Err(output.fail(Some(&test), "invalid", failure));
    }
    let stop = interrupt_flag();
    let sink = output.sink.clone();
    let print = move |e: &Event| {
        if let (false, Event::Method(MethodEvent::NdrTrial(t))) = (json, e) {
            let _ = sink.out(&trial_line(t));
        }
    };
    let spec = MethodSpec::Ndr(spec);
    let outcome = crate::method_output::with_printer(print, |events| {
        sonde_methods::run_method(&LocalRunner, &spec, &stop, events)
    });
    let result = match outcome {
        Ok(r) => r,
        Err(MethodError::Trial { source, .. }) => {
            let kind = source.kind();
            let failure = Failure::from_run(source, output.flags);
            return Err(output.fail(Some(&test), kind, failure));
        }
        Err(MethodError::Invalid { field, detail }) => {
            let failure = Failure::Usage(anyhow!("invalid {}: {detail}", name(field)));
            return Err(output.fail(Some(&test), "invalid", failure));
        }
    };
    let out = crate::method_output::MethodOut {
        json,
        archive: output.archive.clone(),
    };
    crate::method_output::print_method(&result, &out, ndr_summary)
}

/// The line of a trial, as it finished.
fn trial_line(t: &NdrTrial) -> String {
    let verdict = match t.verdict {
        TrialVerdict::Pass => "pass",
        TrialVerdict::Loss => "fail: loss",
        TrialVerdict::QueueFilling => "fail: queue filling",
    };
    ndr_trial_line(
        t.family,
        t.frame_bytes,
        t.trial,
        t.confirming,
        t.outcome.offered_pps,
        t.outcome.delivered_pps,
        t.outcome.loss_pct,
        verdict,
    )
}
