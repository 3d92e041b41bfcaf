//! The command line: subcommands, flag parsing, exit codes.
//!
//! Exit codes: 0 success, 1 the measurement failed (unreachable, refused,
//! aborted), 2 a usage error (bad flag, bad value, bad config), 130
//! interrupted by Ctrl-C (the partial result is still printed).

use crate::failure::{one_line, Failure};
use crate::{
    campaign_cmd, compare_cmd, docs_cmd, http_cmd, incident_cmd, lab_cmd, ndr_cmd, overhead_cmd,
    ping_cmd, qos_cmd, quickstart, report_cmd, results_cmd, run_cmd, serve_cmd, status_cmd,
    sweep_cmd, tcp_cmd, token_cmd, tune_cmd, udp_cmd,
};
use clap::{CommandFactory, Parser, Subcommand};
use std::path::Path;
use std::process::ExitCode;

#[derive(Debug, Parser)]
#[command(
    name = "sonde",
    version,
    about = "Network performance measurement: throughput, loss, latency; IPv6 first, IPv4 always",
    // `-V` is iperf3's --verbose (tcp, udp); the version is `--version`.
    disable_version_flag = true,
    propagate_version = true
)]
pub struct Cli {
    /// More log output on stderr (-vv for debug).
    #[arg(short = 'v', global = true, action = clap::ArgAction::Count)]
    pub log_level: u8,
    /// The log's format: text, or one JSON object a line for log
    /// shippers (docs/serve.md, "The log").
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text, value_name = "FORMAT")]
    pub log_format: LogFormat,
    /// Print the version.
    #[arg(long, global = true, action = clap::ArgAction::Version)]
    version: Option<bool>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the measurement endpoint (foreground; logs to stderr).
    Serve(serve_cmd::ServeArgs),
    /// Measure TCP throughput to a sonde server.
    Tcp(tcp_cmd::TcpArgs),
    /// Measure UDP loss, PDR, jitter, delay and DSCP handling to a sonde server.
    Udp(udp_cmd::UdpArgs),
    /// Round-trip time: ICMP/ICMPv6 echo, or STAMP to a sonde reflector.
    Ping(ping_cmd::PingArgs),
    /// Benchmark a web service: closed or open loop, phases, percentiles, the knee.
    Http(http_cmd::HttpArgs),
    /// The path hop by hop: each hop's RTT and the DSCP the probe arrived
    /// with there (where marking changed), over ICMP/ICMPv6 echo.
    Trace(crate::trace_cmd::TraceArgs),
    /// The no-drop rate per frame size (RFC 2544 §26.1 throughput search).
    Ndr(ndr_cmd::NdrArgs),
    /// Step one variable (rate, payload, streams, window) per direction;
    /// a rate sweep names each direction's limiter.
    Sweep(sweep_cmd::SweepArgs),
    /// A DiffServ class's marking, policing, shaping and priority; and
    /// foreground-against-background scenarios (seed 004).
    Qos(qos_cmd::QosArgs),
    /// Bytes on the wire per packet for protocol stacks and tunnels;
    /// results corrected for a stack; a path's own overhead measured.
    Overhead(overhead_cmd::OverheadArgs),
    /// TCP buffers sized to a path: what limits it, the sysctl lines, a
    /// verification; or the lab matrix of RTTs × buffers (seed 003).
    Tune(tune_cmd::TuneArgs),
    /// What the archive keeps: list, show, export, import, statistics.
    Results(results_cmd::ResultsArgs),
    /// Incidents with the networks' owners (AIRT's model): constituencies,
    /// networks, contacts, incidents, mail templates, imports.
    Incident(incident_cmd::IncidentArgs),
    /// Batteries of tests on a schedule: run a plan, check one, status.
    Campaign(campaign_cmd::CampaignArgs),
    /// This agent's archive: forwarding to central archives (backlog,
    /// oldest waiting, last error) and campaigns.
    Status(status_cmd::StatusArgs),
    /// Two selections of the archive compared: means, ratio, 95 % CI, Welch's t.
    Compare(compare_cmd::CompareArgs),
    /// The studies' tables and figures from the archive: HTML, PDF, Markdown, JSON.
    Report(report_cmd::ReportArgs),
    /// Any test written as a spec in a TOML or JSON file (`-`: standard input).
    Run(run_cmd::RunSpecArgs),
    /// Emulated network paths on this machine (network namespaces; root).
    Lab(lab_cmd::LabArgs),
    /// A quick end-to-end measurement on this machine (server in-process).
    Quickstart(quickstart::QuickstartArgs),
    /// API tokens: a new one with its hash, or the hash of one, for
    /// `[http] tokens` (kept as Argon2 hashes, not in clear).
    Token(token_cmd::TokenArgs),
    /// Print a shell completion script: bash, zsh, fish, elvish or powershell.
    Completions(docs_cmd::CompletionsArgs),
    /// Print a manual page (roff), generated from these flags.
    Man(docs_cmd::ManArgs),
}

impl Command {
    /// `--logfile`, where the command has one.
    pub fn logfile(&self) -> Option<&Path> {
        match self {
            Command::Tcp(a) => a.run.logfile.as_deref(),
            Command::Udp(a) => a.run.logfile.as_deref(),
            Command::Serve(a) => a.logfile.as_deref(),
            _ => None,
        }
    }
}

/// Parses the command line; on error prints clap's whole message (what
/// is wrong, the usage line, where to find help) and returns code 2
/// (help and version print in full and return 0).
pub fn parse() -> Result<Cli, ExitCode> {
    let args: Vec<String> = std::env::args().collect();
    if let Some(what) = crate::archive_args::misspelt(&args) {
        eprintln!("error: {what}\n\nFor more information, try '--help'.");
        return Err(ExitCode::from(2));
    }
    Cli::try_parse().map_err(|e| {
        use clap::error::ErrorKind;
        match e.kind() {
            ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                let _ = e.print();
                if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                    ExitCode::from(2)
                } else {
                    ExitCode::SUCCESS
                }
            }
            _ => {
                let _ = e.print();
                ExitCode::from(2)
            }
        }
    })
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

pub fn init_logging(cli: &Cli) {
    use tracing_subscriber::fmt::writer::BoxMakeWriter;
    let default = match (&cli.command, cli.log_level) {
        (_, 2..) => "debug",
        (Command::Serve(_), _) | (_, 1) => "info",
        _ => "warn",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("SONDE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // With --logfile the logs go to the file; one that cannot be opened
    // is reported by the command, as a usage error.
    let file = cli
        .command
        .logfile()
        .and_then(|p| crate::sink::append(p).ok());
    let ansi = file.is_none() && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let writer = match file {
        Some(f) => BoxMakeWriter::new(std::sync::Mutex::new(f)),
        None => BoxMakeWriter::new(std::io::stderr),
    };
    let log = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(ansi)
        .with_target(false);
    let _ = match cli.log_format {
        LogFormat::Text => log.try_init(),
        LogFormat::Json => log
            .with_ansi(false)
            .event_format(crate::log_json::JsonLines)
            .try_init(),
    };
}

pub fn run(cli: Cli) -> ExitCode {
    let outcome = match cli.command {
        Command::Serve(a) => serve_cmd::run(a),
        Command::Tcp(a) => tcp_cmd::run(a),
        Command::Udp(a) => udp_cmd::run(a),
        Command::Ping(a) => ping_cmd::run(a),
        Command::Http(a) => http_cmd::run(a),
        Command::Trace(a) => crate::trace_cmd::run(a),
        Command::Run(a) => run_cmd::run(a),
        Command::Ndr(a) => ndr_cmd::run(a),
        Command::Sweep(a) => sweep_cmd::run(a),
        Command::Qos(a) => qos_cmd::run(a),
        Command::Overhead(a) => overhead_cmd::run(a),
        Command::Tune(a) => tune_cmd::run(a),
        Command::Results(a) => results_cmd::run(a),
        Command::Incident(a) => incident_cmd::run(a),
        Command::Campaign(a) => campaign_cmd::run(a),
        Command::Status(a) => status_cmd::run(a),
        Command::Compare(a) => compare_cmd::run(a),
        Command::Report(a) => report_cmd::run(a),
        Command::Quickstart(a) => quickstart::run(a),
        Command::Lab(a) => lab_cmd::run(a),
        Command::Completions(a) => docs_cmd::completions(a, Cli::command()),
        Command::Token(a) => token_cmd::run(a),
        Command::Man(a) => docs_cmd::man(a, Cli::command()),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(e)) => {
            eprintln!("sonde: {}", one_line(&e));
            ExitCode::from(2)
        }
        // The reader of the output went away (`sonde ... | head`): stop
        // quietly, as other tools do.
        Err(Failure::Run(e))
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe) =>
        {
            ExitCode::SUCCESS
        }
        Err(Failure::Run(e)) => {
            eprintln!("sonde: {}", one_line(&e));
            ExitCode::from(1)
        }
        Err(Failure::Interrupted) => ExitCode::from(130),
    }
}
