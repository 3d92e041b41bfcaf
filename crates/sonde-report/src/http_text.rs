//! `sonde http`'s summary: requests and their rate, statuses and errors,
//! ab's "Connection Times (ms)" table, latency percentiles (corrected and
//! uncorrected in an open loop), and a ramp's steps with its knee.

use sonde_model::{HttpFigures, HttpSpec, LatencyPercentiles, PhaseStats, TestResult, TestSpec};
use std::fmt::Write;

fn counts(map: &std::collections::BTreeMap<String, u64>) -> String {
    map.iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn phase_row(out: &mut String, name: &str, p: Option<&PhaseStats>) {
    if let Some(p) = p {
        let _ = writeln!(
            out,
            "{:<12}{:>9.3}{:>9.3}{:>9.3}{:>9.3}{:>10.3}",
            format!("{name}:"),
            p.min,
            p.mean,
            p.sd,
            p.median,
            p.max
        );
    }
}

/// One line of percentiles.
pub fn percentile_line(l: &LatencyPercentiles) -> String {
    format!(
        "50% {:.3}  75% {:.3}  90% {:.3}  99% {:.3}  99.9% {:.3}  99.99% {:.3}  max {:.3}",
        l.p50, l.p75, l.p90, l.p99, l.p99_9, l.p99_99, l.max
    )
}

fn ramp(out: &mut String, h: &HttpFigures, spec: &HttpSpec) {
    if h.steps.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nRamp:");
    let _ = writeln!(
        out,
        "{:>6}{:>14}{:>12}{:>11}{:>11}{:>9}",
        "step", "load", "req/s", "p50 ms", "p99 ms", "errors"
    );
    for (i, s) in h.steps.iter().enumerate() {
        let load = match (s.connections, s.rate) {
            (Some(c), _) => format!("{c} conn"),
            (None, Some(r)) => format!("{r} req/s"),
            _ => String::new(),
        };
        let (p50, p99) = s
            .latency_ms
            .map_or((f64::NAN, f64::NAN), |l| (l.p50, l.p99));
        let mark = if h.knee == Some(i) { "  <- knee" } else { "" };
        let _ = writeln!(
            out,
            "{:>6}{:>14}{:>12.1}{:>11.3}{:>11.3}{:>9}{mark}",
            i + 1,
            load,
            s.requests_per_s,
            p50,
            p99,
            s.errors
        );
    }
    let rise = spec.ramp.as_ref().map_or(0.0, |r| r.rise_pct);
    if let Some(n) = h.optimal_connections {
        let _ = writeln!(
            out,
            "optimal load: {n:.1} connections (the best throughput × the best median latency)"
        );
    }
    match h.knee {
        Some(i) => {
            let _ = writeln!(
                out,
                "knee: step {} — the median latency rose more than {rise} % over the first step's, or errors began",
                i + 1
            );
        }
        None => {
            let _ = writeln!(out, "knee: none within these steps (rise over {rise} %)");
        }
    }
}

/// The summary of an HTTP result.
pub fn http_summary(r: &TestResult) -> String {
    let (Some(h), TestSpec::Http(spec)) = (&r.http, &r.spec) else {
        return String::new();
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Requests:   {} in {:.2} s: {:.1} req/s, {:.2} Mbit/s received{}",
        h.requests,
        r.duration_s,
        h.requests_per_s,
        h.throughput_bps as f64 / 1e6,
        if r.interrupted { " (interrupted)" } else { "" }
    );
    if let Some(rate) = h.rate {
        let _ = writeln!(out, "Rate asked: {rate} req/s (open loop)");
    }
    let _ = writeln!(out, "Status:     {}", counts(&h.status));
    if h.errors > 0 {
        let _ = writeln!(
            out,
            "Errors:     {} ({})",
            h.errors,
            if h.errors_by_kind.is_empty() {
                "answers of 400 and over".to_string()
            } else {
                counts(&h.errors_by_kind)
            }
        );
    }
    let p = &h.phases_ms;
    let _ = writeln!(out, "\nConnection Times (ms)");
    let _ = writeln!(
        out,
        "{:<12}{:>9}{:>9}{:>9}{:>9}{:>10}",
        "", "min", "mean", "[+/-sd]", "median", "max"
    );
    phase_row(&mut out, "DNS", p.dns.as_ref());
    phase_row(&mut out, "Connect", p.connect.as_ref());
    phase_row(&mut out, "TLS", p.tls.as_ref());
    phase_row(&mut out, "Processing", p.processing.as_ref());
    phase_row(&mut out, "Waiting", p.waiting.as_ref());
    phase_row(&mut out, "Transfer", p.transfer.as_ref());
    phase_row(&mut out, "Total", p.total.as_ref());
    if let Some(l) = &h.latency_ms {
        let from = if h.uncorrected_latency_ms.is_some() {
            " from each request's intended send time"
        } else {
            ""
        };
        let _ = writeln!(out, "\nLatency (ms){from}:\n  {}", percentile_line(l));
    }
    if let Some(u) = &h.uncorrected_latency_ms {
        let _ = writeln!(
            out,
            "Uncorrected (from the actual send, as a closed-loop tool reports):\n  {}",
            percentile_line(u)
        );
    }
    ramp(&mut out, h, spec);
    out
}
