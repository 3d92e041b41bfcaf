//! Running `sonde` for its output: exit code, stdout, stderr.

use super::{sonde, stderr};
use serde_json::Value;
use std::process::Output;

/// A loopback port nothing listens on (kept free in the tests' range).
pub const CLOSED: &str = "17399";

pub fn run(args: &[&str]) -> Output {
    sonde().args(args).output().expect("run sonde")
}

/// stdout as one JSON document; panics showing both streams otherwise.
pub fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&o.stdout),
            stderr(o)
        )
    })
}
