//! Running `sonde` for its output: exit code, stdout, stderr.

use super::{sonde, stderr};
use serde_json::Value;
use std::process::Output;
use std::time::{Duration, Instant};

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

/// `sonde status --json` of the archive `db`.
pub fn status(db: &std::path::Path) -> Value {
    let out = run(&["status", "--json", &format!("--archive={}", db.display())]);
    assert!(out.status.success(), "{}", stderr(&out));
    json(&out)
}

/// Waits up to `secs` for `db`'s `sonde status` to satisfy `cond`; the
/// last status read.
pub fn status_until(db: &std::path::Path, secs: u64, cond: impl Fn(&Value) -> bool) -> Value {
    let end = Instant::now() + Duration::from_secs(secs);
    loop {
        let s = status(db);
        if cond(&s) || Instant::now() > end {
            return s;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// `db`'s forwarding destination `name`, as `sonde status` shows it.
pub fn forwarding(db: &std::path::Path, name: &str) -> Value {
    status(db)["forwarding"]
        .as_array()
        .and_then(|all| all.iter().find(|f| f["destination"] == name))
        .cloned()
        .unwrap_or(Value::Null)
}

/// The ids of every result the archive `db` keeps.
pub fn result_ids(db: &std::path::Path) -> std::collections::BTreeSet<String> {
    let archive = format!("--archive={}", db.display());
    let out = run(&["results", &archive, "list", "--json", "--limit", "100000"]);
    assert!(out.status.success(), "{}", stderr(&out));
    json(&out)
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["id"].as_str().map(str::to_string))
        .collect()
}
