//! The terminal view of a UDP test: per interval what this end saw
//! (a sender its packets, a receiver rate, jitter and loss), then per
//! stream and per direction the joined figures, delay, DSCP classes and
//! any remarking in words. A figure that is not known (a peer that did
//! not count it) is "-" or left out, never 0.

use crate::columns::{
    arrow, bytes_or_dash, count_or_dash, direction_of, float_or_dash, id, interrupted_line,
    lost_total, omit_s, rate_or_dash, remark_sentence, remarked_packets, span,
};
use sonde_model::{Direction, Figures, Interval, Rate, TestResult};
use std::fmt::Write;

pub const UDP_HEADER: &str =
    "[ ID] Dir  Interval             Transfer         Bitrate      Jitter    Lost/Total";

/// `  0.002 ms`: the jitter column, "-" when not known.
fn jitter(v: Option<f64>) -> String {
    match v {
        Some(j) => format!("{j:>7.3} ms"),
        None => format!("{:>10}", "-"),
    }
}

/// The packets the loss of an interval is counted against: received
/// plus lost (the sequence numbers due).
fn due(f: &Figures) -> Option<u64> {
    Some(f.received_packets?.saturating_add(f.lost_packets?))
}

/// "  remarked N" when packets of `f` arrived with another DSCP.
fn remarked_tail(f: &Figures) -> String {
    match remarked_packets(f) {
        0 => String::new(),
        n => format!("  remarked {n}"),
    }
}

/// Bytes, rate, jitter and loss of a receiver over `secs`.
fn receiver_cells(f: &Figures, secs: f64) -> String {
    let rate = f
        .received_bytes
        .map(|b| Rate::from_bytes_over(b, secs).bps())
        .or(f.throughput_bps);
    format!(
        "{:>10}  {:>14}  {}  {}",
        bytes_or_dash(f.received_bytes),
        rate_or_dash(rate),
        jitter(f.jitter_ms),
        lost_total(f.lost_packets, due(f))
    )
}

/// The lines of one live interval as this end saw it, without the
/// header: a sender its packets (and, when the receiver's count of the
/// interval came in time, the loss it saw), a receiver rate, jitter and
/// loss.
/// `client_sends(f)` says whether this end sends the stream of `f`.
pub fn udp_interval(iv: &Interval, client_sends: impl Fn(&Figures) -> bool) -> String {
    let mut out = String::new();
    let secs = (iv.end_s - iv.start_s).max(1e-9);
    let tail = if iv.omitted { "  (omitted)" } else { "" };
    for f in &iv.streams {
        let body = if client_sends(f) {
            let rate = f
                .sent_bytes
                .map(|b| Rate::from_bytes_over(b, secs).bps())
                .or(f.sender_throughput_bps);
            let mut cells = format!(
                "{:>10}  {:>14}  sent {} packets",
                bytes_or_dash(f.sent_bytes),
                rate_or_dash(rate),
                count_or_dash(f.sent_packets)
            );
            // The receiver's count of the interval, when it came live:
            // loss against the sequence numbers due in it.
            if f.received_packets.is_some() {
                let _ = write!(
                    cells,
                    ", lost {} at the receiver",
                    lost_total(f.lost_packets, due(f))
                );
            }
            cells
        } else {
            receiver_cells(f, secs) + &remarked_tail(f)
        };
        let _ = writeln!(
            out,
            "{} {}   {}  {body}{tail}",
            id(Some(f.stream.unwrap_or_default())),
            arrow(direction_of(f)),
            span(iv.start_s, iv.end_s)
        );
    }
    out
}

/// A stream's or a direction's sender and receiver lines.
fn summary_lines(
    out: &mut String,
    stream: Option<u16>,
    d: Direction,
    from: f64,
    to: f64,
    c: &Figures,
) {
    let offered = rate_or_dash(c.sender_throughput_bps);
    let _ = writeln!(
        out,
        "{} {}   {}  {:>10}  {:>14}  sender    sent {} (offered {offered})",
        id(stream),
        arrow(d),
        span(from, to),
        bytes_or_dash(c.sent_bytes),
        offered,
        count_or_dash(c.sent_packets),
    );
    let _ = writeln!(
        out,
        "{} {}   {}  {:>10}  {:>14}  {}  {}  PDR {} %  receiver",
        id(stream),
        arrow(d),
        span(from, to),
        bytes_or_dash(c.received_bytes),
        rate_or_dash(c.throughput_bps),
        jitter(c.jitter_ms),
        lost_total(c.lost_packets, c.sent_packets),
        float_or_dash(c.pdr_pct, 2)
    );
}

fn push_count(parts: &mut Vec<String>, v: Option<u64>, word: &str) {
    if let Some(n) = v {
        parts.push(format!("{n} {word}"));
    }
}

/// "1000 sent, 990 received, 10 lost (1.000 %), …": the figures known,
/// in this order; an unknown one is left out.
fn counts_sentence(c: &Figures) -> String {
    let mut parts = Vec::new();
    push_count(&mut parts, c.sent_packets, "sent");
    push_count(&mut parts, c.received_packets, "received");
    if let Some(lost) = c.lost_packets {
        let pct = c
            .loss_pct
            .map_or_else(String::new, |p| format!(" ({p:.3} %)"));
        parts.push(format!("{lost} lost{pct}"));
    }
    if let Some(p) = c.pdr_pct {
        parts.push(format!("PDR {p:.3} %"));
    }
    push_count(&mut parts, c.reordered, "reordered");
    push_count(&mut parts, c.duplicates, "duplicates");
    if let Some(j) = c.jitter_ms {
        parts.push(format!("jitter {j:.3} ms"));
    }
    parts.join(", ")
}

fn direction_details(out: &mut String, d: Direction, c: &Figures) {
    let which = if d == Direction::Reverse {
        "server -> client"
    } else {
        "client -> server"
    };
    let _ = writeln!(out, "{which}: {}", counts_sentence(c));
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
    // The video profile: per frame type (each has its own DSCP).
    for f in &c.frames {
        let k = &f.class;
        let _ = write!(
            out,
            "  {} frames, DSCP {:<10}  sent {:>8}  received {:>8}  lost {:>7} ({:.2} %)",
            f.frame,
            k.dscp.to_string(),
            k.sent_packets,
            k.received_packets,
            k.lost_packets,
            k.loss_pct
        );
        if let (Some(sent), Some(ok), Some(p)) =
            (f.sent_frames, f.decodable_frames, f.decodable_pct)
        {
            let _ = write!(out, "; {ok} of {sent} frames decodable ({p:.2} %)");
        }
        out.push('\n');
    }
    if let Some(p) = c.decodable_frames_pct {
        let sent: u64 = c.frames.iter().filter_map(|f| f.sent_frames).sum();
        let _ = writeln!(
            out,
            "  decodable frame rate {p:.2} % of {sent} frames (all their packets and references arrived)"
        );
    }
    if c.classes.len() > 1 && c.frames.is_empty() {
        for k in &c.classes {
            let _ = writeln!(
                out,
                "  DSCP {:<10} sent {:>8}  received {:>8}  lost {:>7} ({:.2} %)",
                k.dscp.to_string(),
                k.sent_packets,
                k.received_packets,
                k.lost_packets,
                k.loss_pct
            );
        }
    }
    for m in &c.remarks {
        let _ = writeln!(out, "  {}", remark_sentence(c, m));
    }
    if let Some(s) = crate::columns::flow_label_sentence(c) {
        let _ = writeln!(out, "  {s}");
    }
}

/// Per-interval lines of what the server received (client → server),
/// which a sending client could not show while the test ran.
fn server_received_intervals(out: &mut String, r: &TestResult) {
    if r.summary.forward.is_none() {
        return;
    }
    let _ = writeln!(out, "Received by the server, per interval:");
    let _ = writeln!(out, "{UDP_HEADER}");
    for i in &r.intervals {
        let Some(c) = i.sum(Direction::Forward) else {
            continue;
        };
        let _ = writeln!(
            out,
            "{} {}   {}  {:>10}  {:>14}  {}  {}{}{}",
            id(None),
            arrow(Direction::Forward),
            span(i.start_s, i.end_s),
            bytes_or_dash(c.received_bytes),
            rate_or_dash(c.throughput_bps),
            jitter(c.jitter_ms),
            lost_total(c.lost_packets, due(c)),
            remarked_tail(c),
            if i.omitted { "  (omitted)" } else { "" }
        );
    }
}

/// The closing summary of a UDP test.
pub fn udp_summary(r: &TestResult) -> String {
    let mut out = String::new();
    server_received_intervals(&mut out, r);
    let _ = writeln!(out, "- - - - - - - - - - - - - - - - - - - - - - - - -");
    let omit = omit_s(&r.spec);
    let end = omit + r.duration_s;
    for s in &r.streams {
        let f = &s.figures;
        let stream = Some(f.stream.unwrap_or_default());
        summary_lines(&mut out, stream, direction_of(f), omit, end, f);
    }
    let dirs = [
        (Direction::Forward, r.summary.forward.as_ref()),
        (Direction::Reverse, r.summary.reverse.as_ref()),
    ];
    for (d, c) in dirs {
        if let Some(c) = c.filter(|c| c.streams.is_some_and(|n| n > 1)) {
            summary_lines(&mut out, None, d, omit, end, c);
        }
    }
    for (d, c) in dirs {
        if let Some(c) = c {
            direction_details(&mut out, d, c);
        }
    }
    if let Some(l) = &r.summary.latency {
        out.push_str(&crate::ping_text::latency_lines(l));
    }
    if r.interrupted {
        out.push_str(&interrupted_line(r.duration_s, &r.spec));
    }
    out
}

#[cfg(test)]
#[path = "udp_text_tests.rs"]
mod tests;
