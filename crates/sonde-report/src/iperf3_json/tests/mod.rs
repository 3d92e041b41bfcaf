//! The layout is held to real iperf3 output: `tests/fixtures/iperf3_json/`
//! has, for TCP and UDP × forward, `-R`, `--bidir` × 1 and 2 streams,
//! sonde's `-J` result (`sonde/`) and iperf3's `-J` output for the same
//! options (`iperf3-3.12/`, `iperf3-3.21/`), all captured on loopback.

mod layout;
mod values;

use super::{tcp_to_iperf3, to_iperf3, udp_to_iperf3};
use serde_json::Value;
use sonde_model::{load_result, TcpSpec, TestResult, TestSpec, UdpSpec};
use std::path::{Path, PathBuf};

const CASES: [&str; 12] = [
    "tcp_fwd_1",
    "tcp_fwd_2",
    "tcp_rev_1",
    "tcp_rev_2",
    "tcp_bidir_1",
    "tcp_bidir_2",
    "udp_fwd_1",
    "udp_fwd_2",
    "udp_rev_1",
    "udp_rev_2",
    "udp_bidir_1",
    "udp_bidir_2",
];

fn fixture_path(dir: &str, case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/iperf3_json")
        .join(dir)
        .join(format!("{case}.json"))
}

fn fixture_text(dir: &str, case: &str) -> String {
    let path = fixture_path(dir, case);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn iperf3(version: &str, case: &str) -> Value {
    serde_json::from_str(&fixture_text(&format!("iperf3-{version}"), case)).expect(case)
}

/// sonde's result for `case` (a format-1 document, read by the loader).
fn result(case: &str) -> TestResult {
    load_result(&fixture_text("sonde", case)).expect(case)
}

fn tcp_result(case: &str) -> TestResult {
    result(case)
}

fn udp_result(case: &str) -> TestResult {
    result(case)
}

fn tcp(r: &TestResult) -> Value {
    tcp_to_iperf3(r).expect("a TCP result")
}

fn udp(r: &TestResult) -> Value {
    udp_to_iperf3(r).expect("a UDP result")
}

fn tcp_spec(r: &mut TestResult) -> &mut TcpSpec {
    match &mut r.spec {
        TestSpec::Tcp(s) => s,
        other => panic!("not tcp: {other:?}"),
    }
}

fn udp_spec(r: &TestResult) -> &UdpSpec {
    match &r.spec {
        TestSpec::Udp(s) => s,
        other => panic!("not udp: {other:?}"),
    }
}

/// sonde's result for `case`, converted.
fn converted(case: &str) -> Value {
    to_iperf3(&result(case)).expect(case)
}
