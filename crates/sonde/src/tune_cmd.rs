//! `sonde tune HOST`: TCP buffers sized to a path, advised and verified;
//! with `--lab LAB`, the measurement laboratory's matrix of RTTs ×
//! buffers × congestion controls, the RTT set on the lab link between
//! steps (seed 003 §3). The work is `sonde_methods::tune`'s (a tune
//! through `sonde_methods::run_method`); what is printed as it goes comes
//! from the method's events.

use crate::failure::Failure;
use crate::method_output::{method_failure, print_method, with_printer, ChartFile, MethodOut};
use crate::output::interrupt_flag;
use crate::run_args::{duration, family};
use crate::sweep_values::{self, Values};
use anyhow::anyhow;
use clap::Args;
use sonde_methods::tune::lab::run_tune_lab;
use sonde_model::method::{TuneLabSpec, TuneSpec};
use sonde_model::{ByteSize, Event, MethodEvent, MethodSpec, TcpSpec};
use sonde_run::LocalRunner;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Args)]
pub struct TuneArgs {
    /// The server: a sonde server (host name, IPv6 or IPv4 address).
    pub host: String,
    /// Server port.
    #[arg(short = 'p', long, default_value_t = 5201)]
    pub port: u16,
    /// How long each TCP run sends (baseline, verification, each lab step).
    #[arg(short = 't', long = "time", default_value = "5s", value_parser = duration)]
    pub time: Duration,
    /// How long the unpaced UDP run that finds the bottleneck sends.
    #[arg(long, default_value = "3s", value_parser = duration)]
    pub bottleneck_time: Duration,
    /// Echo requests for the RTT.
    #[arg(long, default_value_t = 10)]
    pub pings: u32,
    /// The buffer the verification runs with (default: the advised one).
    #[arg(short = 'w', long, value_name = "SIZE")]
    pub window: Option<ByteSize>,
    /// Congestion control of the TCP runs (the host's default if not given).
    #[arg(short = 'C', long = "congestion", value_name = "NAME")]
    pub congestion: Option<String>,
    /// Idle time between runs.
    #[arg(long, default_value = "1s", value_parser = duration)]
    pub gap: Duration,
    /// The laboratory: run the matrix in this lab, setting the RTT on its
    /// link (--link) between steps with `sonde lab set`.
    #[arg(long, value_name = "LAB", requires_all = ["rtts", "windows"])]
    pub lab: Option<String>,
    /// The lab link whose delay sets the RTT (half each way).
    #[arg(long, default_value_t = 1)]
    pub link: usize,
    /// RTTs of the matrix: 1ms,5ms,10ms,20ms,40ms.
    #[arg(long, value_delimiter = ',', value_parser = duration, requires = "lab")]
    pub rtts: Vec<Duration>,
    /// Socket buffers of the matrix (-w): 64K,256K,1M,8M; `auto` for the
    /// hosts' own (autotuned within their tcp_rmem and tcp_wmem).
    #[arg(long, value_name = "RANGE|LIST", value_parser = sweep_values::lab_windows, requires = "lab")]
    pub windows: Option<Values<ByteSize>>,
    /// Congestion controls of the matrix.
    #[arg(
        long = "cc",
        value_delimiter = ',',
        default_value = "cubic",
        requires = "lab"
    )]
    pub cc: Vec<String>,
    /// With --lab: draw bandwidth against RTT per buffer size to FILE (SVG).
    #[arg(long, value_name = "FILE.svg", requires = "lab")]
    pub chart: Option<PathBuf>,
    /// IPv4 only.
    #[arg(short = '4', long = "ipv4", conflicts_with = "ipv6")]
    pub ipv4: bool,
    /// IPv6 only.
    #[arg(short = '6', long = "ipv6")]
    pub ipv6: bool,
    /// A title for the output and the stored result.
    #[arg(short = 'T', long)]
    pub title: Option<String>,
    /// Print one JSON document (`"method": "tune"` or `"tune_lab"`).
    #[arg(short = 'J', long)]
    pub json: bool,
    #[command(flatten)]
    pub archive: crate::archive_args::KeepArgs,
}

impl TuneArgs {
    fn test(&self) -> TcpSpec {
        TcpSpec {
            host: self.host.clone(),
            port: self.port,
            time: self.time,
            interval: Duration::ZERO,
            congestion: self.congestion.clone(),
            family: family(self.ipv4, self.ipv6),
            title: self.title.clone(),
            ..TcpSpec::default()
        }
    }
}

pub fn run(args: TuneArgs) -> Result<(), Failure> {
    if let Some(lab) = &args.lab {
        let spec = TuneLabSpec {
            test: args.test(),
            lab: lab.clone(),
            link: args.link,
            rtts: args.rtts.clone(),
            windows: args.windows.clone().map(|v| v.0).unwrap_or_default(),
            congestion: args.cc.clone(),
            gap: args.gap,
        };
        return run_lab_spec(
            &spec,
            MethodOut::new(args.json, &args.archive),
            args.chart.as_deref(),
        );
    }
    let spec = TuneSpec {
        test: args.test(),
        bottleneck_time: args.bottleneck_time,
        pings: args.pings,
        window: args.window,
        gap: args.gap,
    };
    run_tune_spec(&spec, MethodOut::new(args.json, &args.archive))
}

fn usage(e: sonde_model::SpecError) -> Failure {
    Failure::Usage(anyhow!("invalid {}: {}", e.field, e.reason))
}

/// Runs a `tune` spec (from flags, or a file given to `sonde run`).
pub fn run_tune_spec(spec: &TuneSpec, mo: MethodOut) -> Result<(), Failure> {
    let json = mo.json;
    spec.validate().map_err(usage)?;
    let stop = interrupt_flag();
    let mut out = std::io::stdout();
    let print = move |e: &Event| {
        if let (false, Event::Method(MethodEvent::TuneStage(stage))) = (json, e) {
            let _ = writeln!(out, "{stage}");
        }
    };
    let method = MethodSpec::Tune(spec.clone());
    let result = with_printer(print, |events| {
        sonde_methods::run_method(&LocalRunner, &method, &stop, events)
    })
    .map_err(method_failure)?;
    print_method(&result, &mo, sonde_report::tune_summary)
}

/// Runs a `tune_lab` spec: the RTT is set on the lab's link through its
/// emulator, half each way.
pub fn run_lab_spec(
    spec: &TuneLabSpec,
    mo: MethodOut,
    chart: Option<&Path>,
) -> Result<(), Failure> {
    let json = mo.json;
    use sonde_lab::set::{set_emulator, EmulatorChange, Ends};
    spec.validate().map_err(usage)?;
    let chart = ChartFile::create(chart)?;
    let (lab, link) = (spec.lab.clone(), spec.link);
    let mut set_rtt = |rtt: Duration| {
        let change = EmulatorChange {
            delay: Some(rtt / 2),
            ..EmulatorChange::default()
        };
        set_emulator(&lab, link, Ends::Both, &change)
            .map(drop)
            .map_err(|e| {
                format!("setting the RTT to {rtt:?} on link {link} of lab '{lab}': {e}")
            })?;
        // The new emulator takes a moment to open its interfaces.
        std::thread::sleep(Duration::from_millis(300));
        Ok(())
    };
    let stop = interrupt_flag();
    let mut out = std::io::stdout();
    if !json {
        let _ = writeln!(out, "{}", sonde_report::tune_step_header());
    }
    let print = move |e: &Event| {
        if let (false, Event::Method(MethodEvent::TuneLabStep(s))) = (json, e) {
            let _ = writeln!(out, "{}", sonde_report::tune_step_line(s));
        }
    };
    // The lab's RTT is changed between steps: `run_method` does not run
    // a `tune_lab`.
    let result = with_printer(print, |events| {
        run_tune_lab(&LocalRunner, spec, &mut set_rtt, &stop, events)
    })
    .map_err(method_failure)?;
    if let Some(chart) = chart {
        chart.write(&sonde_report::tune_chart(&result))?;
    }
    print_method(&result, &mo, |_| String::new())
}
