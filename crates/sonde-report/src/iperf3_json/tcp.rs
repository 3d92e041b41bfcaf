//! A TCP result in iperf3's layout (see the module docs for the mapping).

use super::{
    bits_per_second, client_sends, cpu_utilization, document, merged, micros, span, start_section,
    RunInfo, SumNames,
};
use serde_json::{json, Map, Value};
use sonde_model::{
    Direction, DirectionSummary, Interval, IntervalSum, StreamInterval, StreamResult, TcpResult,
};

/// `r` as `iperf3 -J` would have written it on the client.
pub fn tcp_to_iperf3(r: &TcpResult) -> Value {
    document(
        start(r),
        r.intervals.iter().map(|iv| interval(r, iv)).collect(),
        end(r),
        r.title.as_deref(),
    )
}

fn start(r: &TcpResult) -> Map<String, Value> {
    let s = &r.spec;
    let mut start = start_section(&RunInfo {
        protocol: "TCP",
        sonde_version: &r.sonde_version,
        host: &s.host,
        port: s.port,
        direction: s.direction,
        parallel: s.parallel,
        blksize: s.length.bytes(),
        omit: s.omit,
        time: s.time,
        interval: s.interval,
        dscp: s.dscp,
        target_bitrate: s.bitrate.map_or(0, |b| b.bps()),
        sock_bufsize: s.window.map_or(0, |w| w.bytes()),
        client: &r.env.client,
        start: r.start,
        sockets: r
            .streams
            .iter()
            .map(|st| (st.stream, &st.client_socket))
            .collect(),
    });
    // iperf3 names the key after where the MSS came from.
    match s.mss {
        Some(mss) => start.insert("tcp_mss".into(), json!(mss)),
        None => start.insert("tcp_mss_default".into(), json!(control_mss(r))),
    };
    start
}

/// The MSS the kernel chose, from the first stream (iperf3 reads it from
/// its control connection, to the same address).
fn control_mss(r: &TcpResult) -> u32 {
    r.streams
        .first()
        .and_then(|st| st.client_socket.mss_bytes)
        .unwrap_or(0)
}

fn interval(r: &TcpResult, iv: &Interval) -> Value {
    let mut obj = Map::new();
    obj.insert(
        "streams".into(),
        iv.streams.iter().map(|s| interval_stream(iv, s)).collect(),
    );
    for &flow in r.spec.direction.flows() {
        let sum = iv.sums.iter().find(|s| s.direction == flow);
        obj.insert(
            SumNames::of(r.spec.direction, flow).sum.into(),
            interval_sum(iv, flow, sum),
        );
    }
    Value::Object(obj)
}

fn interval_span(iv: &Interval) -> Value {
    span(iv.start_s, iv.end_s, iv.end_s - iv.start_s)
}

/// One stream in one interval, as the client saw it.
fn interval_stream(iv: &Interval, s: &StreamInterval) -> Value {
    let secs = iv.end_s - iv.start_s;
    let fields = if client_sends(s.direction) {
        json!({
            "socket": s.stream,
            "bytes": s.sent_bytes,
            "bits_per_second": bits_per_second(s.sent_bytes, secs),
            "retransmits": s.retransmits.unwrap_or(0),
            "snd_cwnd": s.cwnd_bytes.unwrap_or(0),
            "snd_wnd": 0,
            "rtt": s.rtt_ms.map_or(0, micros),
            "rttvar": 0,
            "pmtu": 0,
            "reorder": 0,
            "omitted": iv.omitted,
            "sender": true,
        })
    } else {
        json!({
            "socket": s.stream,
            "bytes": s.received_bytes,
            "bits_per_second": s.throughput_bps as f64,
            "omitted": iv.omitted,
            "sender": false,
        })
    };
    merged([interval_span(iv), fields])
}

/// One direction's streams in one interval (zeros if sonde has no sum).
fn interval_sum(iv: &Interval, flow: Direction, sum: Option<&IntervalSum>) -> Value {
    let secs = iv.end_s - iv.start_s;
    let fields = if client_sends(flow) {
        let bytes = sum.map_or(0, |s| s.sent_bytes);
        json!({
            "bytes": bytes,
            "bits_per_second": bits_per_second(bytes, secs),
            "retransmits": sum.and_then(|s| s.retransmits).unwrap_or(0),
            "omitted": iv.omitted,
            "sender": true,
        })
    } else {
        json!({
            "bytes": sum.map_or(0, |s| s.received_bytes),
            "bits_per_second": sum.map_or(0.0, |s| s.throughput_bps as f64),
            "omitted": iv.omitted,
            "sender": false,
        })
    };
    merged([interval_span(iv), fields])
}

fn end(r: &TcpResult) -> Value {
    let mut end = Map::new();
    end.insert(
        "streams".into(),
        r.streams.iter().map(|s| end_stream(r, s)).collect(),
    );
    for &flow in r.spec.direction.flows() {
        let names = SumNames::of(r.spec.direction, flow);
        let d = direction(r, flow);
        let sender = client_sends(flow);
        end.insert(
            names.sent.into(),
            merged([
                span(0.0, r.duration_s, r.duration_s),
                json!({
                    "bytes": d.sent_bytes,
                    "bits_per_second": d.sender_throughput_bps as f64,
                    "retransmits": d.retransmits,
                    "sender": sender,
                }),
            ]),
        );
        end.insert(
            names.received.into(),
            merged([
                span(0.0, d.receiver_duration_s, d.receiver_duration_s),
                json!({
                    "bytes": d.bytes,
                    "bits_per_second": d.throughput_bps as f64,
                    "sender": sender,
                }),
            ]),
        );
    }
    end.insert("cpu_utilization_percent".into(), cpu_utilization());
    let (sender_cc, receiver_cc) = congestion(r);
    if let Some(cc) = sender_cc {
        end.insert("sender_tcp_congestion".into(), json!(cc));
    }
    if let Some(cc) = receiver_cc {
        end.insert("receiver_tcp_congestion".into(), json!(cc));
    }
    Value::Object(end)
}

/// The summary of one direction. A result without per-direction figures
/// (one direction ran) falls back to the whole-test ones; a missing
/// direction of a `--bidir` test is all zeros.
fn direction(r: &TcpResult, flow: Direction) -> DirectionSummary {
    let own = match flow {
        Direction::Reverse => &r.summary.reverse,
        _ => &r.summary.forward,
    };
    if let Some(d) = own {
        return d.clone();
    }
    let s = &r.summary;
    let whole = r.spec.direction != Direction::Bidir;
    let pick = |v: u64| if whole { v } else { 0 };
    DirectionSummary {
        throughput_bps: pick(s.throughput_bps),
        bytes: pick(s.bytes),
        retransmits: pick(s.retransmits),
        sent_bytes: pick(s.sent_bytes),
        sender_throughput_bps: pick(s.sender_throughput_bps),
        receiver_duration_s: r.duration_s,
        streams: r.spec.parallel,
    }
}

/// One stream over the whole test: what its sender and receiver counted.
fn end_stream(r: &TcpResult, s: &StreamResult) -> Value {
    let sender = client_sends(s.direction);
    let rtt = RttFigures::of(r, s);
    let receiver_secs = direction(r, s.direction).receiver_duration_s;
    json!({
        "sender": merged([
            span(0.0, r.duration_s, r.duration_s),
            json!({
                "socket": s.stream,
                "bytes": s.sent_bytes,
                "bits_per_second": s.sender_throughput_bps as f64,
                "retransmits": s.retransmits.unwrap_or(0),
                "reorder": 0,
                "max_snd_cwnd": s.max_cwnd_bytes.unwrap_or(0),
                "max_snd_wnd": 0,
                "max_rtt": rtt.max,
                "min_rtt": rtt.min,
                "mean_rtt": rtt.mean,
                "sender": sender,
            }),
        ]),
        // iperf3 writes the receiver's time as `end`, the sender's as `seconds`.
        "receiver": merged([
            span(0.0, receiver_secs, r.duration_s),
            json!({
                "socket": s.stream,
                "bytes": s.received_bytes,
                "bits_per_second": s.throughput_bps as f64,
                "sender": sender,
            }),
        ]),
    })
}

/// A stream's smoothed RTT over the test, in µs, as iperf3 sums it up.
struct RttFigures {
    max: u64,
    min: u64,
    mean: u64,
}

impl RttFigures {
    /// Over the stream's interval readings after the warm-up; without any,
    /// from the end-of-test figures.
    fn of(r: &TcpResult, s: &StreamResult) -> Self {
        let samples: Vec<f64> = r
            .intervals
            .iter()
            .filter(|iv| !iv.omitted)
            .flat_map(|iv| &iv.streams)
            .filter(|si| si.stream == s.stream)
            .filter_map(|si| si.rtt_ms)
            .collect();
        if samples.is_empty() {
            let last = s.rtt_ms.map_or(0, micros);
            return Self {
                max: last,
                min: s.min_rtt_ms.map_or(last, micros),
                mean: last,
            };
        }
        let max = samples.iter().copied().fold(f64::MIN, f64::max);
        let min = samples.iter().copied().fold(f64::MAX, f64::min);
        let mean = samples.iter().sum::<f64>() / samples.len() as f64;
        Self {
            max: micros(max),
            min: micros(min),
            mean: micros(mean),
        }
    }
}

/// Congestion control of the sending and receiving ends of the test's
/// first direction: the sockets' own, else each host's default.
fn congestion(r: &TcpResult) -> (Option<String>, Option<String>) {
    let flow = r
        .spec
        .direction
        .flows()
        .first()
        .copied()
        .unwrap_or_default();
    let first = r.streams.iter().find(|s| s.direction == flow);
    let client = first
        .and_then(|s| s.client_socket.congestion.clone())
        .or_else(|| r.env.client.default_congestion.clone());
    let server = first
        .and_then(|s| s.server_socket.congestion.clone())
        .or_else(|| r.env.server.default_congestion.clone());
    if client_sends(flow) {
        (client, server)
    } else {
        (server, client)
    }
}
