//! A UDP result in iperf3's layout (see the module docs for the mapping).

use super::{
    client_sends, cpu_utilization, document, merged, span, start_section, RunInfo, SumNames,
};
use serde_json::{json, Map, Value};
use sonde_model::udp_result::{UdpCounts, UdpInterval};
use sonde_model::{Direction, UdpResult};

/// `r` as `iperf3 -u -J` would have written it on the client.
pub fn udp_to_iperf3(r: &UdpResult) -> Value {
    document(
        start(r),
        r.intervals.iter().map(|iv| interval(r, iv)).collect(),
        end(r),
        r.title.as_deref(),
    )
}

fn start(r: &UdpResult) -> Map<String, Value> {
    let s = &r.spec;
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
            .map(|st| (st.stream, &st.client_socket))
            .collect(),
    })
}

/// Payload bytes the sender sent over `secs`, from its offered rate
/// (sonde counts the receiver's bytes, the sender's packets and rate).
fn sent_bytes(c: &UdpCounts, secs: f64) -> u64 {
    if secs > 0.0 {
        (c.offered_bps as f64 * secs / 8.0).round() as u64
    } else {
        0
    }
}

/// Packets the loss is counted against (iperf3's receiver `packets`).
fn packets_due(c: &UdpCounts) -> u64 {
    c.received + c.lost
}

fn interval(r: &UdpResult, iv: &UdpInterval) -> Value {
    let mut obj = Map::new();
    obj.insert(
        "streams".into(),
        iv.streams
            .iter()
            .map(|s| interval_entry(iv, Some(s.stream), s.direction, &s.counts))
            .collect(),
    );
    let none = UdpCounts::default();
    for &flow in r.spec.direction.flows() {
        let counts = iv
            .sums
            .iter()
            .find(|s| s.direction == flow)
            .map_or(&none, |s| &s.counts);
        obj.insert(
            SumNames::of(r.spec.direction, flow).sum.into(),
            interval_entry(iv, None, flow, counts),
        );
    }
    Value::Object(obj)
}

/// A stream (with its `socket`) or a direction's sum in one interval, as
/// the client saw it: a sender its packets, a receiver jitter and loss.
fn interval_entry(iv: &UdpInterval, socket: Option<u16>, flow: Direction, c: &UdpCounts) -> Value {
    let secs = iv.end_s - iv.start_s;
    let fields = if client_sends(flow) {
        json!({
            "bytes": sent_bytes(c, secs),
            "bits_per_second": c.offered_bps as f64,
            "packets": c.sent,
            "omitted": iv.omitted,
            "sender": true,
        })
    } else {
        json!({
            "bytes": c.bytes,
            "bits_per_second": c.throughput_bps as f64,
            "jitter_ms": c.jitter_ms,
            "lost_packets": c.lost,
            "packets": packets_due(c),
            "lost_percent": c.loss_pct,
            "omitted": iv.omitted,
            "sender": false,
        })
    };
    let socket = socket.map_or_else(|| json!({}), |s| json!({ "socket": s }));
    merged([span(iv.start_s, iv.end_s, secs), fields, socket])
}

fn end(r: &UdpResult) -> Value {
    let secs = r.duration_s;
    let whole = || span(0.0, secs, secs);
    let mut end = Map::new();
    end.insert(
        "streams".into(),
        r.streams
            .iter()
            .map(|s| {
                let c = &s.counts;
                let udp = merged([
                    whole(),
                    sender_and_quality(c, secs, client_sends(s.direction)),
                    json!({ "socket": s.stream, "out_of_order": c.reordered }),
                ]);
                json!({ "udp": udp })
            })
            .collect(),
    );
    let none = UdpCounts::default();
    for &flow in r.spec.direction.flows() {
        let names = SumNames::of(r.spec.direction, flow);
        let own = match flow {
            Direction::Reverse => &r.summary.reverse,
            _ => &r.summary.forward,
        };
        let c = own.as_ref().map_or(&none, |d| &d.counts);
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
fn sender_and_quality(c: &UdpCounts, secs: f64, sender: bool) -> Value {
    json!({
        "bytes": sent_bytes(c, secs),
        "bits_per_second": c.offered_bps as f64,
        "jitter_ms": c.jitter_ms,
        "lost_packets": c.lost,
        "packets": packets_due(c),
        "lost_percent": c.loss_pct,
        "sender": sender,
    })
}

/// `end.sum_sent`: what the sender sent; iperf3 writes no loss there.
fn sent_sum(c: &UdpCounts, secs: f64) -> Value {
    json!({
        "bytes": sent_bytes(c, secs),
        "bits_per_second": c.offered_bps as f64,
        "jitter_ms": 0.0,
        "lost_packets": 0,
        "packets": c.sent,
        "lost_percent": 0.0,
        "sender": true,
    })
}

/// `end.sum_received`: what the receiver got, with jitter and loss.
fn received_sum(c: &UdpCounts) -> Value {
    json!({
        "bytes": c.bytes,
        "bits_per_second": c.throughput_bps as f64,
        "jitter_ms": c.jitter_ms,
        "lost_packets": c.lost,
        "packets": packets_due(c),
        "lost_percent": c.loss_pct,
        "sender": false,
    })
}
