//! `/metrics` in the OpenMetrics text format: per path, gauges of its
//! latest result in base units (bytes per second, a ratio, seconds),
//! labelled by test, source, target, direction, family and DSCP; and the
//! agent's own `sonde_agent_info`. Written by hand: the format is a few lines
//! of text, and the crates that write it want a registry of live metrics,
//! where these are read from the archive at each scrape.

use sonde_model::{Direction, IpFamily, TestResult, TestSpec};
use std::collections::BTreeSet;
use std::fmt::Write;

/// The labels of a path: test, source, target, direction, family, DSCP.
fn labels(r: &TestResult) -> Vec<(&'static str, String)> {
    let (direction, dscp) = match &r.spec {
        TestSpec::Tcp(s) => (Some(s.direction), s.dscp),
        TestSpec::Udp(s) => (Some(s.direction), s.dscp),
        TestSpec::Ping(s) => (None, s.dscp),
    };
    let direction = match direction {
        Some(Direction::Forward) => "forward",
        Some(Direction::Reverse) => "reverse",
        Some(Direction::Bidir) => "bidir",
        None => "round_trip",
    };
    let family = match sonde_model::method::family_used(r) {
        IpFamily::V6 => "v6",
        IpFamily::V4 => "v4",
        IpFamily::Any => "",
    };
    vec![
        ("test", r.spec.kind().name().to_string()),
        ("source", r.env.client.hostname.clone()),
        ("target", r.spec.host().to_string()),
        ("direction", direction.to_string()),
        ("family", family.to_string()),
        (
            "dscp",
            dscp.map_or("0".to_string(), |d| d.value().to_string()),
        ),
    ]
}

/// A label value escaped as the format asks (backslash, quote, newline).
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn label_text(l: &[(&str, String)]) -> String {
    let parts: Vec<String> = l
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    parts.join(",")
}

/// One gauge family: its name (with unit), help, and value of a result.
struct Gauge {
    name: &'static str,
    unit: &'static str,
    help: &'static str,
    value: fn(&TestResult) -> Option<f64>,
}

const GAUGES: [Gauge; 5] = [
    Gauge {
        name: "sonde_throughput_bytes_per_second",
        unit: "bytes_per_second",
        help: "Receiver goodput of the path's latest result.",
        value: |r| Some(r.summary.overall()?.throughput_bps? as f64 / 8.0),
    },
    Gauge {
        name: "sonde_loss_ratio",
        unit: "ratio",
        help: "Packets lost over packets sent, of the path's latest result.",
        value: |r| Some(r.summary.overall()?.loss_pct? / 100.0),
    },
    Gauge {
        name: "sonde_jitter_seconds",
        unit: "seconds",
        help: "RFC 3550 jitter of the path's latest result.",
        value: |r| Some(r.summary.overall()?.jitter_ms? / 1e3),
    },
    Gauge {
        name: "sonde_rtt_seconds",
        unit: "seconds",
        help: "Median round-trip time of the path's latest result.",
        value: |r| Some(r.summary.overall()?.rtt_ms?.p50 / 1e3),
    },
    Gauge {
        name: "sonde_result_timestamp_seconds",
        unit: "seconds",
        help: "When the path's latest result started (Unix time).",
        value: |r| {
            r.start
                .0
                .duration_since(std::time::UNIX_EPOCH)
                .ok()
                .map(|d| d.as_secs_f64())
        },
    },
];

/// The latest result of each path among `newest_first`.
pub fn latest_per_path(newest_first: &[TestResult]) -> Vec<&TestResult> {
    let mut seen = BTreeSet::new();
    newest_first
        .iter()
        .filter(|r| seen.insert(label_text(&labels(r))))
        .collect()
}

/// The metrics page of `latest` (one result per path).
pub fn render(latest: &[&TestResult]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# TYPE sonde_agent info\n# HELP sonde_agent This agent.\nsonde_agent_info{{version=\"{}\"}} 1",
        escape(sonde_model::SONDE_VERSION)
    );
    for g in &GAUGES {
        let _ = writeln!(
            out,
            "# TYPE {0} gauge\n# UNIT {0} {1}\n# HELP {0} {2}",
            g.name, g.unit, g.help
        );
        for r in latest {
            if let Some(v) = (g.value)(r).filter(|v| v.is_finite()) {
                let _ = writeln!(out, "{}{{{}}} {v}", g.name, label_text(&labels(r)));
            }
        }
    }
    out.push_str("# EOF\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_model::{Figures, HostEnv, PeerKind, TcpSpec, TestEnv, Timestamp};

    fn tcp(host: &str, bps: u64) -> TestResult {
        let mut r = TestResult::new(
            TestSpec::Tcp(TcpSpec {
                host: host.into(),
                ..TcpSpec::default()
            }),
            TestEnv::between(HostEnv::default(), HostEnv::default(), PeerKind::Sonde),
            Timestamp::now(),
        );
        r.summary.forward = Some(Figures {
            direction: Some(Direction::Forward),
            throughput_bps: Some(bps),
            ..Figures::default()
        });
        r
    }

    #[test]
    fn the_newest_result_of_each_path_is_shown_in_base_units() {
        let newest_first = [tcp("b", 8_000), tcp("b", 16_000), tcp("c\"d", 800)];
        let latest = latest_per_path(&newest_first);
        assert_eq!(latest.len(), 2);
        let text = render(&latest);
        assert!(
            text.contains("target=\"b\",direction=\"forward\""),
            "{text}"
        );
        assert!(text.contains("} 1000\n"), "{text}");
        assert!(!text.contains("} 2000\n"), "{text}");
        assert!(text.contains("target=\"c\\\"d\""), "{text}");
        assert!(text.ends_with("# EOF\n"));
    }
}
