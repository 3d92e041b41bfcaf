//! [`LiveText`]: the lines a terminal shows while a test runs, one call
//! per [`Event`]. It turns each event into text and keeps only what
//! later lines need (whether the header was printed, each stream's role,
//! the ping target); the caller decides where the text goes.
//!
//! ```
//! use sonde_model::{Event, TestSpec, TcpSpec};
//! use sonde_report::LiveText;
//!
//! let spec = TestSpec::Tcp(TcpSpec { host: "::1".into(), ..TcpSpec::default() });
//! let mut live = LiveText::for_spec(&spec);
//! let events: Vec<Event> = Vec::new(); // what the run reports, in order
//! for e in &events {
//!     let lines = live.on_event(e);
//!     print!("{}", lines.stdout);
//!     eprint!("{}", lines.stderr);
//! }
//! ```

use crate::ping_text::{ping_header, ping_reply_line};
use crate::tcp_text::{tcp_interval, HEADER};
use crate::udp_text::{udp_interval, UDP_HEADER};
use sonde_model::{
    Direction, Event, Figures, HostEnv, Interval, OpenStream, PingReply, ProbeMethod, StreamRole,
    TestKind, TestSpec, UdpSpec, Warning,
};
use std::collections::HashMap;
use std::fmt::Write;
use std::net::{IpAddr, SocketAddr};

/// The text of one event: what goes to standard output (the live table)
/// and what goes to standard error (warnings). Either may be empty.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiveLines {
    pub stdout: String,
    pub stderr: String,
}

impl LiveLines {
    fn out(stdout: String) -> Self {
        Self {
            stdout,
            stderr: String::new(),
        }
    }

    /// Nothing to print.
    pub fn is_empty(&self) -> bool {
        self.stdout.is_empty() && self.stderr.is_empty()
    }
}

/// A ping series in progress: where answers come from and how big.
#[derive(Debug, Clone)]
struct Series {
    target: String,
    method: ProbeMethod,
}

/// Turns a running test's events into the lines sonde prints live.
///
/// Build it with [`LiveText::for_spec`] when the spec is at hand (the
/// CLI): the UDP "Connected" line then names the rate, packet size and
/// profile, ping's header shows the host name and STAMP one-way delays,
/// and intervals are laid out for the spec's test. [`LiveText::new`]
/// knows only the title: the UDP "Connected" line is TCP's, ping shows
/// addresses only, and an interval is taken for UDP when its figures
/// count packets.
#[derive(Debug, Clone, Default)]
pub struct LiveText {
    prefix: String,
    kind: Option<TestKind>,
    /// UDP: the rate, size and profile the "Connected" line names.
    udp: Option<UdpSpec>,
    /// Ping: the host as asked, whether one-way delays are shown, and
    /// whether answer lines start with their Unix time (`-D`).
    host: String,
    clock_synced: bool,
    timestamps: bool,
    /// Each stream's role here, from [`Event::StreamsOpen`].
    roles: HashMap<u16, StreamRole>,
    printed_header: bool,
    series: Option<Series>,
    /// Trace: the spec (its header), and whether a hop showed the DSCP
    /// changed yet (only the first is named).
    trace: Option<sonde_model::TraceSpec>,
    dscp_changed: bool,
}

impl LiveText {
    /// A printer that knows only the title (`None`: no prefix).
    pub fn new(title: Option<&str>) -> Self {
        Self {
            prefix: title.map(|t| format!("{t}: ")).unwrap_or_default(),
            ..Self::default()
        }
    }

    /// A printer for the test `spec`, with its title.
    pub fn for_spec(spec: &TestSpec) -> Self {
        let mut me = Self::new(spec.title());
        me.kind = Some(spec.kind());
        match spec {
            TestSpec::Udp(u) => me.udp = Some(u.clone()),
            TestSpec::Ping(p) => {
                me.host.clone_from(&p.host);
                me.clock_synced = p.clock_synced;
                me.timestamps = p.timestamps;
            }
            TestSpec::Trace(t) => me.trace = Some(t.clone()),
            TestSpec::Tcp(_) | TestSpec::Http(_) => {}
        }
        me
    }

    /// The lines to print for `e`. `Finished` and `Failed` print nothing:
    /// the caller prints the summary ([`crate::summary`]) or the error.
    pub fn on_event(&mut self, e: &Event) -> LiveLines {
        let stdout = match e {
            Event::Connected { server, env, .. } => self.connected(*server, env),
            Event::StreamsOpen(streams) => self.streams_open(streams),
            Event::Interval(iv) => self.interval(iv),
            Event::Series {
                size_bytes,
                target,
                method,
            } => self.series(*size_bytes, *target, *method),
            Event::Reply(r) => self.reply(r),
            Event::Trace { target } => self.trace_start(*target),
            Event::Hop(h) => self.hop(h),
            Event::Warning(w) => return warning(w),
            // The remark count shows on the interval line, the sentence
            // in the summary; the idle RTT in the summary's latency lines.
            // A method's progress is its command's to print.
            Event::Remarked { .. }
            | Event::LatencyIdle(_)
            | Event::Finished(_)
            | Event::Failed { .. }
            | Event::Method(_) => String::new(),
        };
        LiveLines::out(stdout)
    }

    /// A trace's header (with the spec at hand; else the target alone).
    fn trace_start(&mut self, target: std::net::IpAddr) -> String {
        let text = match &self.trace {
            Some(spec) => crate::trace_text::header(spec, target),
            None => format!("trace to {target}\n"),
        };
        self.prefixed(&text)
    }

    /// A trace's hop; the first whose quotation shows another DSCP than
    /// was sent is named.
    fn hop(&mut self, h: &sonde_model::TraceHop) -> String {
        let sent = self.trace.as_ref().map_or(0, |t| t.dscp_value());
        let changed = !self.dscp_changed && h.arrived_dscp().is_some_and(|d| d != sent);
        self.dscp_changed |= changed;
        self.prefixed(&crate::trace_text::hop_line(h, changed.then_some(sent)))
    }

    /// `text` with the title prefix on every line.
    fn prefixed(&self, text: &str) -> String {
        text.lines()
            .map(|l| format!("{}{l}\n", self.prefix))
            .collect()
    }

    fn connected(&self, server: SocketAddr, env: &HostEnv) -> String {
        let mut line = if env.os.is_empty() {
            format!("Connected to {server} ({})", env.sonde_version)
        } else {
            format!(
                "Connected to {server} (sonde {} on {} {})",
                env.sonde_version, env.os, env.kernel
            )
        };
        if let Some(u) = &self.udp {
            let rate = u.stream_rate();
            let rate = if rate.bps() == 0 {
                "unpaced".to_string()
            } else {
                rate.to_string()
            };
            let _ = write!(
                line,
                "; UDP {rate} per stream, {} bytes, profile {}",
                u.payload_len(),
                u.profile
            );
        }
        line.push('\n');
        self.prefixed(&line)
    }

    fn streams_open(&mut self, streams: &[OpenStream]) -> String {
        let mut out = String::new();
        for s in streams {
            self.roles.insert(s.stream, s.role);
            let role = match s.role {
                StreamRole::Sender => "sending",
                StreamRole::Receiver => "receiving",
            };
            let _ = writeln!(
                out,
                "[{:>3}] local {} connected to {} ({role})",
                s.stream, s.local, s.remote
            );
        }
        self.prefixed(&out)
    }

    /// Whether this end sends the stream of `f`: its role when the
    /// streams were opened, else a client's (it sends all but reverse).
    fn sends(&self, f: &Figures) -> bool {
        match f.stream.and_then(|s| self.roles.get(&s)) {
            Some(role) => *role == StreamRole::Sender,
            None => f.direction != Some(Direction::Reverse),
        }
    }

    fn interval(&mut self, iv: &Interval) -> String {
        if self.kind == Some(sonde_model::TestKind::Http) {
            // An HTTP benchmark's second: answers and bytes.
            let Some(f) = &iv.round_trip else {
                return String::new();
            };
            let line = format!(
                "[{:>6.1}-{:>6.1} s] {:>9} req/s {:>12}\n",
                iv.start_s,
                iv.end_s,
                f.received_packets.unwrap_or(0),
                crate::rate_format::show_rate(f.throughput_bps.unwrap_or(0)),
            );
            return self.prefixed(&line);
        }
        if iv.streams.is_empty() {
            // A ping interval (its answers were printed one by one).
            return String::new();
        }
        let udp = match self.kind {
            Some(k) => k == TestKind::Udp,
            None => iv
                .streams
                .iter()
                .any(|f| f.sent_packets.is_some() || f.received_packets.is_some()),
        };
        let mut text = String::new();
        if !self.printed_header {
            text.push_str(if udp { UDP_HEADER } else { HEADER });
            text.push('\n');
            self.printed_header = true;
        }
        let sends = |f: &Figures| self.sends(f);
        text.push_str(&if udp {
            udp_interval(iv, sends)
        } else {
            tcp_interval(iv, sends)
        });
        self.prefixed(&text)
    }

    fn series(&mut self, size: u32, target: IpAddr, method: ProbeMethod) -> String {
        let target = target.to_string();
        let header = ping_header(&target, &self.host, size, method);
        self.series = Some(Series { target, method });
        self.prefixed(&header)
    }

    fn reply(&self, r: &PingReply) -> String {
        // An answer before any series (not sent by a run) has no target.
        let Some(s) = &self.series else {
            return String::new();
        };
        let line = ping_reply_line(&s.target, r, s.method, self.clock_synced);
        match r.received_unix_s.filter(|_| self.timestamps) {
            // iputils' -D: the time in µs before the line.
            Some(t) => self.prefixed(&format!("[{t:.6}] {line}")),
            None => self.prefixed(&line),
        }
    }
}

/// A warning, for standard error.
fn warning(w: &Warning) -> LiveLines {
    let stderr = match w {
        Warning::PeerIsIperf3 { host, port } => {
            // An IPv6 literal takes brackets before a port, as in a URL.
            let host = if host.contains(':') {
                format!("[{host}]")
            } else {
                host.clone()
            };
            format!("sonde: {host}:{port} is an iperf3 server; speaking iperf3's protocol\n")
        }
        Warning::NoLiveIntervals => {
            "sonde: the server reports only totals: no interval lines until the end\n".to_string()
        }
        Warning::LatencyLost { reason } => {
            format!("sonde: latency under load not measured: {reason}\n")
        }
    };
    LiveLines {
        stdout: String::new(),
        stderr,
    }
}

#[cfg(test)]
#[path = "live_text_tests.rs"]
mod tests;
