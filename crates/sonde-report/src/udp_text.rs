//! The terminal view of a UDP test: per interval what this end saw
//! (a sender its packets, a receiver rate, jitter and loss), then per
//! stream and per direction the joined figures, delay, DSCP classes and
//! any remarking in words.

use sonde_model::udp_report::{ReceiverTally, UdpTally};
use sonde_model::udp_result::{UdpCounts, UdpDirectionCounts};
use sonde_model::{ByteSize, Direction, Rate, SampleWindow, UdpResult};
use std::fmt::Write;

fn arrow(d: Direction) -> &'static str {
    if d == Direction::Reverse {
        "<-"
    } else {
        "->"
    }
}

fn id(stream: Option<u16>) -> String {
    stream.map_or_else(|| "[SUM]".to_string(), |s| format!("[{s:>3}]"))
}

fn span(a: f64, b: f64) -> String {
    format!("{a:>6.2}-{b:<6.2} s")
}

fn lost_total(lost: u64, base: u64) -> String {
    let pct = if base == 0 {
        0.0
    } else {
        lost as f64 * 100.0 / base as f64
    };
    format!("{lost}/{base} ({pct:.2} %)")
}

pub const UDP_HEADER: &str =
    "[ ID] Dir  Interval             Transfer         Bitrate      Jitter    Lost/Total";

fn receiver_line(rx: &ReceiverTally, secs: f64) -> String {
    let base = rx.expected.max(rx.packets);
    format!(
        "{:>10}  {:>14}  {:>7.3} ms  {}",
        ByteSize::from_bytes(rx.bytes).to_string(),
        Rate::from_bytes_over(rx.bytes, secs).to_string(),
        rx.jitter_ms,
        lost_total(base - rx.packets.min(base), base)
    )
}

/// Lines for one live interval of this end.
pub fn udp_interval(
    window: SampleWindow,
    omitted: bool,
    streams: &[(u16, UdpTally)],
    direction_of: impl Fn(u16) -> Direction,
    header: bool,
) -> String {
    let mut out = String::new();
    if header {
        let _ = writeln!(out, "{UDP_HEADER}");
    }
    let secs = (window.end_s - window.start_s).max(1e-9);
    let tail = if omitted { "  (omitted)" } else { "" };
    for (stream, tally) in streams {
        let body = match tally {
            UdpTally::Sent(tx) => format!(
                "{:>10}  {:>14}  sent {} packets",
                ByteSize::from_bytes(tx.bytes).to_string(),
                Rate::from_bytes_over(tx.bytes, secs).to_string(),
                tx.packets
            ),
            UdpTally::Received(rx) => {
                let mut l = receiver_line(rx, secs);
                let remarked: u64 = rx.remarks.iter().map(|r| r.packets).sum();
                if remarked > 0 {
                    let _ = write!(l, "  remarked {remarked}");
                }
                l
            }
        };
        let _ = writeln!(
            out,
            "{} {}   {}  {body}{tail}",
            id(Some(*stream)),
            arrow(direction_of(*stream)),
            span(window.start_s, window.end_s)
        );
    }
    out
}

fn summary_line(
    out: &mut String,
    stream: Option<u16>,
    d: Direction,
    from: f64,
    to: f64,
    c: &UdpCounts,
) {
    let _ = writeln!(
        out,
        "{} {}   {}  {:>10}  {:>14}  sender    sent {} (offered {})",
        id(stream),
        arrow(d),
        span(from, to),
        "-",
        Rate::from_bps(c.offered_bps).to_string(),
        c.sent,
        Rate::from_bps(c.offered_bps)
    );
    let _ = writeln!(
        out,
        "{} {}   {}  {:>10}  {:>14}  {:>7.3} ms  {}  PDR {:.2} %  receiver",
        id(stream),
        arrow(d),
        span(from, to),
        ByteSize::from_bytes(c.bytes).to_string(),
        Rate::from_bps(c.throughput_bps).to_string(),
        c.jitter_ms,
        lost_total(c.lost, c.sent),
        c.pdr_pct
    );
}

fn direction_details(out: &mut String, d: &UdpDirectionCounts) {
    let c = &d.counts;
    let which = if d.direction == Direction::Reverse {
        "server -> client"
    } else {
        "client -> server"
    };
    let _ = writeln!(
        out,
        "{which}: {} sent, {} received, {} lost ({:.3} %), PDR {:.3} %, {} reordered, {} duplicates, jitter {:.3} ms",
        c.sent, c.received, c.lost, c.loss_pct, c.pdr_pct, c.reordered, c.duplicates, c.jitter_ms
    );
    if let Some(q) = c.ipdv {
        let _ = writeln!(
            out,
            "  IPDV |p50| {:.3} ms, |p90| {:.3} ms, |p99| {:.3} ms, max {:.3} ms",
            q.p50_ms, q.p90_ms, q.p99_ms, q.max_ms
        );
    }
    if let Some(o) = c.delay {
        if o.clock_synced {
            let _ = writeln!(
                out,
                "  one-way delay min {:.3} / avg {:.3} / max {:.3} / p99 {:.3} ms (clocks synchronised)",
                o.min_ms, o.avg_ms, o.max_ms, o.p99_ms
            );
        } else {
            let _ = writeln!(
                out,
                "  delay variation (above the minimum) p50 {:.3} ms, p99 {:.3} ms; one-way delay not shown: clocks not known to be synchronised (--clock-synced)",
                o.pdv_p50_ms, o.pdv_p99_ms
            );
        }
    }
    if d.classes.len() > 1 {
        for k in &d.classes {
            let _ = writeln!(
                out,
                "  DSCP {:<10} sent {:>8}  received {:>8}  lost {:>7} ({:.2} %)",
                k.dscp.to_string(),
                k.sent,
                k.received,
                k.lost,
                k.loss_pct
            );
        }
    }
    for w in &d.remarking {
        let _ = writeln!(out, "  {w}");
    }
}

/// Per-interval lines of what the server received (client → server),
/// which a sending client could not show while the test ran.
fn server_received_intervals(out: &mut String, r: &UdpResult) {
    if r.summary.forward.is_none() {
        return;
    }
    let _ = writeln!(out, "Received by the server, per interval:");
    let _ = writeln!(out, "{UDP_HEADER}");
    for i in &r.intervals {
        for d in i.sums.iter().filter(|d| d.direction == Direction::Forward) {
            let c = &d.counts;
            let base = c.received + c.lost;
            let remarked: u64 = c.remarks.iter().map(|m| m.packets).sum();
            let _ = writeln!(
                out,
                "{} {}   {}  {:>10}  {:>14}  {:>7.3} ms  {}{}{}",
                id(None),
                arrow(d.direction),
                span(i.start_s, i.end_s),
                ByteSize::from_bytes(c.bytes).to_string(),
                Rate::from_bps(c.throughput_bps).to_string(),
                c.jitter_ms,
                lost_total(c.lost, base),
                if remarked > 0 {
                    format!("  remarked {remarked}")
                } else {
                    String::new()
                },
                if i.omitted { "  (omitted)" } else { "" }
            );
        }
    }
}

/// The closing summary of a UDP test.
pub fn udp_summary(r: &UdpResult) -> String {
    let mut out = String::new();
    server_received_intervals(&mut out, r);
    let _ = writeln!(out, "- - - - - - - - - - - - - - - - - - - - - - - - -");
    let omit = r.spec.omit.as_secs_f64();
    let end = omit + r.duration_s;
    for s in &r.streams {
        summary_line(&mut out, Some(s.stream), s.direction, omit, end, &s.counts);
    }
    for d in [&r.summary.forward, &r.summary.reverse]
        .into_iter()
        .flatten()
    {
        if d.streams > 1 {
            summary_line(&mut out, None, d.direction, omit, end, &d.counts);
        }
    }
    for d in [&r.summary.forward, &r.summary.reverse]
        .into_iter()
        .flatten()
    {
        direction_details(&mut out, d);
    }
    if let Some(l) = &r.latency {
        out.push_str(&crate::ping_text::latency_lines(l));
    }
    if r.interrupted {
        let _ = writeln!(
            out,
            "interrupted after {:.2} s of the {:.0} s planned",
            r.duration_s,
            r.spec.time.as_secs_f64()
        );
    }
    out
}
