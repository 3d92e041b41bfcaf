//! The `sonde` command line on this machine alone: usage errors, output
//! formats, schemas, help, completions, the archive's and campaigns'
//! commands, and tcp, udp, ping and the methods against a `sonde serve` on
//! loopback.
//!
//! One test binary: each module below was a test file of its own.

#[path = "../common/mod.rs"]
mod common;

mod archive_cli;
mod bad_input;
mod campaign_cli;
mod cli_json_failure;
mod cli_output;
mod client_flags;
mod compare_groups_cli;
mod completions;
mod directions_cli;
mod docs_run;
mod fixtures;
mod help_snapshots;
mod json_schema;
mod method_schema;
mod ndr_cli;
mod overhead_cli;
mod ping_json_schema;
mod ping_loopback;
mod qos_cli;
mod repeat_cli;
mod report_cli;
mod spec_files;
mod sweep_cli;
mod tcp_loopback;
mod trace_cli;
mod tune_cli;
mod udp_json_schema;
mod udp_loopback;
