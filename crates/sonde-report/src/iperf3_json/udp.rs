//! A UDP result in iperf3's layout (see the module docs for the mapping).

use super::{
    client_sends, cpu_utilization, document, interval_span, merged, rate, span, start_section,
    stream_no, RunInfo, SumNames,
};
use serde_json::{json, Map, Value};
use sonde_model::{Direction, Figures, Interval, TestResult, TestSpec, UdpSpec};

/// A UDP result and its spec.
struct Udp<'a> {
    r: &'a TestResult,
    spec: &'a UdpSpec,
}

/// `r` as `iperf3 -u -J` would have written it on the client; `None`
/// when `r` is not a UDP test.
pub fn udp_to_iperf3(r: &TestResult) -> Option<Value> {
    let TestSpec::Udp(spec) = &r.spec else {
        return None;
    };
    let u = Udp { r, spec };
    Some(document(
        r,
        start(&u),
        r.intervals.iter().map(|iv| interval(&u, iv)).collect(),
        end(&u),
    ))
}

fn start(u: &Udp<'_>) -> Map<String, Value> {
    let (r, s) = (u.r, u.spec);
    start_section(&RunInfo {
        protocol: "UDP",
        sonde_version: &r.sonde_version,
        host: &s.host,
        port: s.port,
        direction: s.direction,
        parallel: s.parallel,
        blksize: u64::from(s.payload_len()),
        omit: s.omit,
        time: s.time,
        interval: s.interval,
        dscp: s.dscp,
        target_bitrate: s.stream_rate().bps(),
        sock_bufsize: 0,
        client: &r.env.client,
        start: r.start,
        sockets: r
            .streams
            .iter()
            .map(|st| (stream_no(&st.figures), &st.client_socket))
            .collect(),
    })
}

/// Payload bytes the sender sent over `secs`: as counted, else from its
/// offered rate (a format-1 result has only the rate).
fn sent_bytes(c: &Figures, secs: f64) -> u64 {
    match (c.sent_bytes, c.sender_throughput_bps) {
        (Some(b), _) => b,
        (None, Some(bps)) if secs > 0.0 => (bps as f64 * secs / 8.0).round() as u64,
        _ => 0,
    }
}

/// Packets the loss is counted against (iperf3's receiver `packets`).
fn packets_due(c: &Figures) -> u64 {
    c.received_packets
        .unwrap_or(0)
        .saturating_add(c.lost_packets.unwrap_or(0))
}

fn interval(u: &Udp<'_>, iv: &Interval) -> Value {
    let mut obj = Map::new();
    obj.insert(
        "streams".into(),
        iv.streams
            .iter()
            .map(|s| {
                interval_entry(
                    iv,
                    u.spec.omit,
                    Some(stream_no(s)),
                    s.direction.unwrap_or_default(),
                    s,
                )
            })
            .collect(),
    );
    let none = Figures::default();
    for &flow in u.spec.direction.flows() {
        let counts = iv.sum(flow).unwrap_or(&none);
        obj.insert(
            SumNames::of(u.spec.direction, flow).sum.into(),
            interval_entry(iv, u.spec.omit, None, flow, counts),
        );
    }
    Value::Object(obj)
}

/// A stream (with its `socket`) or a direction's sum in one interval, as
/// the client saw it: a sender its packets, a receiver jitter and loss.
fn interval_entry(
    iv: &Interval,
    omit: std::time::Duration,
    socket: Option<u16>,
    flow: Direction,
    c: &Figures,
) -> Value {
    let secs = iv.end_s - iv.start_s;
    let fields = if client_sends(flow) {
        json!({
            "bytes": sent_bytes(c, secs),
            "bits_per_second": rate(c.sender_throughput_bps),
            "packets": c.sent_packets.unwrap_or(0),
            "omitted": iv.omitted,
            "sender": true,
        })
    } else {
        json!({
            "bytes": c.received_bytes.unwrap_or(0),
            "bits_per_second": rate(c.throughput_bps),
            "jitter_ms": c.jitter_ms.unwrap_or(0.0),
            "lost_packets": c.lost_packets.unwrap_or(0),
            "packets": packets_due(c),
            "lost_percent": c.loss_pct.unwrap_or(0.0),
            "omitted": iv.omitted,
            "sender": false,
        })
    };
    let socket = socket.map_or_else(|| json!({}), |s| json!({ "socket": s }));
    merged([interval_span(iv, omit), fields, socket])
}

fn end(u: &Udp<'_>) -> Value {
    let r = u.r;
    let secs = r.duration_s;
    let whole = || span(0.0, secs, secs);
    let mut end = Map::new();
    end.insert(
        "streams".into(),
        r.streams
            .iter()
            .map(|s| {
                let c = &s.figures;
                let sender = client_sends(c.direction.unwrap_or_default());
                let udp = merged([
                    whole(),
                    sender_and_quality(c, secs, sender),
                    json!({
                        "socket": stream_no(c),
                        "out_of_order": c.reordered.unwrap_or(0),
                    }),
                ]);
                json!({ "udp": udp })
            })
            .collect(),
    );
    let none = Figures::default();
    for &flow in u.spec.direction.flows() {
        let names = SumNames::of(u.spec.direction, flow);
        let c = r.summary.direction(flow).unwrap_or(&none);
        let sum = sender_and_quality(c, secs, client_sends(flow));
        end.insert(names.sum.into(), merged([whole(), sum]));
        end.insert(names.sent.into(), merged([whole(), sent_sum(c, secs)]));
        end.insert(names.received.into(), merged([whole(), received_sum(c)]));
    }
    end.insert("cpu_utilization_percent".into(), cpu_utilization());
    Value::Object(end)
}

/// iperf3's original UDP figures (`end.sum`, `end.streams[].udp`): the
/// sender's bytes and rate with the receiver's jitter and loss.
fn sender_and_quality(c: &Figures, secs: f64, sender: bool) -> Value {
    json!({
        "bytes": sent_bytes(c, secs),
        "bits_per_second": rate(c.sender_throughput_bps),
        "jitter_ms": c.jitter_ms.unwrap_or(0.0),
        "lost_packets": c.lost_packets.unwrap_or(0),
        "packets": packets_due(c),
        "lost_percent": c.loss_pct.unwrap_or(0.0),
        "sender": sender,
    })
}

/// `end.sum_sent`: what the sender sent; iperf3 writes no loss there.
fn sent_sum(c: &Figures, secs: f64) -> Value {
    json!({
        "bytes": sent_bytes(c, secs),
        "bits_per_second": rate(c.sender_throughput_bps),
        "jitter_ms": 0.0,
        "lost_packets": 0,
        "packets": c.sent_packets.unwrap_or(0),
        "lost_percent": 0.0,
        "sender": true,
    })
}

/// `end.sum_received`: what the receiver got, with jitter and loss.
fn received_sum(c: &Figures) -> Value {
    json!({
        "bytes": c.received_bytes.unwrap_or(0),
        "bits_per_second": rate(c.throughput_bps),
        "jitter_ms": c.jitter_ms.unwrap_or(0.0),
        "lost_packets": c.lost_packets.unwrap_or(0),
        "packets": packets_due(c),
        "lost_percent": c.loss_pct.unwrap_or(0.0),
        "sender": false,
    })
}
