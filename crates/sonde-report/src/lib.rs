//! How results look to a person: text tables for the terminal now, charts
//! for the portal and reports later. Functions here return strings; the
//! caller decides where they go.

pub mod iperf3_json;
pub mod ping_text;
pub mod tcp_text;
pub mod udp_text;

pub use iperf3_json::{tcp_to_iperf3, udp_to_iperf3};
pub use ping_text::{latency_lines, ping_header, ping_reply_line, ping_summary};
pub use tcp_text::{tcp_summary, LiveTable};
pub use udp_text::{udp_interval, udp_summary};
