//! tcp, udp and ping through the library runner with two consumers on
//! the event channel at once (the text printer and the JSON writer): both
//! see the same events, the live intervals are the client's own samples
//! of the final result, and the JSON written is the result the run
//! returned, as `-J` prints it.

use sonde_model::{
    load_result, Direction, Event, Interval, PingProto, PingSpec, TcpSpec, TestResult, TestSpec,
    UdpSpec,
};
use sonde_report::{result_json, JsonLayout, LiveText};
use sonde_run::{Events, Stop};
use sonde_server::{Reflector, ReflectorConfig, Server, ServerConfig};
use std::net::{IpAddr, Ipv6Addr};
use std::thread::JoinHandle;
use std::time::Duration;

/// A sonde server and a STAMP reflector in this process, on [::1].
fn server() -> (u16, u16) {
    let bind = vec![IpAddr::V6(Ipv6Addr::LOCALHOST)];
    let reflector = Reflector::bind(
        &ReflectorConfig {
            port: 0,
            ..ReflectorConfig::default()
        },
        &bind,
    )
    .unwrap()
    .unwrap();
    let reflector_port = reflector.local_addrs()[0].port();
    reflector.spawn();
    let server = Server::bind(ServerConfig {
        bind,
        port: 0,
        ..ServerConfig::default()
    })
    .unwrap();
    (server.spawn()[0].port(), reflector_port)
}

/// What one consumer saw.
#[derive(Default)]
struct Seen {
    intervals: Vec<Interval>,
    replies: usize,
    /// The text printer's lines, or the JSON writer's document.
    text: String,
}

fn printer(spec: &TestSpec, rx: std::sync::mpsc::Receiver<Event>) -> JoinHandle<Seen> {
    let mut live = LiveText::for_spec(spec);
    std::thread::spawn(move || {
        let mut seen = Seen::default();
        for e in rx {
            seen.text.push_str(&live.on_event(&e).stdout);
            match e {
                Event::Interval(i) => seen.intervals.push(i),
                Event::Reply(_) => seen.replies += 1,
                _ => {}
            }
        }
        seen
    })
}

fn json_writer(rx: std::sync::mpsc::Receiver<Event>) -> JoinHandle<Seen> {
    std::thread::spawn(move || {
        let mut seen = Seen::default();
        for e in rx {
            match e {
                Event::Interval(i) => seen.intervals.push(i),
                Event::Reply(_) => seen.replies += 1,
                Event::Finished(r) => seen.text = result_json(&r, JsonLayout::Sonde).unwrap(),
                _ => {}
            }
        }
        seen
    })
}

/// Runs `spec` with both consumers; checks what they share.
fn run_watched(spec: TestSpec) -> (TestResult, Seen, Seen) {
    let events = Events::new();
    let text = printer(&spec, events.subscribe());
    let json = json_writer(events.subscribe());
    let result = sonde_run::run(&spec, &Stop::new(), &events).unwrap();
    events.close();
    let (text, json) = (text.join().unwrap(), json.join().unwrap());
    assert_eq!(
        text.intervals, json.intervals,
        "both saw the same intervals"
    );
    assert_eq!(text.replies, json.replies);
    assert_eq!(
        load_result(&json.text).unwrap(),
        result,
        "the JSON written is the result returned"
    );
    (result, text, json)
}

#[test]
fn tcp_events_reach_both_consumers_and_match_the_result() {
    let (port, _) = server();
    let spec = TestSpec::Tcp(TcpSpec {
        host: "::1".into(),
        port,
        time: Duration::from_secs(2),
        interval: Duration::from_millis(500),
        parallel: 2,
        ..TcpSpec::default()
    });
    let (result, text, _) = run_watched(spec);
    assert_eq!(text.intervals.len(), result.intervals.len());
    assert!(text.intervals.len() >= 4, "{}", text.intervals.len());
    // The client sends: each live interval's bytes are its own samples,
    // which the result keeps as the sender's figures.
    for (live, kept) in text.intervals.iter().zip(&result.intervals) {
        for (l, k) in live.streams.iter().zip(&kept.streams) {
            assert_eq!(l.stream, k.stream);
            assert_eq!(l.sent_bytes, k.sent_bytes);
            assert!(l.received_bytes.is_none(), "the client did not receive");
        }
        assert_eq!(live.sum(Direction::Forward).unwrap().streams, Some(2));
    }
    assert_eq!(text.text.matches("[SUM]").count(), text.intervals.len());
}

#[test]
fn udp_events_reach_both_consumers_and_match_the_result() {
    let (port, _) = server();
    let spec = TestSpec::Udp(UdpSpec {
        host: "::1".into(),
        port,
        time: Duration::from_secs(2),
        direction: Direction::Reverse,
        bitrate: sonde_model::Rate::from_bps(2_000_000),
        ..UdpSpec::default()
    });
    let (result, text, _) = run_watched(spec);
    assert_eq!(text.intervals.len(), 2);
    // The client receives: its live counts are the receiver's figures.
    let live: u64 = text
        .intervals
        .iter()
        .map(|i| i.streams[0].received_packets.unwrap())
        .sum();
    let total = result.summary.reverse.as_ref().unwrap();
    assert_eq!(Some(live), total.received_packets);
    assert!(live > 300, "{live} packets at 2 Mbit/s for 2 s");
}

/// Forward UDP: the client sends, yet each live interval already has
/// the server's count of it (received, lost against the sequence
/// numbers due), the same count the server's final report gives.
#[test]
fn a_udp_sender_gets_the_receiver_s_count_of_each_interval_live() {
    let (port, _) = server();
    for rate in [4_000_000, 0] {
        let spec = TestSpec::Udp(UdpSpec {
            host: "::1".into(),
            port,
            time: Duration::from_secs(3),
            interval: Duration::from_millis(500),
            bitrate: sonde_model::Rate::from_bps(rate),
            ..UdpSpec::default()
        });
        let (result, text, _) = run_watched(spec);
        assert_eq!(text.intervals.len(), result.intervals.len());
        assert!(text.intervals.len() >= 6, "{}", text.intervals.len());
        let mut live_received = 0;
        for (live, kept) in text.intervals.iter().zip(&result.intervals) {
            let (l, k) = (&live.streams[0], &kept.streams[0]);
            assert_eq!(l.sent_packets, k.sent_packets, "the client's own count");
            let received = l
                .received_packets
                .unwrap_or_else(|| panic!("{rate} bit/s: no live count at {}", live.start_s));
            assert_eq!(Some(received), k.received_packets, "the server's count");
            assert_eq!(l.lost_packets, k.lost_packets);
            assert_eq!(l.loss_pct, k.loss_pct);
            live_received += received;
        }
        let total = result.summary.forward.as_ref().unwrap();
        assert_eq!(Some(live_received), total.received_packets);
        assert!(
            text.text.contains(" at the receiver"),
            "the live lines show it: {}",
            text.text
        );
    }
}

#[test]
fn ping_events_reach_both_consumers_and_match_the_result() {
    let (_, reflector) = server();
    let spec = TestSpec::Ping(PingSpec {
        host: "::1".into(),
        proto: PingProto::Udp,
        port: reflector,
        count: 5,
        interval: Duration::from_millis(20),
        sizes: vec![44, 200],
        ..PingSpec::default()
    });
    let (result, text, json) = run_watched(spec);
    let rt = result.summary.round_trip.as_ref().unwrap();
    assert_eq!(rt.sent_packets, Some(10));
    assert_eq!(text.replies as u64, rt.received_packets.unwrap());
    assert_eq!(json.replies, text.replies);
    assert_eq!(text.text.matches("PING ").count(), 2, "{}", text.text);
}
