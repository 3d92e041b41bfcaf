//! How results look to a person: text tables for the terminal, charts
//! (SVG, PNG) and the studies' reports (HTML, PDF, Markdown, JSON).
//! Functions here return strings or bytes; the caller decides where they
//! go.
//!
//! - [`summary`] (or [`tcp_summary`], [`udp_summary`], [`ping_summary`]):
//!   the closing text of a finished [`TestResult`].
//! - [`LiveText`]: the lines printed while a test runs, one call per
//!   [`sonde_model::Event`].
//! - [`to_iperf3`] (or [`tcp_to_iperf3`], [`udp_to_iperf3`]): a result in
//!   iperf3's `-J` layout; [`result_json`]: what `-J` prints.

pub mod chart;
mod columns;
pub mod heatmap;
pub mod http_chart;
pub mod http_text;
pub mod iperf3_json;
pub mod json;
pub mod live_text;
pub mod ndr_text;
pub mod overhead_text;
pub mod ping_text;
pub mod png;
pub mod qos_text;
pub mod rate_format;
pub mod repeat_text;
pub mod report;
pub mod report_build;
pub mod report_group;
pub mod report_heat;
pub mod report_http;
pub mod report_path;
pub mod result_chart;
pub mod smoke;
pub mod sweep_text;
pub mod table;
pub mod tcp_text;
pub mod trace_text;
pub mod tune_text;
pub mod udp_text;
pub mod verbose_text;

pub use http_chart::http_ramp_chart;
pub use iperf3_json::{tcp_to_iperf3, to_iperf3, udp_to_iperf3};
pub use json::{error_json, result_json, Failed, JsonLayout};
pub use live_text::{LiveLines, LiveText};
pub use ndr_text::{ndr_summary, ndr_trial_line};
pub use overhead_text::{corrected_line, overhead_summary, stack_table, stacks_compared, StackRow};
pub use ping_text::{latency_lines, ping_header, ping_reply_line, ping_summary};
pub use qos_text::{
    qos_chart, qos_check_header, qos_check_line, qos_checks_summary, qos_scenario_summary,
    qos_step_header, qos_step_line,
};
pub use rate_format::{with_rate_format, RateFormat};
pub use repeat_text::{repeat_summary, run_line};
pub use sweep_text::{limiter_lines, sweep_chart, sweep_step_line, sweep_summary};
pub use tcp_text::tcp_summary;
pub use tune_text::{tune_chart, tune_step_header, tune_step_line, tune_summary};
pub use udp_text::udp_summary;

use sonde_model::{TestKind, TestResult};

/// The closing summary of any test, by its kind.
pub fn summary(r: &TestResult) -> String {
    let mut text = match r.test {
        TestKind::Tcp => tcp_summary(r),
        TestKind::Udp => udp_summary(r),
        TestKind::Ping => ping_summary(r),
        TestKind::Http => http_text::http_summary(r),
        TestKind::Trace => trace_text::trace_summary(r),
    };
    // An iperf3 server's own output (`--get-server-output`), after the
    // summary as iperf3 prints it.
    if let Some(server) = &r.server_output {
        text.push_str("\nServer output:\n");
        text.push_str(server);
        if !server.ends_with('\n') {
            text.push('\n');
        }
    }
    text
}
