//! `sonde udp --iperf3`: a UDP test against a stock iperf3 server, with
//! iperf3's datagrams (its header, its rate pacing) and its loss and
//! jitter counting; each direction's figures join the sender's counts
//! with the receiver's.

use super::udp_data::{self, UdpTally};
use super::{open_test, STATE_WAIT};
use crate::connect::resolve;
use crate::host_env::host_env;
use crate::EngineError;
use socket2::{Domain, Socket, Type};
use sonde_model::udp_result::{UdpCounts, UdpDirectionCounts, UdpStreamResult, UdpSummary};
use sonde_model::{
    Direction, HostEnv, Profile, SocketInForce, StreamLayout, TestEnv, Timestamp, UdpResult,
    UdpSpec, RESULT_FORMAT_VERSION, SONDE_VERSION,
};
use sonde_wire::iperf3::{self as wire, stream_id, CounterWidth, Params, Protocol, State};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Refuses what an iperf3 server cannot do, naming it.
fn refuse_unsupported(spec: &UdpSpec) -> Result<(), EngineError> {
    let mut bad = super::whole_seconds(spec.time, spec.omit);
    if spec.profile != Profile::Cbr {
        bad.push("--profile (iperf3 sends constant-rate UDP only)".to_string());
    }
    if spec.clock_synced {
        bad.push("--clock-synced (iperf3 reports no one-way delay)".to_string());
    }
    super::refuse(bad)
}

fn udp_params(spec: &UdpSpec) -> Params {
    let direction = super::wire_direction(spec.direction);
    let secs = |d: Duration| u32::try_from(d.as_secs()).unwrap_or(u32::MAX);
    let mut p = Params::client(
        Protocol::Udp,
        direction,
        secs(spec.time),
        u32::from(spec.parallel),
    )
    .with_omit(secs(spec.omit))
    .with_len(spec.length)
    .with_bandwidth(spec.bitrate.bps())
    .with_udp_counters_64bit(true);
    if let Some(d) = spec.dscp {
        p = p.with_tos(d.tos_byte());
    }
    if let Some(f) = spec.flowlabel {
        p = p.with_flowlabel(f);
    }
    p.title = spec.title.clone();
    p
}

/// A UDP data socket introduced to the server with iperf3's connect
/// exchange.
fn connect_stream(server: SocketAddr, spec: &UdpSpec) -> Result<UdpSocket, EngineError> {
    let domain = if server.is_ipv6() {
        Domain::IPV6
    } else {
        Domain::IPV4
    };
    let s = Socket::new(domain, Type::DGRAM, None).map_err(EngineError::io("a UDP socket"))?;
    let _ = s.set_recv_buffer_size(crate::connect::UDP_BUFFER);
    let _ = s.set_send_buffer_size(crate::connect::UDP_BUFFER);
    if let Some(d) = spec.dscp {
        let tos = u32::from(d.tos_byte());
        let _ = if server.is_ipv6() {
            s.set_tclass_v6(tos)
        } else {
            s.set_tos_v4(tos)
        };
    }
    s.connect(&server.into())
        .map_err(|source| EngineError::Connect {
            addr: server,
            source,
        })?;
    let s: UdpSocket = s.into();
    s.set_read_timeout(Some(Duration::from_millis(500)))
        .map_err(EngineError::io("UDP timeout"))?;
    let mut reply = [0u8; 64];
    for _ in 0..10 {
        s.send(&wire::UDP_CONNECT_REQUEST)
            .map_err(EngineError::io("the iperf3 UDP connect"))?;
        if let Ok(n) = s.recv(&mut reply) {
            if wire::classify_connect_reply(&reply[..n]).is_some() {
                return Ok(s);
            }
        }
    }
    Err(EngineError::Timeout {
        what: "the iperf3 server's UDP connect reply",
    })
}

fn socket_info(s: Option<&UdpSocket>, spec: &UdpSpec) -> SocketInForce {
    let any: SocketAddr = (std::net::Ipv6Addr::UNSPECIFIED, 0).into();
    SocketInForce {
        local: s.and_then(|s| s.local_addr().ok()).unwrap_or(any),
        remote: s.and_then(|s| s.peer_addr().ok()).unwrap_or(any),
        sndbuf_bytes: 0,
        rcvbuf_bytes: 0,
        mss_bytes: None,
        congestion: None,
        dscp: spec.dscp,
        flowlabel: spec.flowlabel,
    }
}

/// One direction's counts from the sender's and the receiver's tallies.
fn counts(sent: u64, sent_bytes: u64, rx: &UdpTally, received: u64, secs: f64) -> UdpCounts {
    let lost = sent.saturating_sub(received);
    let pct = |a: u64, b: u64| {
        if b == 0 {
            0.0
        } else {
            a as f64 * 100.0 / b as f64
        }
    };
    let rate = |bytes: u64| {
        if secs > 0.0 {
            (bytes as f64 * 8.0 / secs) as u64
        } else {
            0
        }
    };
    UdpCounts {
        sent,
        received,
        lost,
        loss_pct: pct(lost, sent),
        pdr_pct: pct(received, sent),
        reordered: rx.out_of_order,
        bytes: rx.bytes,
        throughput_bps: rate(rx.bytes),
        offered_bps: rate(sent_bytes),
        jitter_ms: rx.jitter_s * 1e3,
        ..UdpCounts::default()
    }
}

/// Runs `spec` against the iperf3 server at its host and port.
pub fn run_iperf3_udp(spec: &UdpSpec, stop: &Arc<AtomicBool>) -> Result<UdpResult, EngineError> {
    refuse_unsupported(spec)?;
    let addrs = resolve(&spec.host, spec.port, spec.family)?;
    let (mut control, _cookie, first) = open_test(&addrs)?;
    let server = control
        .stream()
        .peer_addr()
        .map_err(EngineError::io("the server's address"))?;
    let width = CounterWidth::Bits64;
    let mut next = Some(first);
    let mut socks = Vec::new();
    let mut tallies: Vec<UdpTally> = Vec::new();
    let mut start_ts = Timestamp::now();
    loop {
        let state = match next.take() {
            Some(s) => s,
            None => control.recv_state(STATE_WAIT)?,
        };
        match state {
            State::ParamExchange => control.send_params(&udp_params(spec))?,
            State::CreateStreams => {
                for _ in 0..spec.stream_count() {
                    socks.push(connect_stream(server, spec)?);
                }
            }
            State::TestStart => {}
            State::TestRunning => {
                start_ts = Timestamp::now();
                let end = Instant::now() + spec.omit + spec.time;
                let handles: Vec<_> = socks
                    .iter()
                    .enumerate()
                    .map(|(i, s)| {
                        let s = s.try_clone().map_err(EngineError::io("a UDP socket"))?;
                        let sending = spec.stream_direction(i) == Direction::Forward;
                        let (len, rate, stop) =
                            (spec.length as usize, spec.bitrate.bps(), Arc::clone(stop));
                        Ok(std::thread::spawn(move || {
                            if sending {
                                udp_data::send(&s, len, rate, width, end, &stop)
                            } else {
                                udp_data::receive(&s, width, end, &stop)
                            }
                        }))
                    })
                    .collect::<Result<_, EngineError>>()?;
                for h in handles {
                    let t = h
                        .join()
                        .map_err(|_| EngineError::Aborted("a UDP stream thread failed".into()))?;
                    tallies.push(t.map_err(EngineError::io("UDP data"))?);
                }
                control.send_state(State::TestEnd)?;
            }
            State::ExchangeResults => {
                let sending: Vec<bool> = (0..tallies.len())
                    .map(|i| spec.stream_direction(i) == Direction::Forward)
                    .collect();
                control.send_results(&udp_results(&tallies, &sending))?;
                let theirs = control.recv_results(STATE_WAIT)?;
                if control.recv_state(STATE_WAIT)? == State::DisplayResults {
                    control.send_state(State::IperfDone)?;
                }
                return Ok(assemble(
                    spec,
                    start_ts,
                    &socks,
                    &tallies,
                    &theirs,
                    stop.load(std::sync::atomic::Ordering::Relaxed),
                ));
            }
            other => return Err(super::state_error(&mut control, other)),
        }
    }
}

/// One end's UDP tallies as iperf3 exchanges them; `sending[i]` says
/// whether this end sent on stream `i`.
pub fn udp_results(tallies: &[UdpTally], sending: &[bool]) -> wire::Results {
    let any_sending = sending.iter().any(|s| *s);
    let streams = tallies
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let sender = sending.get(i).copied().unwrap_or(false);
            wire::StreamResult {
                id: stream_id(i as u32),
                bytes: t.bytes,
                retransmits: -1,
                jitter: if sender { 0.0 } else { t.jitter_s },
                errors: if sender { 0 } else { t.lost as i64 },
                omitted_errors: None,
                packets: if sender {
                    t.packets as i64
                } else {
                    t.highest as i64
                },
                omitted_packets: None,
                start_time: Some(0.0),
                end_time: Some(t.secs),
            }
        })
        .collect();
    wire::Results {
        cpu_util_total: 0.0,
        cpu_util_user: 0.0,
        cpu_util_system: 0.0,
        sender_has_retransmits: if any_sending { 0 } else { -1 },
        congestion_used: None,
        server_output_json: None,
        server_output_text: None,
        streams,
    }
}

fn assemble(
    spec: &UdpSpec,
    start: Timestamp,
    socks: &[UdpSocket],
    tallies: &[UdpTally],
    theirs: &wire::Results,
    interrupted: bool,
) -> UdpResult {
    let secs = spec.time.as_secs_f64() + spec.omit.as_secs_f64();
    let streams: Vec<UdpStreamResult> = tallies
        .iter()
        .enumerate()
        .map(|(i, mine)| {
            let direction = spec.stream_direction(i);
            let other = theirs.stream(stream_id(i as u32));
            let c = if direction == Direction::Forward {
                // The server received: its highest number minus its losses.
                let rx = UdpTally {
                    bytes: other.map_or(0, |o| o.bytes),
                    out_of_order: 0,
                    jitter_s: other.map_or(0.0, |o| o.jitter),
                    ..UdpTally::default()
                };
                let received = other.map_or(0, |o| (o.packets - o.errors).max(0) as u64);
                counts(
                    mine.packets,
                    mine.bytes,
                    &rx,
                    received.min(mine.packets),
                    secs,
                )
            } else {
                let sent = other.map_or(0, |o| o.packets.max(0) as u64);
                counts(
                    sent.max(mine.packets),
                    other.map_or(0, |o| o.bytes),
                    mine,
                    mine.packets,
                    secs,
                )
            };
            let client = socket_info(socks.get(i), spec);
            UdpStreamResult {
                stream: i as u16,
                direction,
                server_socket: SocketInForce {
                    local: client.remote,
                    remote: client.local,
                    ..client.clone()
                },
                client_socket: client,
                counts: c,
                classes: Vec::new(),
            }
        })
        .collect();
    let sum = |d: Direction| -> Option<UdpDirectionCounts> {
        let of: Vec<&UdpStreamResult> = streams.iter().filter(|s| s.direction == d).collect();
        if of.is_empty() {
            return None;
        }
        let add = |f: fn(&UdpCounts) -> u64| of.iter().map(|s| f(&s.counts)).sum::<u64>();
        let (sent, received, bytes) = (add(|c| c.sent), add(|c| c.received), add(|c| c.bytes));
        let rx = UdpTally {
            bytes,
            out_of_order: add(|c| c.reordered),
            jitter_s: of.iter().map(|s| s.counts.jitter_ms).sum::<f64>() / of.len() as f64 / 1e3,
            ..UdpTally::default()
        };
        let offered = add(|c| c.offered_bps);
        let mut c = counts(sent, 0, &rx, received, secs);
        c.offered_bps = offered;
        Some(UdpDirectionCounts {
            direction: d,
            streams: of.len() as u16,
            counts: c,
            classes: Vec::new(),
            remarking: Vec::new(),
        })
    };
    UdpResult {
        format_version: RESULT_FORMAT_VERSION,
        sonde_version: SONDE_VERSION.to_string(),
        test: "udp".into(),
        title: spec.title.clone(),
        spec: spec.clone(),
        env: TestEnv {
            client: host_env(),
            server: HostEnv::unknown("iperf3"),
        },
        start,
        duration_s: spec.time.as_secs_f64(),
        interrupted,
        intervals: Vec::new(),
        summary: UdpSummary {
            forward: sum(Direction::Forward),
            reverse: sum(Direction::Reverse),
        },
        streams,
        latency: None,
    }
}
