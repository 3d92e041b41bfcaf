//! The stock iperf3 client in tests: the system's, and a newer one named
//! by `SONDE_IPERF3_NEWER`, run against a server on loopback.

use serde_json::Value;
use std::process::{Command, Output};

/// The iperf3 binaries to run (as clients, or as servers for sonde's
/// client): the system's, and a newer one if `SONDE_IPERF3_NEWER` names
/// its binary (see docs/iperf3.md).
pub fn clients() -> Vec<String> {
    let mut all = vec!["iperf3".to_string()];
    if let Some(newer) = std::env::var_os("SONDE_IPERF3_NEWER") {
        all.push(newer.to_string_lossy().into_owned());
    }
    all
}

pub fn iperf3(bin: &str, host: &str, port: u16, args: &[&str]) -> Output {
    Command::new(bin)
        .args(["-c", host, "-p", &port.to_string()])
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run {bin}: {e}"))
}

pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A successful `-J` run's document.
pub fn json(bin: &str, host: &str, port: u16, args: &[&str]) -> Value {
    let mut all = vec!["-J"];
    all.extend_from_slice(args);
    let out = iperf3(bin, host, port, &all);
    let what = format!("{bin} -c {host} {args:?}");
    assert!(out.status.success(), "{what}: {}", text(&out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{what}: {e}"))
}

pub fn n(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}
