//! A TCP result in iperf3's layout (see the module docs for the mapping).

use super::{
    bits_per_second, client_sends, cpu_utilization, document, interval_span, merged, micros, rate,
    span, start_section, stream_no, RunInfo, SumNames,
};
use serde_json::{json, Map, Value};
use sonde_model::{Direction, Figures, Interval, StreamResult, TcpSpec, TestResult, TestSpec};
use std::time::Duration;

/// A TCP result and its spec.
struct Tcp<'a> {
    r: &'a TestResult,
    spec: &'a TcpSpec,
}

/// `r` as `iperf3 -J` would have written it on the client; `None` when
/// `r` is not a TCP test.
pub fn tcp_to_iperf3(r: &TestResult) -> Option<Value> {
    let TestSpec::Tcp(spec) = &r.spec else {
        return None;
    };
    let t = Tcp { r, spec };
    Some(document(
        r,
        start(&t),
        r.intervals.iter().map(|iv| interval(&t, iv)).collect(),
        end(&t),
    ))
}

fn start(t: &Tcp<'_>) -> Map<String, Value> {
    let (r, s) = (t.r, t.spec);
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
            .map(|st| (stream_no(&st.figures), &st.client_socket))
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
fn control_mss(r: &TestResult) -> u32 {
    r.streams
        .first()
        .and_then(|st| st.client_socket.mss_bytes)
        .unwrap_or(0)
}

fn interval(t: &Tcp<'_>, iv: &Interval) -> Value {
    let mut obj = Map::new();
    obj.insert(
        "streams".into(),
        iv.streams
            .iter()
            .map(|s| interval_stream(iv, t.spec.omit, s))
            .collect(),
    );
    for &flow in t.spec.direction.flows() {
        obj.insert(
            SumNames::of(t.spec.direction, flow).sum.into(),
            interval_sum(iv, t.spec.omit, flow, iv.sum(flow)),
        );
    }
    Value::Object(obj)
}

/// One stream in one interval, as the client saw it.
fn interval_stream(iv: &Interval, omit: Duration, s: &Figures) -> Value {
    let secs = iv.end_s - iv.start_s;
    let fields = if client_sends(s.direction.unwrap_or_default()) {
        let sent = s.sent_bytes.unwrap_or(0);
        json!({
            "socket": stream_no(s),
            "bytes": sent,
            "bits_per_second": bits_per_second(sent, secs),
            "retransmits": s.retransmits.unwrap_or(0),
            "snd_cwnd": s.cwnd_bytes.unwrap_or(0),
            "snd_wnd": 0,
            "rtt": s.srtt_ms.map_or(0, micros),
            "rttvar": 0,
            "pmtu": 0,
            "reorder": 0,
            "omitted": iv.omitted,
            "sender": true,
        })
    } else {
        json!({
            "socket": stream_no(s),
            "bytes": s.received_bytes.unwrap_or(0),
            "bits_per_second": rate(s.throughput_bps),
            "omitted": iv.omitted,
            "sender": false,
        })
    };
    merged([interval_span(iv, omit), fields])
}

/// One direction's streams in one interval (zeros if sonde has no sum).
fn interval_sum(iv: &Interval, omit: Duration, flow: Direction, sum: Option<&Figures>) -> Value {
    let secs = iv.end_s - iv.start_s;
    let fields = if client_sends(flow) {
        let bytes = sum.and_then(|s| s.sent_bytes).unwrap_or(0);
        json!({
            "bytes": bytes,
            "bits_per_second": bits_per_second(bytes, secs),
            "retransmits": sum.and_then(|s| s.retransmits).unwrap_or(0),
            "omitted": iv.omitted,
            "sender": true,
        })
    } else {
        json!({
            "bytes": sum.and_then(|s| s.received_bytes).unwrap_or(0),
            "bits_per_second": rate(sum.and_then(|s| s.throughput_bps)),
            "omitted": iv.omitted,
            "sender": false,
        })
    };
    merged([interval_span(iv, omit), fields])
}

fn end(t: &Tcp<'_>) -> Value {
    let r = t.r;
    let mut end = Map::new();
    end.insert(
        "streams".into(),
        r.streams.iter().map(|s| end_stream(t, s)).collect(),
    );
    for &flow in t.spec.direction.flows() {
        let names = SumNames::of(t.spec.direction, flow);
        let d = direction(t, flow);
        let sender = client_sends(flow);
        end.insert(
            names.sent.into(),
            merged([
                span(0.0, r.duration_s, r.duration_s),
                json!({
                    "bytes": d.sent_bytes,
                    "bits_per_second": d.sender_bps as f64,
                    "retransmits": d.retransmits,
                    "sender": sender,
                }),
            ]),
        );
        end.insert(
            names.received.into(),
            merged([
                span(0.0, d.receiver_secs, d.receiver_secs),
                json!({
                    "bytes": d.received_bytes,
                    "bits_per_second": d.receiver_bps as f64,
                    "sender": sender,
                }),
            ]),
        );
    }
    end.insert("cpu_utilization_percent".into(), cpu_utilization());
    let (sender_cc, receiver_cc) = congestion(t);
    if let Some(cc) = sender_cc {
        end.insert("sender_tcp_congestion".into(), json!(cc));
    }
    if let Some(cc) = receiver_cc {
        end.insert("receiver_tcp_congestion".into(), json!(cc));
    }
    Value::Object(end)
}

/// A direction's whole-test figures as iperf3 writes them: 0 where sonde
/// does not know one.
struct DirectionTotals {
    sent_bytes: u64,
    sender_bps: u64,
    retransmits: u64,
    received_bytes: u64,
    receiver_bps: u64,
    receiver_secs: f64,
}

/// The summary of one direction. A result without per-direction figures
/// (one direction ran) falls back to the whole-test ones; a missing
/// direction of a `--bidir` test is all zeros.
fn direction(t: &Tcp<'_>, flow: Direction) -> DirectionTotals {
    let s = &t.r.summary;
    let own = match flow {
        Direction::Reverse => s.reverse.as_ref(),
        _ => s.forward.as_ref(),
    };
    let whole = t.spec.direction != Direction::Bidir;
    let none = Figures::default();
    let f = own.or(s.total.as_ref().filter(|_| whole)).unwrap_or(&none);
    DirectionTotals {
        sent_bytes: f.sent_bytes.unwrap_or(0),
        sender_bps: f.sender_throughput_bps.unwrap_or(0),
        retransmits: f.retransmits.unwrap_or(0),
        received_bytes: f.received_bytes.unwrap_or(0),
        receiver_bps: f.throughput_bps.unwrap_or(0),
        receiver_secs: own
            .and_then(|d| d.receiver_duration_s)
            .unwrap_or(t.r.duration_s),
    }
}

/// One stream over the whole test: what its sender and receiver counted.
fn end_stream(t: &Tcp<'_>, s: &StreamResult) -> Value {
    let r = t.r;
    let f = &s.figures;
    let flow = f.direction.unwrap_or_default();
    let sender = client_sends(flow);
    let rtt = RttFigures::of(r, f);
    let receiver_secs = direction(t, flow).receiver_secs;
    json!({
        "sender": merged([
            span(0.0, r.duration_s, r.duration_s),
            json!({
                "socket": stream_no(f),
                "bytes": f.sent_bytes.unwrap_or(0),
                "bits_per_second": rate(f.sender_throughput_bps),
                "retransmits": f.retransmits.unwrap_or(0),
                "reorder": 0,
                "max_snd_cwnd": f.max_cwnd_bytes.unwrap_or(0),
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
                "socket": stream_no(f),
                "bytes": f.received_bytes.unwrap_or(0),
                "bits_per_second": rate(f.throughput_bps),
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
    fn of(r: &TestResult, s: &Figures) -> Self {
        let samples: Vec<f64> = r
            .intervals
            .iter()
            .filter(|iv| !iv.omitted)
            .flat_map(|iv| &iv.streams)
            .filter(|si| si.stream == s.stream)
            .filter_map(|si| si.srtt_ms)
            .collect();
        if samples.is_empty() {
            let last = s.srtt_ms.map_or(0, micros);
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
fn congestion(t: &Tcp<'_>) -> (Option<String>, Option<String>) {
    let r = t.r;
    let flow = t
        .spec
        .direction
        .flows()
        .first()
        .copied()
        .unwrap_or_default();
    let first = r
        .streams
        .iter()
        .find(|s| s.figures.direction.unwrap_or_default() == flow);
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
