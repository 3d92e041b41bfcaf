//! Lab tests: measurements across network namespaces whose links are
//! shaped, delayed and policed to a known truth. They need root
//! (`SONDE_LAB=skip` skips them elsewhere) and take
//! `common::lab_cli::serial()`: one lab measures at a time, with at most
//! the light ones (pings, a few Mbit/s) beside it.
//!
//! One test binary: each module below was a test file of its own.

#[path = "../common/mod.rs"]
mod common;

mod lab_alerts;
mod lab_campaign;
mod lab_cmd;
mod lab_compare;
mod lab_docs;
mod lab_families;
mod lab_impair;
mod lab_iperf3;
mod lab_mesh;
mod lab_ndr;
mod lab_overhead;
mod lab_ping;
mod lab_qos;
mod lab_qos_method;
mod lab_snmp;
mod lab_studies;
mod lab_studies_ipsec;
mod lab_sweep;
mod lab_tcp;
mod lab_trace;
mod lab_tune;
mod lab_udp;
