//! sonde beside peers it did not write: the stock iperf3 (its client
//! against `sonde serve`, sonde's client against `iperf3 -s`, and
//! `--json=iperf3` read by iperf3's consumers), and stamp-suite's STAMP
//! sender and reflector against sonde's.
//!
//! One test binary: each module below was a test file of its own.

#[path = "../common/mod.rs"]
mod common;

mod iperf3_clients;
mod iperf3_interop;
mod iperf3_json_layout;
mod stamp_interop;
