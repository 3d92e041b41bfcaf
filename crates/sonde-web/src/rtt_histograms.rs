//! RTT histograms of the pings this agent ran since it started, by path,
//! in smokeping_prober's buckets: counted as answers arrive (the live
//! bus), written on `/metrics`.

use crate::openmetrics::label_text;
use sonde_model::IpFamily;
use std::fmt::Write;

/// The upper bounds of the RTT histogram's buckets, in seconds:
/// smokeping_prober's, 50 µs doubling 20 times (to 26.2 s).
pub fn rtt_buckets() -> [f64; 20] {
    let mut b = [0.0; 20];
    let mut v = 0.000_05;
    for x in &mut b {
        *x = v;
        v *= 2.0;
    }
    b
}

/// One path's RTT histogram: counts per bucket (the last: above every
/// bound), their sum and count.
#[derive(Debug, Clone, Default)]
struct Histogram {
    buckets: [u64; 21],
    sum: f64,
    count: u64,
}

/// RTT histograms of the pings this agent ran since it started, by path.
#[derive(Debug, Default)]
pub struct RttHistograms {
    paths: std::sync::Mutex<std::collections::BTreeMap<String, Histogram>>,
}

impl RttHistograms {
    /// Counts one answer of `spec`'s path, `rtt_s` seconds.
    pub fn observe(&self, spec: &sonde_model::PingSpec, rtt_s: f64) {
        if !rtt_s.is_finite() || rtt_s < 0.0 {
            return;
        }
        let family = match spec.family {
            IpFamily::V6 => "v6",
            IpFamily::V4 => "v4",
            IpFamily::Any => "",
        };
        let key = label_text(&[
            ("test", "ping".to_string()),
            ("target", spec.host.clone()),
            ("family", family.to_string()),
            (
                "dscp",
                spec.dscp.map_or("0".to_string(), |d| d.value().to_string()),
            ),
        ]);
        let i = rtt_buckets().iter().position(|b| rtt_s <= *b).unwrap_or(20);
        let mut paths = self.paths.lock().unwrap_or_else(|e| e.into_inner());
        let h = paths.entry(key).or_default();
        h.buckets[i] += 1;
        h.sum += rtt_s;
        h.count += 1;
    }

    pub(crate) fn render(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "# TYPE sonde_ping_rtt_seconds histogram\n# UNIT sonde_ping_rtt_seconds seconds\n# HELP \
             sonde_ping_rtt_seconds Round-trip times of the pings this agent ran since it started."
        );
        let paths = self.paths.lock().unwrap_or_else(|e| e.into_inner());
        for (labels, h) in paths.iter() {
            let mut cumulative = 0;
            for (i, bound) in rtt_buckets().iter().enumerate() {
                cumulative += h.buckets[i];
                let _ = writeln!(
                    out,
                    "sonde_ping_rtt_seconds_bucket{{{labels},le=\"{bound}\"}} {cumulative}"
                );
            }
            let _ = writeln!(
                out,
                "sonde_ping_rtt_seconds_bucket{{{labels},le=\"+Inf\"}} {}\nsonde_ping_rtt_seconds_sum{{{labels}}} {}\nsonde_ping_rtt_seconds_count{{{labels}}} {}",
                h.count, h.sum, h.count
            );
        }
    }
}
