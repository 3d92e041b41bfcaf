//! `sonde ping` as text: a line per answer and a summary in the shape of
//! iputils `ping`, plus percentiles, and a table of RTT against size for
//! a sweep. A count that is not known is "-", never 0.

use crate::columns::{count_or_dash, float_or_dash};
use sonde_model::ping::PingReply;
use sonde_model::{Figures, PingSeries, ProbeMethod, TestResult};
use std::fmt::Write;

/// The header line of a series, as `ping` prints it.
pub fn ping_header(target: &str, host: &str, size: u32, method: ProbeMethod) -> String {
    let shown = if host == target || host.is_empty() {
        target.to_string()
    } else {
        format!("{host} ({target})")
    };
    format!("PING {shown}: {size} data bytes ({method})\n")
}

/// The bytes an answer line shows for a request of `size` data bytes:
/// ICMP adds its 8-byte echo header, a STAMP size is the whole packet.
pub fn reply_bytes(size: u32, method: ProbeMethod) -> u32 {
    match method {
        ProbeMethod::IcmpDatagram | ProbeMethod::IcmpRaw => size.saturating_add(8),
        ProbeMethod::Stamp | ProbeMethod::StampAuthenticated => size,
    }
}

/// One answer: "64 bytes from …: icmp_seq=3 ttl=61 time=40.12 ms" as
/// iputils prints ICMP echo (`seq=` for STAMP); with `clock_synced`, a
/// STAMP answer's one-way delays too.
pub fn ping_reply_line(
    target: &str,
    r: &PingReply,
    method: ProbeMethod,
    clock_synced: bool,
) -> String {
    let (bytes, label) = match method {
        ProbeMethod::IcmpDatagram | ProbeMethod::IcmpRaw => {
            (reply_bytes(r.size, method), "icmp_seq")
        }
        ProbeMethod::Stamp | ProbeMethod::StampAuthenticated => (r.size, "seq"),
    };
    let mut line = format!("{bytes} bytes from {target}: {label}={}", r.seq);
    if let Some(t) = r.ttl {
        let _ = write!(line, " ttl={t}");
    }
    let _ = write!(line, " time={:.3} ms", r.rtt_ms);
    match (r.forward_ms, r.backward_ms, r.dwell_ms) {
        (Some(f), Some(b), Some(d)) if clock_synced => {
            let _ = write!(
                line,
                " (out {f:.3} ms, back {b:.3} ms, reflector {:.1} µs)",
                d * 1e3
            );
        }
        (_, _, Some(d)) => {
            let _ = write!(line, " (reflector {:.1} µs)", d * 1e3);
        }
        _ => {}
    }
    if r.duplicate {
        line.push_str(" (DUP!)");
    }
    line.push('\n');
    line
}

fn counts_lines(out: &mut String, c: &Figures, duration_s: f64) {
    let _ = write!(
        out,
        "{} packets transmitted, {} received, ",
        count_or_dash(c.sent_packets),
        count_or_dash(c.received_packets)
    );
    if let Some(d) = c.duplicates.filter(|d| *d > 0) {
        let _ = write!(out, "+{d} duplicates, ");
    }
    if let Some(r) = c.reordered.filter(|r| *r > 0) {
        let _ = write!(out, "{r} reordered, ");
    }
    let _ = writeln!(
        out,
        "{}% packet loss, time {:.0}ms",
        float_or_dash(c.loss_pct, 3),
        duration_s * 1e3
    );
    if let Some(r) = &c.rtt_ms {
        let _ = writeln!(
            out,
            "rtt min/avg/max/mdev = {:.3}/{:.3}/{:.3}/{:.3} ms",
            r.min, r.avg, r.max, r.mdev
        );
        let _ = writeln!(
            out,
            "rtt p50/p90/p99 = {:.3}/{:.3}/{:.3} ms",
            r.p50, r.p90, r.p99
        );
    }
}

/// The Class of Service TLV's story (`--cos`): the DSCP sent and asked
/// for back, and what arrived at the reflector and back here, by DSCP.
fn cos_lines(out: &mut String, s: &PingSeries, sized: bool) {
    let Some(c) = &s.cos else { return };
    let counts = |d: &sonde_model::udp_report::DscpCounts| {
        if d.is_empty() {
            return "nothing".to_string();
        }
        d.iter()
            .map(|(v, n)| match sonde_model::Dscp::new(v) {
                Some(dscp) => format!("{dscp} ×{n}"),
                None => format!("{v} ×{n}"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let at = if sized {
        format!(" ({} bytes)", s.size_bytes)
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "class of service{at}: sent {}, asked back {}; at the reflector {}; back here {}",
        c.sent,
        c.sent,
        counts(&c.at_reflector),
        counts(&c.returned)
    );
    if c.not_understood > 0 {
        let _ = writeln!(
            out,
            "  {} replies without the reflector's reading: it does not know RFC 8972's Class of Service TLV",
            c.not_understood
        );
    }
}

/// Which clocks the round trips were taken with, over every series:
/// `timestamps: send kernel 10; receive kernel 10`.
fn timestamps_line(out: &mut String, series: &[PingSeries]) {
    let mut used = sonde_model::ping::TimestampsUsed::default();
    for t in series.iter().filter_map(|s| s.timestamps.as_ref()) {
        for (sum, one) in [(&mut used.send, &t.send), (&mut used.receive, &t.receive)] {
            sum.hardware += one.hardware;
            sum.kernel += one.kernel;
            sum.user += one.user;
        }
    }
    let side = |c: &sonde_model::ping::StampCounts| {
        [
            ("hardware", c.hardware),
            ("kernel", c.kernel),
            ("user", c.user),
        ]
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
    };
    if used != sonde_model::ping::TimestampsUsed::default() {
        let _ = writeln!(
            out,
            "timestamps: send {}; receive {}",
            side(&used.send),
            side(&used.receive)
        );
    }
}

fn one_way_lines(out: &mut String, s: &PingSeries) {
    let Some(o) = &s.one_way else { return };
    let f = |name: &str, v: &Option<sonde_model::RttStats>| {
        v.map(|r| {
            format!(
                "{name} min/avg/max = {:.3}/{:.3}/{:.3} ms",
                r.min, r.avg, r.max
            )
        })
    };
    if o.clock_synced {
        for line in [
            f("one-way out", &o.forward_ms),
            f("one-way back", &o.backward_ms),
        ]
        .into_iter()
        .flatten()
        {
            let _ = writeln!(out, "{line}");
        }
    }
    if let Some(d) = &o.dwell_ms {
        let _ = writeln!(
            out,
            "reflector dwell avg {:.1} µs, max {:.1} µs",
            d.avg * 1e3,
            d.max * 1e3
        );
    }
}

/// Latency under load in two lines: idle and loaded RTT, and the increase.
pub fn latency_lines(l: &sonde_model::LatencyUnderLoad) -> String {
    let mut out = String::new();
    let line = |name: &str, c: &Figures| match &c.rtt_ms {
        Some(r) => format!(
            "{name:<10} rtt p50 {:.3} ms, p90 {:.3} ms, max {:.3} ms ({} of {} answered)\n",
            r.p50,
            r.p90,
            r.max,
            count_or_dash(c.received_packets),
            count_or_dash(c.sent_packets)
        ),
        None => format!(
            "{name:<10} no answers ({} sent)\n",
            count_or_dash(c.sent_packets)
        ),
    };
    let _ = writeln!(out, "latency ({}):", l.method);
    out.push_str(&line("  idle", &l.idle));
    out.push_str(&line("  loaded", &l.loaded));
    if let Some(d) = l.increase_ms {
        let change = if d >= 0.0 { "grew" } else { "fell" };
        let _ = writeln!(
            out,
            "  under load the median RTT {change} by {:.3} ms",
            d.abs()
        );
    }
    out
}

/// The summary after the answers: per series, then (for a sweep) a table.
pub fn ping_summary(r: &TestResult) -> String {
    let mut out = String::new();
    let none = Figures::default();
    let total = r.summary.round_trip.as_ref().unwrap_or(&none);
    let _ = writeln!(out, "\n--- {} ping statistics ---", r.spec.host());
    if let [only] = r.series.as_slice() {
        counts_lines(&mut out, total, r.duration_s);
        one_way_lines(&mut out, only);
    }
    for s in &r.series {
        cos_lines(&mut out, s, r.series.len() > 1);
    }
    timestamps_line(&mut out, &r.series);
    if r.series.len() != 1 {
        let _ = writeln!(
            out,
            "{:>6} {:>6} {:>6} {:>7} {:>9} {:>9} {:>9} {:>8} {:>9} {:>9}",
            "size",
            "sent",
            "recv",
            "loss%",
            "min ms",
            "avg ms",
            "max ms",
            "mdev",
            "p50 ms",
            "p99 ms"
        );
        for s in &r.series {
            let c = &s.figures;
            let _ = write!(
                out,
                "{:>6} {:>6} {:>6} {:>7}",
                s.size_bytes,
                count_or_dash(c.sent_packets),
                count_or_dash(c.received_packets),
                float_or_dash(c.loss_pct, 2)
            );
            match &c.rtt_ms {
                Some(t) => {
                    let _ = writeln!(
                        out,
                        " {:>9.3} {:>9.3} {:>9.3} {:>8.3} {:>9.3} {:>9.3}",
                        t.min, t.avg, t.max, t.mdev, t.p50, t.p99
                    );
                }
                None => {
                    out.push_str("         -         -         -        -         -         -\n")
                }
            }
        }
        counts_lines(&mut out, total, r.duration_s);
    }
    if r.interrupted {
        let _ = writeln!(out, "interrupted");
    }
    out
}

#[cfg(test)]
#[path = "ping_text_tests.rs"]
mod tests;
