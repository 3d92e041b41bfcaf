//! `sonde`: flags in, a Spec to the engine, results out.

mod archive_args;
mod campaign_cmd;
mod cli;
mod compare_chart;
mod compare_cmd;
mod compare_groups;
mod docs_cmd;
mod failure;
mod http_cmd;
mod incident_cmd;
mod incident_text;
mod lab_cmd;
mod log_json;
mod method_output;
mod ndr_cmd;
mod output;
mod overhead_cmd;
mod ping_cmd;
mod qos_cmd;
mod quickstart;
mod repeat_cmd;
mod report_cmd;
mod results_changes;
mod results_cmd;
mod results_filter;
mod results_io;
mod results_prune;
mod results_stats;
mod run_args;
mod run_cmd;
mod serve_cmd;
mod serve_daemon;
mod serve_signal;
mod sink;
mod status_cmd;
mod step_args;
mod sweep_cmd;
mod sweep_values;
mod tcp_cmd;
mod token_cmd;
mod trace_cmd;
mod tune_cmd;
mod udp_cmd;

use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match cli::parse() {
        Ok(c) => c,
        Err(code) => return code,
    };
    // SONDE_PARSE_ONLY: read the command line and stop, exit 0, having
    // run nothing: how the docs' test checks every command line the docs
    // show against the flags there are (docs/development.md).
    if std::env::var_os("SONDE_PARSE_ONLY").is_some() {
        return ExitCode::SUCCESS;
    }
    cli::init_logging(&cli);
    cli::run(cli)
}
