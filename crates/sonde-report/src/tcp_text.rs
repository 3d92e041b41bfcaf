//! The terminal view of a TCP test, laid out as iperf3 users expect: one
//! line per stream per interval, a SUM line when there are several
//! streams, then sender and receiver totals. A figure that is not known
//! (a peer that did not report it) is "-" or a blank column, never 0.

use crate::columns::{
    add_opt, arrow, bytes_or_dash, count_or_blank, direction_of, id, interrupted_line, ms_or_blank,
    omit_s, rate_or_dash, span,
};
use sonde_model::{ByteSize, Direction, Figures, Interval, Rate, TestResult};
use std::fmt::Write;

/// Column heads for interval lines.
pub const HEADER: &str =
    "[ ID] Dir  Interval            Transfer     Bitrate           Retr      Cwnd       RTT";

/// This end's bytes of a stream in one interval and their rate: the sent
/// bytes of a stream it sends, the received bytes of one it receives.
/// The rate is the bytes over the interval, else the reported rate.
fn moved(f: &Figures, sends: bool, secs: f64) -> (Option<u64>, Option<u64>) {
    let (bytes, bps) = if sends {
        (f.sent_bytes, f.sender_throughput_bps)
    } else {
        (f.received_bytes, f.throughput_bps)
    };
    let rate = bytes.map(|b| Rate::from_bytes_over(b, secs).bps()).or(bps);
    (bytes, rate)
}

/// The lines of one live interval as this end saw it, without the header:
/// a line per stream and a SUM line per direction with several streams.
/// `client_sends(f)` says whether this end sends the stream of `f`.
pub fn tcp_interval(iv: &Interval, client_sends: impl Fn(&Figures) -> bool) -> String {
    let mut out = String::new();
    let secs = iv.end_s - iv.start_s;
    let tail = if iv.omitted { "  (omitted)" } else { "" };
    // Per direction: streams, bytes, retransmits (None: not known).
    let mut sums: Vec<(Direction, usize, Option<u64>, Option<u64>)> = Vec::new();
    for f in &iv.streams {
        let dir = direction_of(f);
        let (bytes, rate) = moved(f, client_sends(f), secs);
        let _ = writeln!(
            out,
            "{} {}   {}  {:>10}  {:>14}  {:>5}  {:>10}  {:>8}{tail}",
            id(Some(f.stream.unwrap_or_default())),
            arrow(dir),
            span(iv.start_s, iv.end_s),
            bytes_or_dash(bytes),
            rate_or_dash(rate),
            count_or_blank(f.retransmits),
            f.cwnd_bytes
                .map_or_else(String::new, |c| ByteSize::from_bytes(c).to_string()),
            ms_or_blank(f.srtt_ms),
        );
        match sums.iter_mut().find(|(d, ..)| *d == dir) {
            Some(s) => {
                s.1 += 1;
                s.2 = add_opt(s.2, bytes);
                s.3 = add_opt(s.3, f.retransmits);
            }
            None => sums.push((dir, 1, bytes, f.retransmits)),
        }
    }
    for (dir, count, bytes, retr) in sums {
        if count > 1 {
            let _ = writeln!(
                out,
                "{} {}   {}  {:>10}  {:>14}  {:>5}{tail}",
                id(None),
                arrow(dir),
                span(iv.start_s, iv.end_s),
                bytes_or_dash(bytes),
                rate_or_dash(bytes.map(|b| Rate::from_bytes_over(b, secs).bps())),
                count_or_blank(retr)
            );
        }
    }
    out
}

/// One sender or receiver line of the closing summary.
struct Total {
    stream: Option<u16>,
    direction: Direction,
    from_s: f64,
    to_s: f64,
}

impl Total {
    /// `retransmits`: `None` leaves the column out (receiver lines);
    /// `Some(None)` leaves it blank (not known).
    fn write(
        &self,
        out: &mut String,
        bytes: Option<u64>,
        bps: Option<u64>,
        retransmits: Option<Option<u64>>,
        role: &str,
    ) {
        let retr = match retransmits {
            Some(r) => format!("{:>5}", count_or_blank(r)),
            None => " ".repeat(5),
        };
        let _ = writeln!(
            out,
            "{} {}   {}  {:>10}  {:>14}  {retr}  {role}",
            id(self.stream),
            arrow(self.direction),
            span(self.from_s, self.to_s),
            bytes_or_dash(bytes),
            rate_or_dash(bps),
        );
    }
}

/// "in force: client … <-> server …", from the first stream's sockets.
fn in_force(out: &mut String, r: &TestResult) {
    let Some(s) = r.streams.first() else { return };
    let c = &s.client_socket;
    let sv = &s.server_socket;
    let _ = writeln!(
        out,
        "in force: client {} (kernel {}, cc {}, sndbuf {}, rcvbuf {}, mss {}) <-> server {} (kernel {}, cc {})",
        c.local,
        known(&r.env.client.kernel),
        c.congestion.as_deref().unwrap_or("?"),
        c.sndbuf_bytes
            .map_or_else(|| "?".into(), |b| ByteSize::from_bytes(b).to_string()),
        c.rcvbuf_bytes
            .map_or_else(|| "?".into(), |b| ByteSize::from_bytes(b).to_string()),
        c.mss_bytes.map_or_else(|| "?".into(), |m| m.to_string()),
        sv.local,
        known(&r.env.server.kernel),
        sv.congestion.as_deref().unwrap_or("?"),
    );
}

/// A host fact, or "?" where the peer did not tell it.
fn known(fact: &str) -> &str {
    if fact.is_empty() {
        "?"
    } else {
        fact
    }
}

/// The closing summary of a TCP test: per stream and summed, sender and
/// receiver lines, per direction, then the sockets, the goodput, latency
/// under load and whether it was interrupted.
pub fn tcp_summary(r: &TestResult) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "- - - - - - - - - - - - - - - - - - - - - - - - -");
    let _ = writeln!(
        out,
        "[ ID] Dir  Interval            Transfer     Bitrate           Retr"
    );
    let omit = omit_s(&r.spec);
    let end = omit + r.duration_s;
    for s in &r.streams {
        let f = &s.figures;
        let line = Total {
            stream: Some(f.stream.unwrap_or_default()),
            direction: direction_of(f),
            from_s: omit,
            to_s: end,
        };
        let retr = Some(f.retransmits);
        line.write(
            &mut out,
            f.sent_bytes,
            f.sender_throughput_bps,
            retr,
            "sender",
        );
        line.write(
            &mut out,
            f.received_bytes,
            f.throughput_bps,
            None,
            "receiver",
        );
    }
    let dirs = [
        (Direction::Forward, r.summary.forward.as_ref()),
        (Direction::Reverse, r.summary.reverse.as_ref()),
    ];
    for (direction, sum) in dirs {
        let Some(d) = sum.filter(|d| d.streams.is_some_and(|n| n > 1)) else {
            continue;
        };
        let mut line = Total {
            stream: None,
            direction,
            from_s: omit,
            to_s: end,
        };
        let retr = Some(d.retransmits);
        line.write(
            &mut out,
            d.sent_bytes,
            d.sender_throughput_bps,
            retr,
            "sender",
        );
        line.to_s = d.receiver_duration_s.map_or(end, |s| omit + s);
        line.write(
            &mut out,
            d.received_bytes,
            d.throughput_bps,
            None,
            "receiver",
        );
    }
    in_force(&mut out, r);
    let total = r.summary.headline();
    let field = |f: fn(&Figures) -> Option<u64>| total.and_then(f);
    let _ = write!(
        out,
        "goodput {} ({} received in {:.2} s after {:.0} s warm-up)",
        rate_or_dash(field(|t| t.throughput_bps)),
        bytes_or_dash(field(|t| t.received_bytes)),
        r.duration_s,
        omit,
    );
    match field(|t| t.retransmits) {
        Some(n) => {
            let _ = writeln!(out, ", {n} retransmits");
        }
        None => out.push('\n'),
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
#[path = "tcp_text_tests.rs"]
mod tests;
