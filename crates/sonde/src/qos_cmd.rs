//! `sonde qos`: the checks of a DiffServ premium class (`check`) and
//! foreground-against-background scenarios (`scenario`), seed 004 §4.
//! Flags spell a [`QosCheckSpec`] or a [`QosScenarioSpec`];
//! `sonde_methods::run_method` runs it (`sonde_methods::qos` itself when
//! an agent sends the background); each verdict or step is printed from
//! the method's events. Background traffic comes from a third-party
//! agent (`--via`), else from this host.

use crate::failure::Failure;
use crate::method_output::{method_failure, print_method, with_printer, ChartFile, MethodOut};
use crate::output::interrupt_flag;
use crate::run_args::{duration, family};
use crate::sweep_values::{self, Values};
use anyhow::anyhow;
use clap::{ArgGroup, Args, Subcommand};
use sonde_methods::qos::{run_qos_checks, run_qos_scenario, Senders};
use sonde_model::method::{QosCheckKind, QosCheckSpec, QosRamp, QosScenarioSpec};
use sonde_model::profile::Profile;
use sonde_model::{
    ByteSize, Dscp, DscpFlag, Event, IpFamily, MethodEvent, MethodSpec, Rate, TcpSpec, UdpSpec,
};
use sonde_run::{LocalRunner, ThirdPartyRunner};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Args)]
pub struct QosArgs {
    #[command(subcommand)]
    pub command: QosCommand,
}

#[derive(Debug, Subcommand)]
pub enum QosCommand {
    /// The premium class's marking, policing, shaping and priority, each
    /// with a verdict and its evidence.
    Check(CheckArgs),
    /// A foreground flow in a class against a background mix from a
    /// third host, ramping the foreground's rate or TCP streams.
    Scenario(ScenarioArgs),
}

/// Flags both subcommands share: where, from where, how.
#[derive(Debug, Args)]
pub struct Common {
    /// The receiver: a sonde server (host name, IPv6 or IPv4 address).
    pub host: String,
    /// The agent that sends the background (and, for `check`, a second
    /// set of marking probes): HOST or HOST:PORT of a `sonde serve` that
    /// lists this host in `third_party_allow`. Without it, this host.
    #[arg(long, value_name = "AGENT")]
    pub via: Option<String>,
    /// A file holding a token of the --via agent's (one line
    /// NAME:SECRET), for agents that run third-party tests only for
    /// tokens that may.
    #[arg(long, value_name = "FILE", env = "SONDE_TOKEN_FILE", requires = "via")]
    pub token_file: Option<std::path::PathBuf>,
    /// Server port (the receiver's).
    #[arg(short = 'p', long, default_value_t = 5201)]
    pub port: u16,
    /// UDP payload bytes of the probes and the foreground.
    #[arg(short = 'l', long, default_value_t = 1400)]
    pub length: u32,
    /// Idle time between trials, so queues drain.
    #[arg(long, default_value = "1s", value_parser = duration)]
    pub gap: Duration,
    /// IPv4 only.
    #[arg(short = '4', long = "ipv4", conflicts_with = "ipv6")]
    pub ipv4: bool,
    /// IPv6 only.
    #[arg(short = '6', long = "ipv6")]
    pub ipv6: bool,
    /// A title for the output and the stored result.
    #[arg(short = 'T', long)]
    pub title: Option<String>,
    /// Print one JSON document (`"method": "qos_check"` or
    /// `"qos_scenario"`) instead of text.
    #[arg(short = 'J', long)]
    pub json: bool,
    #[command(flatten)]
    pub archive: crate::archive_args::KeepArgs,
}

impl Common {
    fn family(&self) -> IpFamily {
        family(self.ipv4, self.ipv6)
    }

    fn udp(&self, time: Duration, class: Option<Dscp>) -> UdpSpec {
        UdpSpec {
            host: self.host.clone(),
            port: self.port,
            length: self.length,
            time,
            interval: Duration::from_secs(1),
            dscp: class,
            family: self.family(),
            title: self.title.clone(),
            ..UdpSpec::default()
        }
    }
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub common: Common,
    /// The checks, in order: marking, policing, shaping, priority, and
    /// lbe (named alone: it needs --lbe-min and --link-rate).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "marking,policing,shaping,priority"
    )]
    pub checks: Vec<QosCheckKind>,
    /// The premium class.
    #[arg(long, default_value = "EF")]
    pub premium: DscpFlag,
    /// Classes the marking check sends (unmarked, EF, AF, LBE).
    #[arg(long, value_delimiter = ',', default_value = "CS0,EF,AF41,CS1")]
    pub classes: Vec<DscpFlag>,
    /// The premium policer's expected rate, in bits/s of IP packets
    /// (6NET: 5 % of 155M = 7.75M).
    #[arg(long, value_name = "RATE")]
    pub policer: Option<Rate>,
    /// The policing probe's payload rate (default 1.3 × --policer, else 10M).
    #[arg(long, value_name = "RATE")]
    pub policing_rate: Option<Rate>,
    /// The on/off source's rate while on (mgen's 5000 packets of 1 KB in 5 s).
    #[arg(long, default_value = "8M", value_name = "RATE")]
    pub shaping_rate: Rate,
    /// The on/off source: on, off, and how long in all.
    #[arg(long, default_value = "5s", value_parser = duration)]
    pub on: Duration,
    #[arg(long, default_value = "5s", value_parser = duration)]
    pub off: Duration,
    #[arg(long, default_value = "20s", value_parser = duration)]
    pub shaping_time: Duration,
    /// Premium's rate in the priority check.
    #[arg(long, default_value = "1.5M", value_name = "RATE")]
    pub priority_rate: Rate,
    /// Best-effort background that congests the path in the priority
    /// check (004 Table 3: 200M into 155M).
    #[arg(long, value_name = "RATE")]
    pub background: Option<Rate>,
    /// The LBE check's class.
    #[arg(long, default_value = "CS1")]
    pub lbe: DscpFlag,
    /// The LBE class's minimum share of the link, in percent (6NET: 1%).
    #[arg(long, value_name = "PCT", value_parser = crate::step_args::percent)]
    pub lbe_min: Option<f64>,
    /// The congested link's rate, which the LBE share is of (6NET: 155M).
    #[arg(long, value_name = "RATE")]
    pub link_rate: Option<Rate>,
    /// The LBE probe's payload rate (default: four times its share).
    #[arg(long, value_name = "RATE")]
    pub lbe_rate: Option<Rate>,
    /// How long each marking, policing, priority and LBE probe runs.
    #[arg(short = 't', long = "time", default_value = "5s", value_parser = duration)]
    pub time: Duration,
}

impl CheckArgs {
    pub fn to_spec(&self) -> QosCheckSpec {
        let mut s = QosCheckSpec::new(self.common.udp(self.time, None));
        s.checks = self.checks.clone();
        s.premium = self.premium.dscp();
        s.classes = self.classes.iter().map(|c| c.dscp()).collect();
        s.probe_time = self.time;
        s.policer_rate = self.policer;
        s.policing_rate = self.policing_rate;
        s.shaping_rate = self.shaping_rate;
        s.shaping_on = self.on;
        s.shaping_off = self.off;
        s.shaping_time = self.shaping_time;
        s.priority_rate = self.priority_rate;
        s.background_rate = self.background;
        s.lbe = self.lbe.dscp();
        s.lbe_min = self.lbe_min.map(|p| p / 100.0);
        s.link_rate = self.link_rate;
        s.lbe_rate = self.lbe_rate;
        s.via = self.common.via.clone();
        s.gap = self.common.gap;
        s
    }
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("ramp").required(true).args(["fg_rates", "fg_streams"])))]
pub struct ScenarioArgs {
    #[command(flatten)]
    pub common: Common,
    /// The background's total rate (a mix of TCP and UDP by bytes).
    #[arg(long, value_name = "RATE")]
    pub background: Rate,
    /// The TCP share of the background's bytes, in percent.
    #[arg(long, default_value_t = 30.0, value_name = "PCT")]
    pub tcp_share: f64,
    /// UDP foreground rates: START:STOP:STEP (1.5M:7.5M:0.5M) or a list.
    #[arg(long, value_name = "RANGE|LIST", value_parser = sweep_values::rates)]
    pub fg_rates: Option<Values<Rate>>,
    /// TCP foreground stream counts: 6:45, or a list (6,10,20,45).
    #[arg(long, value_name = "RANGE|LIST", value_parser = sweep_values::streams)]
    pub fg_streams: Option<Values<u16>>,
    /// The foreground's class.
    #[arg(long, default_value = "EF")]
    pub fg_class: DscpFlag,
    /// UDP foreground: its traffic profile (`video` sends seed 004 §5.1's
    /// DiffServ-aware video, its frames marked AF11/AF12/AF13 whatever
    /// --fg-class says, and adds loss and decodable frames per frame type).
    #[arg(
        long,
        value_name = "PROFILE",
        default_value = "cbr",
        conflicts_with = "fg_streams"
    )]
    pub fg_profile: Profile,
    /// TCP foreground: each stream's socket buffer (004: 256K).
    #[arg(long, value_name = "SIZE")]
    pub fg_window: Option<ByteSize>,
    /// TCP foreground: the congestion control (this host's default if
    /// not given).
    #[arg(long, value_name = "NAME")]
    pub fg_cc: Option<String>,
    /// TCP foreground: each stream's pace (unpaced if not given).
    #[arg(long, value_name = "RATE")]
    pub fg_stream_rate: Option<Rate>,
    /// How long each step's foreground sends.
    #[arg(short = 't', long = "time", default_value = "10s", value_parser = duration)]
    pub time: Duration,
    /// The background starts this long before each step's foreground and
    /// ends this long after it.
    #[arg(long, default_value = "1s", value_parser = duration)]
    pub lead: Duration,
    /// Draw foreground loss and jitter against its rate (or streams
    /// against goodput) to FILE (SVG).
    #[arg(long, value_name = "FILE.svg")]
    pub chart: Option<PathBuf>,
}

impl ScenarioArgs {
    pub fn to_spec(&self) -> QosScenarioSpec {
        let c = &self.common;
        let class = Some(self.fg_class.dscp());
        let ramp = match (&self.fg_rates, &self.fg_streams) {
            (Some(r), _) => QosRamp::Rates(r.0.clone()),
            (_, Some(s)) => QosRamp::Streams(s.0.clone()),
            // clap's group requires one of them.
            _ => QosRamp::Rates(Vec::new()),
        };
        QosScenarioSpec {
            udp_foreground: UdpSpec {
                profile: self.fg_profile,
                ..c.udp(self.time, class)
            },
            tcp_foreground: TcpSpec {
                host: c.host.clone(),
                port: c.port,
                time: self.time,
                dscp: class,
                window: self.fg_window,
                congestion: self.fg_cc.clone(),
                bitrate: self.fg_stream_rate,
                family: c.family(),
                title: c.title.clone(),
                ..TcpSpec::default()
            },
            ramp,
            background_rate: self.background,
            background_tcp_pct: self.tcp_share,
            background_length: c.length,
            via: c.via.clone(),
            lead: self.lead,
            gap: c.gap,
        }
    }
}

pub fn run(args: QosArgs) -> Result<(), Failure> {
    match args.command {
        QosCommand::Check(a) => run_check_spec(
            &a.to_spec(),
            MethodOut::new(a.common.json, &a.common.archive),
            crate::run_args::read_token(a.common.token_file.as_deref())?,
        ),
        QosCommand::Scenario(a) => run_scenario_spec(
            &a.to_spec(),
            MethodOut::new(a.common.json, &a.common.archive),
            a.chart.as_deref(),
            crate::run_args::read_token(a.common.token_file.as_deref())?,
        ),
    }
}

/// Runs `body` with this host and the agent a spec's `via` names as the
/// senders.
fn with_senders<T>(
    via: Option<&str>,
    family: IpFamily,
    token: Option<sonde_model::Credential>,
    body: impl FnOnce(&Senders<'_>) -> Result<T, Failure>,
) -> Result<T, Failure> {
    let agent = via
        .map(|a| ThirdPartyRunner::parse(a, 5201, family))
        .transpose()
        .map_err(|e| Failure::Usage(anyhow!("via: {e}")))?
        .map(|a| ThirdPartyRunner { token, ..a });
    let senders = Senders {
        local: &LocalRunner,
        agent: agent
            .as_ref()
            .map(|a| (via.unwrap_or_default(), a as &dyn sonde_run::Runner)),
    };
    body(&senders)
}

fn usage(e: sonde_model::SpecError) -> Failure {
    Failure::Usage(anyhow!("invalid {}: {}", e.field, e.reason))
}

/// Runs a `qos_check` spec (from flags, or a file given to `sonde run`);
/// `token` proves this client to the `via` agent.
pub fn run_check_spec(
    spec: &QosCheckSpec,
    mo: MethodOut,
    token: Option<sonde_model::Credential>,
) -> Result<(), Failure> {
    let json = mo.json;
    spec.validate().map_err(usage)?;
    let stop = interrupt_flag();
    let mut out = std::io::stdout();
    if !json {
        let _ = writeln!(out, "{}", sonde_report::qos_check_header());
    }
    let print = move |e: &Event| {
        if let (false, Event::Method(MethodEvent::QosCheck(c))) = (json, e) {
            let _ = writeln!(out, "{}", sonde_report::qos_check_line(c));
        }
    };
    let method = MethodSpec::QosCheck(spec.clone());
    let result = with_senders(spec.via.as_deref(), spec.probe.family, token, |senders| {
        with_printer(print, |events| match senders.agent {
            None => sonde_methods::run_method(senders.local, &method, &stop, events),
            Some(_) => run_qos_checks(senders, spec, &stop, events),
        })
        .map_err(method_failure)
    })?;
    print_method(&result, &mo, |_| String::new())
}

/// Runs a `qos_scenario` spec, printing a row per step unless `json`.
pub fn run_scenario_spec(
    spec: &QosScenarioSpec,
    mo: MethodOut,
    chart: Option<&Path>,
    token: Option<sonde_model::Credential>,
) -> Result<(), Failure> {
    let json = mo.json;
    spec.validate().map_err(usage)?;
    let chart = ChartFile::create(chart)?;
    let streams = matches!(spec.ramp, QosRamp::Streams(_));
    let stop = interrupt_flag();
    let mut out = std::io::stdout();
    if !json {
        let _ = writeln!(out, "{}", sonde_report::qos_step_header(streams));
    }
    let print = move |e: &Event| {
        if let (false, Event::Method(MethodEvent::QosStep(s))) = (json, e) {
            let _ = writeln!(out, "{}", sonde_report::qos_step_line(s, streams));
        }
    };
    let method = MethodSpec::QosScenario(spec.clone());
    let result = with_senders(
        spec.via.as_deref(),
        spec.udp_foreground.family,
        token,
        |senders| {
            with_printer(print, |events| match senders.agent {
                None => sonde_methods::run_method(senders.local, &method, &stop, events),
                Some(_) => run_qos_scenario(senders, spec, &stop, events),
            })
            .map_err(method_failure)
        },
    )?;
    if let Some(chart) = chart {
        chart.write(&sonde_report::qos_chart(&result))?;
    }
    print_method(&result, &mo, sonde_report::qos_scenario_summary)
}
