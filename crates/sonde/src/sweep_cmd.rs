//! `sonde sweep HOST`: one variable stepped (offered rate, payload,
//! streams, TCP window), the rest held, each direction as its own
//! series; a rate sweep names the limiter of each direction. Flags spell
//! a [`SweepSpec`]; `sonde_methods::run_method` runs it, and each step's
//! line is printed from the method's events.

use crate::failure::Failure;
use crate::method_output::{method_failure, print_method, with_printer, ChartFile, MethodOut};
use crate::output::interrupt_flag;
use crate::run_args::{duration, family};
use crate::step_args::StepArgs;
use crate::sweep_values::{self, Values};
use anyhow::anyhow;
use clap::{ArgGroup, Args};
use sonde_model::method::{SweepSpec, SweepVariable};
use sonde_model::{
    ByteSize, Direction, DscpFlag, Event, MethodEvent, MethodSpec, Rate, TcpSpec, TestSpec, UdpSpec,
};
use sonde_run::LocalRunner;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("variable").required(true).args(["rates", "payloads", "streams", "windows"])))]
pub struct SweepArgs {
    /// The server: host name, IPv6 or IPv4 address.
    pub host: String,
    /// Step the offered rate per stream: START:STOP:STEP (1M:120M:2M) or
    /// a list (10M,50M,90M). Names the limiter of each direction.
    #[arg(long, value_name = "RANGE|LIST", value_parser = sweep_values::rates)]
    pub rates: Option<Values<Rate>>,
    /// Step the UDP payload (or TCP write) bytes: 64,128,… or 128:1408:128.
    #[arg(long, value_name = "RANGE|LIST", value_parser = sweep_values::payloads)]
    pub payloads: Option<Values<u32>>,
    /// Step the number of parallel streams: 1:45 or 1,2,4,8.
    #[arg(long, value_name = "RANGE|LIST", value_parser = sweep_values::streams)]
    pub streams: Option<Values<u16>>,
    /// Step the TCP socket buffer: 64K,256K,1M (implies --tcp).
    #[arg(long, value_name = "RANGE|LIST", value_parser = sweep_values::windows)]
    pub windows: Option<Values<ByteSize>>,
    /// UDP tests (the default, except for --windows).
    #[arg(long, conflicts_with_all = ["tcp", "windows"])]
    pub udp: bool,
    /// TCP tests.
    #[arg(long)]
    pub tcp: bool,
    /// The directions, each measured as its own series: forward, reverse,
    /// bidir (both at once).
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "forward", value_parser = sweep_values::direction)]
    pub directions: Vec<Direction>,
    /// How long each step sends.
    #[arg(short = 't', long = "time", default_value = "5s", value_parser = duration)]
    pub time: Duration,
    /// Idle time between steps, so queues drain.
    #[arg(long, default_value = "1s", value_parser = duration)]
    pub gap: Duration,
    /// Rate per stream held while another variable is stepped (UDP
    /// default 1M; TCP default unpaced).
    #[arg(short = 'b', long)]
    pub bitrate: Option<Rate>,
    /// Payload bytes held (UDP payload, TCP write) while another
    /// variable is stepped.
    #[arg(short = 'l', long, default_value_t = 1400)]
    pub length: u32,
    /// Parallel streams held.
    #[arg(short = 'P', long, default_value_t = 1)]
    pub parallel: u16,
    /// DSCP of the data packets (EF, AF41, CS1, 0–63, or a TOS byte 0x..).
    #[arg(short = 'S', long, visible_alias = "tos")]
    pub dscp: Option<DscpFlag>,
    /// IPv4 only.
    #[arg(short = '4', long = "ipv4", conflicts_with = "ipv6")]
    pub ipv4: bool,
    /// IPv6 only.
    #[arg(short = '6', long = "ipv6")]
    pub ipv6: bool,
    /// Server port.
    #[arg(short = 'p', long, default_value_t = 5201)]
    pub port: u16,
    /// With --rates: at most N extra trials per direction narrowing a
    /// punisher's knee by bisection (0: none).
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub refine: u32,
    /// Draw goodput and PDR against offered load per direction to FILE
    /// (SVG).
    #[arg(long, value_name = "FILE.svg")]
    pub chart: Option<PathBuf>,
    /// A title for the output and the stored result.
    #[arg(short = 'T', long)]
    pub title: Option<String>,
    /// Print one JSON document (`"method": "sweep"`) instead of text.
    #[arg(short = 'J', long)]
    pub json: bool,
    #[command(flatten)]
    pub archive: crate::archive_args::KeepArgs,
    #[command(flatten)]
    pub step: StepArgs,
}

impl SweepArgs {
    fn variable(&self) -> SweepVariable {
        match (&self.rates, &self.payloads, &self.streams, &self.windows) {
            (Some(v), ..) => SweepVariable::Rates(v.0.clone()),
            (_, Some(v), ..) => SweepVariable::Payloads(v.0.clone()),
            (_, _, Some(v), _) => SweepVariable::Streams(v.0.clone()),
            (.., Some(v)) => SweepVariable::Windows(v.0.clone()),
            // clap's group requires one of them.
            _ => SweepVariable::Rates(Vec::new()),
        }
    }

    /// The test of each step, before the variable is set.
    fn test(&self) -> TestSpec {
        let fam = family(self.ipv4, self.ipv6);
        let dscp = self.dscp.map(DscpFlag::dscp);
        if self.tcp || self.windows.is_some() {
            TcpSpec {
                host: self.host.clone(),
                port: self.port,
                time: self.time,
                interval: Duration::ZERO,
                parallel: self.parallel,
                bitrate: self.bitrate,
                length: ByteSize::from_bytes(u64::from(self.length)),
                dscp,
                family: fam,
                title: self.title.clone(),
                ..TcpSpec::default()
            }
            .into()
        } else {
            UdpSpec {
                host: self.host.clone(),
                port: self.port,
                time: self.time,
                interval: Duration::ZERO,
                parallel: self.parallel,
                bitrate: self.bitrate.unwrap_or(Rate::from_bps(1_000_000)),
                length: self.length,
                dscp,
                family: fam,
                title: self.title.clone(),
                ..UdpSpec::default()
            }
            .into()
        }
    }

    pub fn to_spec(&self) -> SweepSpec {
        let mut directions = Vec::new();
        for d in &self.directions {
            if !directions.contains(d) {
                directions.push(*d);
            }
        }
        SweepSpec {
            test: self.test(),
            variable: self.variable(),
            directions,
            gap: self.gap,
            step: self.step.plan(),
            refine_trials: self.refine,
        }
    }
}

pub fn run(args: SweepArgs) -> Result<(), Failure> {
    run_sweep_spec(
        &args.to_spec(),
        MethodOut::new(args.json, &args.archive),
        args.chart.as_deref(),
        true,
    )
}

/// The flag that sets a key of the sweep's spec.
fn flag_of(field: &str) -> &str {
    match field {
        "variable.rates" => "--rates",
        "variable.payloads" => "--payloads",
        "variable.streams" => "--streams",
        "variable.windows" => "--windows",
        "directions" => "--directions",
        "repeat.runs" | "step.repeat.runs" => "--repeat",
        "repeat.stddev_pct" | "step.repeat.stddev_pct" => "--until-stddev",
        "repeat.min_runs" | "repeat.max_runs" | "step.repeat.min_runs" | "step.repeat.max_runs" => {
            "--min-runs/--max-runs"
        }
        "families" | "step.families" => "--families",
        other => other,
    }
}

/// Runs a sweep's spec (from flags, or a file given to `sonde run`:
/// then errors name the spec's keys), printing a line per step unless
/// `json`, and drawing `chart` if asked.
pub fn run_sweep_spec(
    spec: &SweepSpec,
    mo: MethodOut,
    chart: Option<&std::path::Path>,
    flags: bool,
) -> Result<(), Failure> {
    let json = mo.json;
    let name = |field: &str| {
        if flags {
            flag_of(field).to_string()
        } else {
            field.to_string()
        }
    };
    if let Err(e) = spec.validate() {
        return Err(Failure::Usage(anyhow!(
            "invalid {}: {}",
            name(e.field),
            e.reason
        )));
    }
    if let Err(e) = spec.test.validate() {
        let key = if flags {
            crate::output::flag_of(e.field).to_string()
        } else {
            format!("test.{}", e.field)
        };
        return Err(Failure::Usage(anyhow!("invalid {key}: {}", e.reason)));
    }
    let chart = ChartFile::create(chart)?;
    let stop = interrupt_flag();
    let kind = spec.variable.kind();
    let print = |e: &Event| {
        if let (false, Event::Method(MethodEvent::SweepStep(s))) = (json, e) {
            let _ = writeln!(
                std::io::stdout(),
                "{}",
                sonde_report::sweep_step_line(kind, s)
            );
        }
    };
    let method = MethodSpec::Sweep(spec.clone());
    let result = with_printer(print, |events| {
        sonde_methods::run_method(&LocalRunner, &method, &stop, events)
    })
    .map_err(method_failure)?;
    if let Some(chart) = chart {
        chart.write(&sonde_report::sweep_chart(&result))?;
    }
    print_method(&result, &mo, sonde_report::sweep_summary)
}
