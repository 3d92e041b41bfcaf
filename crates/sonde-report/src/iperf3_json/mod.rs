//! sonde's results in iperf3's `-J` layout (`sonde tcp --json=iperf3`), so
//! that scripts written for `iperf3 -J` read them unchanged.
//!
//! [`to_iperf3`] (or [`tcp_to_iperf3`], [`udp_to_iperf3`]) is pure: a
//! [`TestResult`] in, one [`serde_json::Value`] out, with `start`,
//! `intervals` and `end` laid out as iperf3 3.21's client writes them (a
//! superset of 3.12's, below); `None` for ping, which iperf3 does not
//! have (and for a result of the other protocol, from the named ones). A
//! test holds the key layout to real iperf3 3.12 and 3.21 output for TCP
//! and UDP, forward, `-R` and `--bidir`, one and two streams
//! (`tests/fixtures/iperf3_json/`).
//!
//! # Whose view
//!
//! iperf3's client reports what it saw itself: per interval, a stream it
//! sends shows the bytes written and its TCP_INFO (`sender: true`), a
//! stream it receives the bytes read (`sender: false`). sonde has both
//! ends' figures; the conversion picks the client's side so every object
//! has the keys iperf3 gives it. A stream's `socket` is sonde's stream
//! number (iperf3 writes a file descriptor: any distinct number).
//!
//! Figures are [`sonde_model::Figures`]; one sonde does not know (`None`:
//! a peer that did not report it, a format-1 result) is written as iperf3
//! writes a figure it has no value for: 0.
//!
//! # Mapping
//!
//! | iperf3 key | from sonde |
//! |---|---|
//! | `title` (top level, only with a title) | `title` |
//! | `start.connected[].socket` | `streams[].stream` |
//! | `start.connected[].local_host/local_port/remote_host/remote_port` | `streams[].client_socket.local/remote` (IPv4-mapped IPv6 shown as IPv4, as iperf3 does) |
//! | `start.version` | `"sonde "` + `sonde_version` |
//! | `start.system_info` | `env.client`: OS, host name, kernel release |
//! | `start.timestamp.time/timesecs/timemillisecs` | `start` (RFC 1123 in GMT, seconds, milliseconds) |
//! | `start.connecting_to.host/port` | `spec.host`, `spec.port` |
//! | `start.tcp_mss_default` (TCP; `tcp_mss` when `-M` was given) | first stream's `client_socket.mss_bytes` (`spec.mss_bytes` with `-M`) |
//! | `start.target_bitrate`, `test_start.target_bitrate` | TCP `spec.bitrate_bps`; UDP the per-stream rate offered |
//! | `start.sock_bufsize` | TCP `spec.window_bytes`; 0 when not set (and for UDP) |
//! | `start.sndbuf_actual`, `start.rcvbuf_actual` | first stream's `client_socket.sndbuf_bytes/rcvbuf_bytes` |
//! | `test_start.protocol` | `"TCP"` / `"UDP"` |
//! | `test_start.num_streams` | `spec.parallel` (per direction, as iperf3's `-P`) |
//! | `test_start.blksize` | TCP `spec.length_bytes`; UDP the payload size sent |
//! | `test_start.omit`, `test_start.duration` | `spec.omit_s`, `spec.time_s` (an integer when whole, as iperf3 writes them) |
//! | `test_start.reverse`, `test_start.bidir` | `spec.direction` (1 or 0) |
//! | `test_start.tos` | `spec.dscp` × 4 (the TOS byte), 0 without `-S` |
//! | `test_start.interval` | `spec.interval_s` |
//! | `intervals[].streams[]`, `intervals[].sum` | `intervals[].streams[]`, `intervals[].sums[]` (`start_s`, `end_s`, `omitted`) |
//! | … TCP, client sends: `bytes`, `bits_per_second` | `sent_bytes`, over the interval |
//! | … TCP, client sends: `retransmits`, `snd_cwnd`, `rtt` | `retransmits`, `cwnd_bytes`, `srtt_ms` × 1000 (µs, an integer) |
//! | … TCP, client receives: `bytes`, `bits_per_second` | `received_bytes`, `throughput_bps` |
//! | … UDP, client sends: `bytes`, `bits_per_second`, `packets` | `sent_bytes` (else `sender_throughput_bps` × interval / 8), `sender_throughput_bps`, `sent_packets` |
//! | … UDP, client receives: `bytes`, `bits_per_second`, `jitter_ms`, `lost_packets`, `packets`, `lost_percent` | `received_bytes`, `throughput_bps`, `jitter_ms`, `lost_packets`, `received_packets` + `lost_packets`, `loss_pct` |
//! | `end.streams[].sender` (TCP) | `streams[]`: `sent_bytes`, `sender_throughput_bps`, `retransmits`, `max_cwnd_bytes`; `max_rtt/min_rtt/mean_rtt` over the stream's interval `srtt_ms` after the warm-up (else `srtt_ms`, `min_rtt_ms`) |
//! | `end.streams[].receiver` (TCP) | `streams[]`: `received_bytes`, `throughput_bps`; `end` is the direction's `receiver_duration_s` |
//! | `end.streams[].udp` | `streams[]`: sender bytes (`sent_bytes`, else `sender_throughput_bps` × `duration_s` / 8), `sender_throughput_bps`, `jitter_ms`, `lost_packets`, `received_packets` + `lost_packets`, `loss_pct`, `reordered` (`out_of_order`) |
//! | `end.sum_sent` (TCP) | `summary.forward`/`reverse` (one direction: else `summary.total`): `sent_bytes`, `sender_throughput_bps`, `retransmits` over `duration_s` |
//! | `end.sum_received` (TCP) | `received_bytes`, `throughput_bps` over `receiver_duration_s` |
//! | `end.sum` (UDP) | sender bytes and `sender_throughput_bps`, with the receiver's `jitter_ms`, `lost_packets`, `received_packets` + `lost_packets`, `loss_pct` |
//! | `end.sum_sent` (UDP) | sender bytes, `sender_throughput_bps`, `sent_packets`; jitter and loss 0, as iperf3 writes them |
//! | `end.sum_received` (UDP) | `received_bytes`, `throughput_bps`, `jitter_ms`, `lost_packets`, `received_packets` + `lost_packets`, `loss_pct` |
//! | `…_bidir_reverse` (`intervals[].sum_bidir_reverse`, `end.sum_sent_bidir_reverse`, …) | the reverse direction of a `--bidir` test |
//! | `end.sender_tcp_congestion`, `end.receiver_tcp_congestion` | the sending and receiving sockets' `congestion` (else the host's default); left out when unknown, as iperf3 does |
//! | `end.cpu_utilization_percent.*` | 0.0: sonde does not measure CPU use |
//!
//! `seconds`, `start` and `end` of a whole-test object use `duration_s`
//! for the sender and `receiver_duration_s` for a TCP receiver (UDP has no
//! receiver time in sonde's result: `duration_s`). iperf3's receiver
//! object puts the receiver's time in `end` and the sender's in
//! `seconds`; so does this.
//!
//! # Fields sonde does not measure
//!
//! Filled the way iperf3 fills them when it has no value: `cookie` `""`;
//! `fq_rate`, `test_start.fqrate` 0 (no `--fq-rate`); `test_start.bytes`,
//! `test_start.blocks` 0 (no `-n`/`-k`); `test_start.gso`, `test_start.gro`
//! 0 (no `--gsro`: sonde picks GSO/GRO itself); `snd_wnd`, `rttvar`,
//! `pmtu`, `max_snd_wnd` 0; TCP `reorder` 0; `rtt`/`max_rtt`/`min_rtt`/
//! `mean_rtt`, `snd_cwnd`, `max_snd_cwnd`, `retransmits` 0 when sonde has
//! no TCP_INFO reading (any other unknown figure 0 too); every `cpu_utilization_percent` figure 0.0.
//! `system_info` lacks what `uname -a` adds after the kernel release
//! (build string, machine): sonde does not record them.
//!
//! # Numbers
//!
//! As iperf3: byte, packet, retransmit, window, RTT (µs) and port counts
//! are integers; rates, `seconds`, `start`, `end`, `jitter_ms`,
//! `lost_percent` and the CPU figures are floats. Object keys come out in
//! `serde_json`'s order (sorted), not iperf3's; JSON readers do not care.
//!
//! # iperf3 versions
//!
//! The layout is 3.21's, a superset of 3.12's: a script written for 3.12
//! finds every key it knows. Keys 3.12 lacks, with the release that added
//! them: `start.fq_rate`, `start.test_start.bidir` and `.fqrate` (3.13),
//! `start.test_start.interval` (3.17), `start.timestamp.timemillisecs`
//! and `reorder` in a sending TCP stream's interval and end objects
//! (3.20), `start.test_start.gso` and `.gro` (3.21). 3.12 also writes
//! `sock_bufsize`, `sndbuf_actual` and `rcvbuf_actual` once per stream in
//! `start` (duplicate keys; a JSON reader keeps the last); 3.14 and later
//! write them once, as here. UDP `end.sum_sent` and `end.sum_received`
//! exist since 3.11; older scripts read `end.sum`, which is still written
//! (sender bytes and rate with the receiver's loss, as iperf3 fills it).

mod tcp;
mod timestamp;
mod udp;

#[cfg(test)]
mod tests;

pub use tcp::tcp_to_iperf3;
pub use udp::udp_to_iperf3;

#[cfg(test)]
pub(crate) use timestamp::rfc1123;
use timestamp::timestamp;

use serde_json::{json, Map, Value};
use sonde_model::{
    Direction, Dscp, Figures, HostEnv, SocketInForce, TestKind, TestResult, Timestamp,
};

/// `r` in iperf3's `-J` layout: TCP and UDP; `None` for ping, which has
/// no iperf3 layout.
pub fn to_iperf3(r: &TestResult) -> Option<Value> {
    match r.test {
        TestKind::Tcp => tcp_to_iperf3(r),
        TestKind::Udp => udp_to_iperf3(r),
        TestKind::Ping | TestKind::Http | TestKind::Trace => None,
    }
}
use std::net::SocketAddr;
use std::time::Duration;

/// Keys (array positions written `[]`) that iperf3 3.21 writes and 3.12
/// does not; everything else is common to both.
#[cfg(test)]
pub(crate) const ADDED_AFTER_3_12: &[&str] = &[
    "start.fq_rate",
    "start.timestamp.timemillisecs",
    "start.test_start.bidir",
    "start.test_start.fqrate",
    "start.test_start.interval",
    "start.test_start.gso",
    "start.test_start.gro",
    "intervals[].streams[].reorder",
    "end.streams[].sender.reorder",
];

/// What `start` needs from a TCP or UDP result.
pub(crate) struct RunInfo<'a> {
    /// `"TCP"` or `"UDP"`.
    pub protocol: &'static str,
    pub sonde_version: &'a str,
    pub host: &'a str,
    pub port: u16,
    pub direction: Direction,
    pub parallel: u16,
    pub blksize: u64,
    pub omit: Duration,
    pub time: Duration,
    pub interval: Duration,
    pub dscp: Option<Dscp>,
    pub target_bitrate: u64,
    pub sock_bufsize: u64,
    pub client: &'a HostEnv,
    pub start: Timestamp,
    /// Each stream's number and the client's socket.
    pub sockets: Vec<(u16, &'a SocketInForce)>,
}

/// The `start` object both protocols share (TCP adds its MSS key).
/// The whole document of `r`: `start`, `intervals`, `end`, and, when
/// set, `title` and an iperf3 server's `server_output_text`.
pub(crate) fn document(
    r: &TestResult,
    start: Map<String, Value>,
    intervals: Value,
    end: Value,
) -> Value {
    let mut top = Map::new();
    top.insert("start".into(), Value::Object(start));
    top.insert("intervals".into(), intervals);
    top.insert("end".into(), end);
    if let Some(title) = &r.title {
        top.insert("title".into(), Value::from(title.as_str()));
    }
    if let Some(text) = &r.server_output {
        top.insert("server_output_text".into(), Value::from(text.as_str()));
    }
    Value::Object(top)
}

pub(crate) fn start_section(run: &RunInfo<'_>) -> Map<String, Value> {
    let first = run.sockets.first().map(|(_, s)| *s);
    let mut start = Map::new();
    start.insert("connected".into(), connected(&run.sockets));
    start.insert(
        "version".into(),
        json!(format!("sonde {}", run.sonde_version)),
    );
    start.insert("system_info".into(), json!(system_info(run.client)));
    start.insert("timestamp".into(), timestamp(run.start));
    start.insert(
        "connecting_to".into(),
        json!({ "host": run.host, "port": run.port }),
    );
    start.insert("cookie".into(), json!(""));
    start.insert("target_bitrate".into(), json!(run.target_bitrate));
    start.insert("fq_rate".into(), json!(0));
    start.insert("sock_bufsize".into(), json!(run.sock_bufsize));
    start.insert(
        "sndbuf_actual".into(),
        json!(first.and_then(|s| s.sndbuf_bytes).unwrap_or(0)),
    );
    start.insert(
        "rcvbuf_actual".into(),
        json!(first.and_then(|s| s.rcvbuf_bytes).unwrap_or(0)),
    );
    start.insert("test_start".into(), test_start(run));
    start
}

fn test_start(run: &RunInfo<'_>) -> Value {
    json!({
        "protocol": run.protocol,
        "num_streams": run.parallel,
        "blksize": run.blksize,
        "omit": whole_secs(run.omit),
        "duration": whole_secs(run.time),
        "bytes": 0,
        "blocks": 0,
        "reverse": flag(run.direction == Direction::Reverse),
        "tos": run.dscp.map_or(0, Dscp::tos_byte),
        "target_bitrate": run.target_bitrate,
        "bidir": flag(run.direction == Direction::Bidir),
        "fqrate": 0,
        "interval": run.interval.as_secs_f64(),
        "gso": 0,
        "gro": 0,
    })
}

/// One `connected[]` entry per stream, from the client's socket.
fn connected(sockets: &[(u16, &SocketInForce)]) -> Value {
    sockets
        .iter()
        .map(|(stream, s)| {
            json!({
                "socket": stream,
                "local_host": host(s.local),
                "local_port": s.local.port(),
                "remote_host": host(s.remote),
                "remote_port": s.remote.port(),
            })
        })
        .collect()
}

/// An address as iperf3 prints it: no brackets, IPv4-mapped as IPv4.
fn host(addr: SocketAddr) -> String {
    addr.ip().to_canonical().to_string()
}

/// `uname`-like: OS name, host name, kernel release (empty parts left out).
pub(crate) fn system_info(env: &HostEnv) -> String {
    [os_name(&env.os), env.hostname.as_str(), env.kernel.as_str()]
        .into_iter()
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The kernel's name for sonde's OS family, as `uname -s` prints it.
fn os_name(os: &str) -> &str {
    match os {
        "linux" => "Linux",
        "macos" => "Darwin",
        "freebsd" => "FreeBSD",
        "openbsd" => "OpenBSD",
        "netbsd" => "NetBSD",
        "windows" => "Windows",
        other => other,
    }
}

/// A time in seconds as iperf3 writes `omit` and `duration`: an integer
/// when whole (iperf3 only takes whole seconds), else a float.
fn whole_secs(d: Duration) -> Value {
    if d.subsec_nanos() == 0 {
        json!(d.as_secs())
    } else {
        json!(d.as_secs_f64())
    }
}

/// iperf3's 0/1 flags.
fn flag(on: bool) -> u8 {
    u8::from(on)
}

/// Bits per second of `bytes` over `secs`; 0 when no time passed.
pub(crate) fn bits_per_second(bytes: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        bytes as f64 * 8.0 / secs
    } else {
        0.0
    }
}

/// A rate in bits per second as iperf3's float; 0.0 when not known.
pub(crate) fn rate(bps: Option<u64>) -> f64 {
    bps.map_or(0.0, |b| b as f64)
}

/// A stream's number (iperf3's `socket`).
pub(crate) fn stream_no(f: &Figures) -> u16 {
    f.stream.unwrap_or_default()
}

/// Milliseconds as iperf3's integer microseconds.
pub(crate) fn micros(ms: f64) -> u64 {
    if ms.is_finite() && ms > 0.0 {
        (ms * 1000.0).round() as u64
    } else {
        0
    }
}

/// Whether the client writes a stream of this direction (iperf3's
/// `sender` flag, seen from the client).
pub(crate) fn client_sends(d: Direction) -> bool {
    d != Direction::Reverse
}

/// The names of one direction's sums: a `--bidir` test's reverse
/// direction gets the `_bidir_reverse` ones.
pub(crate) struct SumNames {
    pub sum: &'static str,
    pub sent: &'static str,
    pub received: &'static str,
}

impl SumNames {
    pub fn of(test: Direction, flow: Direction) -> Self {
        if test == Direction::Bidir && flow == Direction::Reverse {
            Self {
                sum: "sum_bidir_reverse",
                sent: "sum_sent_bidir_reverse",
                received: "sum_received_bidir_reverse",
            }
        } else {
            Self {
                sum: "sum",
                sent: "sum_sent",
                received: "sum_received",
            }
        }
    }
}

/// `start`, `end`, `seconds` of an interval or a whole-test object.
pub(crate) fn span(start: f64, end: f64, seconds: f64) -> Value {
    json!({ "start": start, "end": end, "seconds": seconds })
}

/// An interval's times as iperf3 writes them: the warm-up's intervals
/// (`"omitted": true`) from the start of the test, the measured ones
/// from the end of the warm-up, so that they start again at 0.
pub(crate) fn interval_span(iv: &sonde_model::Interval, omit: Duration) -> Value {
    let shift = if iv.omitted { 0.0 } else { omit.as_secs_f64() };
    let start = (iv.start_s - shift).max(0.0);
    let end = (iv.end_s - shift).max(start);
    span(start, end, iv.end_s - iv.start_s)
}

/// The fields of all `parts` (JSON objects) in one object.
pub(crate) fn merged<const N: usize>(parts: [Value; N]) -> Value {
    let mut all = Map::new();
    for part in parts {
        if let Value::Object(fields) = part {
            all.extend(fields);
        }
    }
    Value::Object(all)
}

/// `end.cpu_utilization_percent`: sonde does not measure CPU use.
pub(crate) fn cpu_utilization() -> Value {
    json!({
        "host_total": 0.0,
        "host_user": 0.0,
        "host_system": 0.0,
        "remote_total": 0.0,
        "remote_user": 0.0,
        "remote_system": 0.0,
    })
}
