//! `sonde udp --iperf3`: a UDP test against a stock iperf3 server, with
//! iperf3's datagrams (its header, its rate pacing) and its loss and
//! jitter counting. This end's tallies and the server's results become
//! the two ends' reports, joined by the same assembly as a sonde
//! server's; what iperf3 does not count is unknown there.

use crate::iperf3_client::{open_test, Common, STATE_WAIT};
use socket2::{Domain, Socket, Type};
use sonde_engine::budget::Budget;
use sonde_engine::connect::resolve_from;
use sonde_engine::host_env::host_env;
use sonde_engine::iperf3::udp_data;
use sonde_engine::sockopt::StreamOptions;
use sonde_engine::EngineError;
use sonde_model::udp_assemble::udp_result;
use sonde_model::udp_report::{DscpCounts, ReceivedSum, ReceiverTally, SenderTally};
use sonde_model::{
    Direction, HostEnv, PeerKind, Profile, SocketInForce, StreamLayout, StreamRole, TestResult,
    Timestamp, UdpSideReport, UdpSpec, UdpStreamSide, UdpTally,
};
use sonde_wire::iperf3::{self as wire, stream_id, CounterWidth, Params, Protocol, State};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Refuses what an iperf3 server cannot do, naming it.
fn refuse_unsupported(spec: &UdpSpec) -> Result<(), EngineError> {
    let mut bad = crate::iperf3_client::whole_seconds(spec.time, spec.omit);
    if spec.profile != Profile::Cbr {
        bad.push("--profile (iperf3 sends constant-rate UDP only)".to_string());
    }
    if spec.clock_synced {
        bad.push("--clock-synced (iperf3 reports no one-way delay)".to_string());
    }
    if !spec.omit.is_zero() {
        // iperf3 leaves the warm-up out of its counts, sonde's iperf3
        // datagram counters do not: the two could not be joined.
        bad.push("-O with UDP (the warm-up would be counted by one end only)".to_string());
    }
    crate::iperf3_client::refuse(bad)
}

fn udp_params(spec: &UdpSpec) -> Params {
    let mut p = Common {
        protocol: Protocol::Udp,
        direction: spec.direction,
        time: spec.time,
        parallel: spec.parallel,
        omit: spec.omit,
        length: spec.length,
        dscp: spec.dscp,
        flowlabel: spec.flowlabel,
        volume: spec.volume(),
    }
    .params()
    .with_bandwidth(spec.bitrate.bps())
    .with_udp_counters_64bit(true);
    p.title = spec.title.clone();
    p.get_server_output = spec.get_server_output;
    p
}

/// A UDP data socket introduced to the server with iperf3's connect
/// exchange.
fn connect_stream(
    server: SocketAddr,
    spec: &UdpSpec,
    index: usize,
) -> Result<UdpSocket, EngineError> {
    let domain = if server.is_ipv6() {
        Domain::IPV6
    } else {
        Domain::IPV4
    };
    let s = Socket::new(domain, Type::DGRAM, None).map_err(EngineError::io("a UDP socket"))?;
    let _ = s.set_recv_buffer_size(sonde_engine::connect::UDP_BUFFER);
    let _ = s.set_send_buffer_size(sonde_engine::connect::UDP_BUFFER);
    if let Some(d) = spec.dscp {
        let tos = u32::from(d.tos_byte());
        let _ = if server.is_ipv6() {
            s.set_tclass_v6(tos)
        } else {
            s.set_tos_v4(tos)
        };
    }
    let port = spec
        .cport
        .and_then(|p| u16::try_from(usize::from(p) + index).ok());
    sonde_engine::connect::bind_source(&s, server, spec.bind, port)?;
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

/// The client's socket as the kernel set it (the iperf3 server does not
/// describe its own).
fn socket_info(s: Option<&UdpSocket>, spec: &UdpSpec) -> SocketInForce {
    match s {
        Some(s) => sonde_engine::sockopt::udp_in_force(s, spec.flowlabel),
        None => {
            let any: SocketAddr = (std::net::Ipv6Addr::UNSPECIFIED, 0).into();
            SocketInForce {
                local: any,
                remote: any,
                sndbuf_bytes: None,
                rcvbuf_bytes: None,
                mss_bytes: None,
                congestion: None,
                dscp: spec.dscp,
                flowlabel: spec.flowlabel,
            }
        }
    }
}

/// Runs `spec` against the iperf3 server at its host and port.
pub fn run_iperf3_udp(spec: &UdpSpec, stop: &Arc<AtomicBool>) -> Result<TestResult, EngineError> {
    refuse_unsupported(spec)?;
    let source = StreamOptions {
        bind: spec.bind,
        connect_timeout: spec.connect_timeout,
        ..StreamOptions::default()
    };
    let addrs = resolve_from(&spec.host, spec.port, spec.family, spec.bind)?;
    let (mut control, _cookie, first) = open_test(&addrs, &source)?;
    let server = control
        .stream()
        .peer_addr()
        .map_err(EngineError::io("the server's address"))?;
    let width = CounterWidth::Bits64;
    let mut next = Some(first);
    let mut socks = Vec::new();
    let mut tallies: Vec<udp_data::UdpTally> = Vec::new();
    let mut start_ts = Timestamp::now();
    loop {
        let state = match next.take() {
            Some(s) => s,
            None => control.recv_state(STATE_WAIT)?,
        };
        match state {
            State::ParamExchange => control.send_params(&udp_params(spec))?,
            State::CreateStreams => {
                for i in 0..spec.stream_count() {
                    socks.push(connect_stream(server, spec, i)?);
                }
            }
            State::TestStart => {}
            State::TestRunning => {
                start_ts = Timestamp::now();
                let end = Instant::now() + spec.omit + spec.time;
                // Every thread is joined before an error is returned: none
                // outlives the run (a failed stream stops the others).
                let mut handles = Vec::with_capacity(socks.len());
                let mut failed: Option<EngineError> = None;
                // A volume bound: one budget per direction (iperf3 counts
                // the warm-up too, and refuses none here: -O is refused).
                let now = Instant::now();
                let budget = || spec.packet_budget().map(|n| Arc::new(Budget::new(n, now)));
                let (send_budget, receive_budget) = (budget(), budget());
                for (i, s) in socks.iter().enumerate() {
                    let s = match s.try_clone() {
                        Ok(s) => s,
                        Err(e) => {
                            failed = Some(EngineError::io("a UDP socket")(e));
                            break;
                        }
                    };
                    let sending = spec.stream_direction(i) == Direction::Forward;
                    let (len, rate, stop) =
                        (spec.length as usize, spec.bitrate.bps(), Arc::clone(stop));
                    let budget = if sending {
                        send_budget.clone()
                    } else {
                        receive_budget.clone()
                    };
                    handles.push(std::thread::spawn(move || {
                        let budget = budget.as_deref();
                        if sending {
                            let bounds = udp_data::SendBounds {
                                budget,
                                ..udp_data::SendBounds::until(end)
                            };
                            udp_data::send_within(&s, len, rate, width, &bounds, &stop)
                                .map(|(whole, _)| whole)
                        } else {
                            udp_data::receive_bounded(&s, width, end, budget, &stop)
                        }
                    }));
                }
                if failed.is_some() {
                    stop.store(true, std::sync::atomic::Ordering::Relaxed);
                }
                for h in handles {
                    let outcome = match h.join() {
                        Ok(t) => t.map_err(EngineError::io("UDP data")),
                        Err(_) => Err(EngineError::Aborted("a UDP stream thread failed".into())),
                    };
                    match outcome {
                        Ok(t) => tallies.push(t),
                        Err(e) => {
                            stop.store(true, std::sync::atomic::Ordering::Relaxed);
                            failed.get_or_insert(e);
                        }
                    }
                }
                if let Some(e) = failed {
                    return Err(e);
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
                let (client, server) = reports(
                    spec,
                    &socks,
                    &tallies,
                    &theirs,
                    stop.load(std::sync::atomic::Ordering::Relaxed),
                )?;
                let mut result = udp_result(spec, PeerKind::Iperf3, start_ts, &client, &server)?;
                result.server_output = crate::iperf3_client::server_output(&theirs);
                return Ok(result);
            }
            other => return Err(crate::iperf3_client::state_error(&mut control, other)),
        }
    }
}

/// One end's UDP tallies as iperf3 exchanges them; `sending[i]` says
/// whether this end sent on stream `i`.
pub fn udp_results(tallies: &[udp_data::UdpTally], sending: &[bool]) -> wire::Results {
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

/// A sender's count as a report gives it.
fn sender(packets: u64, bytes: u64, secs: f64) -> UdpTally {
    UdpTally::Sent(SenderTally {
        packets,
        bytes,
        // iperf3's datagrams carry no DSCP count: not counted.
        dscp_sent: DscpCounts::default(),
        secs,
    })
}

/// A receiver's count as a report gives it; what iperf3 does not count
/// (duplicates, one-way delay, DSCP on arrival) is unknown.
fn receiver(
    packets: u64,
    bytes: u64,
    reordered: Option<u64>,
    jitter_s: f64,
    secs: f64,
) -> ReceiverTally {
    ReceiverTally {
        packets,
        bytes,
        duplicates: None,
        reordered,
        expected: packets,
        jitter_ms: jitter_s * 1e3,
        secs,
        ..ReceiverTally::default()
    }
}

/// The receivers' tallies of one end added up; jitter is their mean, as
/// iperf3 reports it.
fn received_sum(tallies: &[ReceiverTally]) -> Option<ReceivedSum> {
    if tallies.is_empty() {
        return None;
    }
    let reordered = tallies.iter().map(|t| t.reordered).sum::<Option<u64>>();
    Some(ReceivedSum {
        measured: ReceiverTally {
            packets: tallies.iter().map(|t| t.packets).sum(),
            bytes: tallies.iter().map(|t| t.bytes).sum(),
            reordered,
            jitter_ms: tallies.iter().map(|t| t.jitter_ms).sum::<f64>() / tallies.len() as f64,
            secs: tallies.iter().map(|t| t.secs).fold(0.0, f64::max),
            ..receiver(0, 0, None, 0.0, 0.0)
        },
        windows: Vec::new(),
    })
}

/// The datagrams of a reverse test that count as sent, iperf3's way:
/// up to the highest sequence number this end received (those after it
/// were still in flight when the test ended), never more than the server
/// says it sent nor fewer than arrived.
fn due_in_test(server_sent: u64, highest: u64, received: u64) -> u64 {
    highest.min(server_sent).max(received)
}

/// Both ends' reports from this end's tallies and the iperf3 server's
/// results, for the assembly every UDP test goes through.
fn reports(
    spec: &UdpSpec,
    socks: &[UdpSocket],
    tallies: &[udp_data::UdpTally],
    theirs: &wire::Results,
    interrupted: bool,
) -> Result<(UdpSideReport, UdpSideReport), EngineError> {
    let (mut mine, mut server) = (Vec::new(), Vec::new());
    let (mut mine_rx, mut server_rx) = (Vec::new(), Vec::new());
    for (i, t) in tallies.iter().enumerate() {
        let stream = u16::try_from(i).unwrap_or(u16::MAX);
        // A stream the server did not report is an error, not zeros.
        let o = theirs.stream(stream_id(i as u32)).ok_or(
            sonde_model::assemble::AssembleError::MissingStream {
                side: "iperf3 server",
                stream,
            },
        )?;
        // Each end over the time it measured: this end's run, the
        // server's own span where it says one.
        let secs = t.secs;
        let their_secs = o.duration().filter(|d| *d > 0.0).unwrap_or(secs);
        let client_socket = socket_info(socks.get(i), spec);
        let server_socket = client_socket.far_end();
        let (client_tally, server_tally) = if spec.stream_direction(i) == Direction::Forward {
            // The server received: its highest number minus its losses.
            let received = u64::try_from(o.packets.saturating_sub(o.errors)).unwrap_or(0);
            let rx = receiver(received.min(t.packets), o.bytes, None, o.jitter, their_secs);
            server_rx.push(rx.clone());
            (sender(t.packets, t.bytes, secs), UdpTally::Received(rx))
        } else {
            // The iperf3 server sends until it hears TEST_END, after this
            // end's timer: what it sent after that is outside the test.
            // As iperf3's own client does, the test's datagrams are those
            // up to the highest number received (iperf3 numbers from 1).
            let due = due_in_test(u64::try_from(o.packets).unwrap_or(0), t.highest, t.packets);
            let due_bytes = o.bytes.min(due.saturating_mul(u64::from(spec.length)));
            let rx = receiver(t.packets, t.bytes, Some(t.out_of_order), t.jitter_s, secs);
            mine_rx.push(rx.clone());
            (UdpTally::Received(rx), sender(due, due_bytes, their_secs))
        };
        let role = |t: &UdpTally| match t {
            UdpTally::Sent(_) => StreamRole::Sender,
            UdpTally::Received(_) => StreamRole::Receiver,
        };
        mine.push(UdpStreamSide {
            stream,
            role: role(&client_tally),
            socket: client_socket,
            measured: client_tally,
            windows: Vec::new(),
        });
        server.push(UdpStreamSide {
            stream,
            role: role(&server_tally),
            socket: server_socket,
            measured: server_tally,
            windows: Vec::new(),
        });
    }
    let client = UdpSideReport {
        env: host_env(),
        windows: Vec::new(),
        streams: mine,
        received_sum: received_sum(&mine_rx),
        stopped_early: interrupted,
    };
    let server = UdpSideReport {
        env: HostEnv::unknown("iperf3"),
        windows: Vec::new(),
        streams: server,
        received_sum: received_sum(&server_rx),
        stopped_early: false,
    };
    Ok((client, server))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_datagram_in_flight_at_the_end_is_not_lost() {
        // The server sent 8931; the last was in flight at the timer.
        assert_eq!(due_in_test(8931, 8930, 8930), 8930);
        // A datagram lost before the highest received still counts.
        assert_eq!(due_in_test(8931, 8930, 8929), 8930);
        // A server that reports fewer than it sent cannot make more due.
        assert_eq!(due_in_test(100, 120, 100), 100);
        assert_eq!(due_in_test(0, 0, 0), 0);
    }
}
