//! The terminal view of a TCP test, laid out as iperf3 users expect: one
//! line per stream per interval, a SUM line when there are several
//! streams, then sender and receiver totals.

use sonde_model::{ByteSize, Direction, Rate, SampleWindow, SideSample, StreamRole, TcpResult};
use std::collections::HashMap;
use std::fmt::Write;

fn id(stream: Option<u16>) -> String {
    match stream {
        Some(s) => format!("[{s:>3}]"),
        None => "[SUM]".to_string(),
    }
}

fn span(start_s: f64, end_s: f64) -> String {
    format!("{start_s:>6.2}-{end_s:<6.2} s")
}

fn ms(v: Option<f64>) -> String {
    v.map_or_else(String::new, |ms| format!("{ms:.2} ms"))
}

fn arrow(d: Direction) -> &'static str {
    match d {
        Direction::Reverse => "<-",
        _ => "->",
    }
}

/// Column heads for interval lines.
pub const HEADER: &str =
    "[ ID] Dir  Interval            Transfer     Bitrate           Retr      Cwnd       RTT";

/// Formats interval lines as this end sees them while a test runs.
#[derive(Debug, Default)]
pub struct LiveTable {
    retrans: HashMap<u16, u64>,
    printed_header: bool,
}

impl LiveTable {
    pub fn new() -> Self {
        Self::default()
    }

    /// Lines for one interval. `directions` gives each stream's direction
    /// as the client sees it.
    pub fn interval(
        &mut self,
        window: SampleWindow,
        omitted: bool,
        streams: &[(u16, StreamRole, SideSample)],
        direction_of: impl Fn(u16) -> Direction,
    ) -> String {
        let mut out = String::new();
        if !self.printed_header {
            let _ = writeln!(out, "{HEADER}");
            self.printed_header = true;
        }
        let secs = window.end_s - window.start_s;
        let tail = if omitted { "  (omitted)" } else { "" };
        // Per direction: streams, bytes, retransmits (None: no TCP_INFO here).
        let mut sums: Vec<(Direction, usize, u64, Option<u64>)> = Vec::new();
        for (stream, _role, sample) in streams {
            let dir = direction_of(*stream);
            let retr = sample.tcp.map(|t| {
                let before = self.retrans.insert(*stream, t.total_retrans).unwrap_or(0);
                t.total_retrans.saturating_sub(before)
            });
            let _ = writeln!(
                out,
                "{} {}   {}  {:>10}  {:>14}  {:>5}  {:>10}  {:>8}{tail}",
                id(Some(*stream)),
                arrow(dir),
                span(window.start_s, window.end_s),
                ByteSize::from_bytes(sample.bytes).to_string(),
                Rate::from_bytes_over(sample.bytes, secs).to_string(),
                retr.map_or_else(String::new, |r| r.to_string()),
                sample
                    .tcp
                    .map_or_else(String::new, |t| ByteSize::from_bytes(t.cwnd_bytes)
                        .to_string()),
                ms(sample.tcp.map(|t| f64::from(t.srtt_us) / 1000.0)),
            );
            match sums.iter_mut().find(|(d, ..)| *d == dir) {
                Some(s) => {
                    s.1 += 1;
                    s.2 += sample.bytes;
                    s.3 = add_opt(s.3, retr);
                }
                None => sums.push((dir, 1, sample.bytes, retr)),
            }
        }
        for (dir, count, bytes, retr) in sums {
            if count > 1 {
                let _ = writeln!(
                    out,
                    "{} {}   {}  {:>10}  {:>14}  {:>5}{tail}",
                    id(None),
                    arrow(dir),
                    span(window.start_s, window.end_s),
                    ByteSize::from_bytes(bytes).to_string(),
                    Rate::from_bytes_over(bytes, secs).to_string(),
                    retr.map_or_else(String::new, |r| r.to_string())
                );
            }
        }
        out
    }
}

fn add_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x + y),
        (x, y) => x.or(y),
    }
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
    /// `Some(None)` leaves it blank (no TCP_INFO).
    fn write(
        &self,
        out: &mut String,
        bytes: u64,
        bps: u64,
        retransmits: Option<Option<u64>>,
        role: &str,
    ) {
        let retr = match retransmits {
            Some(r) => format!("{:>5}", r.map_or_else(String::new, |v| v.to_string())),
            None => " ".repeat(5),
        };
        let _ = writeln!(
            out,
            "{} {}   {}  {:>10}  {:>14}  {retr}  {role}",
            id(self.stream),
            arrow(self.direction),
            span(self.from_s, self.to_s),
            ByteSize::from_bytes(bytes).to_string(),
            Rate::from_bps(bps).to_string(),
        );
    }
}

/// The closing summary of a TCP test: per stream and summed, sender and
/// receiver lines, per direction.
pub fn tcp_summary(r: &TcpResult) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "- - - - - - - - - - - - - - - - - - - - - - - - -");
    let _ = writeln!(
        out,
        "[ ID] Dir  Interval            Transfer     Bitrate           Retr"
    );
    let omit = r.spec.omit.as_secs_f64();
    let end = omit + r.duration_s;
    for s in &r.streams {
        let line = Total {
            stream: Some(s.stream),
            direction: s.direction,
            from_s: omit,
            to_s: end,
        };
        line.write(
            &mut out,
            s.sent_bytes,
            s.sender_throughput_bps,
            Some(s.retransmits),
            "sender",
        );
        line.write(
            &mut out,
            s.received_bytes,
            s.throughput_bps,
            None,
            "receiver",
        );
    }
    let dirs = [
        (Direction::Forward, r.summary.forward.as_ref()),
        (Direction::Reverse, r.summary.reverse.as_ref()),
    ];
    for (direction, sum) in dirs {
        let Some(d) = sum.filter(|d| d.streams > 1) else {
            continue;
        };
        let mut line = Total {
            stream: None,
            direction,
            from_s: omit,
            to_s: end,
        };
        line.write(
            &mut out,
            d.sent_bytes,
            d.sender_throughput_bps,
            Some(Some(d.retransmits)),
            "sender",
        );
        line.to_s = omit + d.receiver_duration_s;
        line.write(&mut out, d.bytes, d.throughput_bps, None, "receiver");
    }
    if let Some(s) = r.streams.first() {
        let c = &s.client_socket;
        let sv = &s.server_socket;
        let _ = writeln!(
            out,
            "in force: client {} (kernel {}, cc {}, sndbuf {}, rcvbuf {}, mss {}) <-> server {} (kernel {}, cc {})",
            c.local,
            r.env.client.kernel,
            c.congestion.as_deref().unwrap_or("?"),
            ByteSize::from_bytes(c.sndbuf_bytes),
            ByteSize::from_bytes(c.rcvbuf_bytes),
            c.mss_bytes.map_or_else(|| "?".into(), |m| m.to_string()),
            sv.local,
            r.env.server.kernel,
            sv.congestion.as_deref().unwrap_or("?"),
        );
    }
    let _ = writeln!(
        out,
        "goodput {} ({} received in {:.2} s after {:.0} s warm-up), {} retransmits",
        Rate::from_bps(r.summary.throughput_bps),
        ByteSize::from_bytes(r.summary.bytes),
        r.duration_s,
        omit,
        r.summary.retransmits
    );
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

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_model::TcpInfoSnapshot;

    #[test]
    fn interval_lines_show_rate_and_per_interval_retransmits() {
        let mut t = LiveTable::new();
        let w = SampleWindow {
            start_s: 0.0,
            end_s: 1.0,
        };
        let sample = |retr| SideSample {
            bytes: 1_250_000,
            tcp: Some(TcpInfoSnapshot {
                total_retrans: retr,
                cwnd_bytes: 64 * 1024,
                srtt_us: 1500,
                ..TcpInfoSnapshot::default()
            }),
        };
        let first = t.interval(w, false, &[(0, StreamRole::Sender, sample(3))], |_| {
            Direction::Forward
        });
        assert!(first.starts_with("[ ID]"));
        assert!(first.contains("10.0 Mbit/s"), "{first}");
        assert!(first.contains("1.50 ms"), "{first}");
        let second = t.interval(w, false, &[(0, StreamRole::Sender, sample(5))], |_| {
            Direction::Forward
        });
        assert!(!second.contains("[ ID]"));
        let retr_col: Vec<&str> = second.split_whitespace().collect();
        assert!(retr_col.contains(&"2"), "{second}");
    }
}
