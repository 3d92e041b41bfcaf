//! An admitted iperf3 UDP test on the server: iperf3's UDP connect
//! exchange on the control port's UDP twin, iperf3's datagrams and
//! counting.

use super::exchange::{add_server_output, await_test_end, swap_results};
use super::results::UdpStream;
use crate::limits::END_GRACE;
use sonde_engine::iperf3::control::Iperf3Control;
use sonde_engine::iperf3::udp_data::{self, UdpTally};
use sonde_engine::EngineError;
use sonde_model::{Direction, StreamLayout, UdpSpec};
use sonde_wire::iperf3::{self as wire, Params, State};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One test at a time takes UDP connects on the port (the unconnected
/// socket there belongs to the test that bound it).
static CONNECTS: Mutex<()> = Mutex::new(());

/// A UDP socket on `local` that other sockets may share. A v4-mapped
/// address (an IPv4 client on a dual-stack listener) gets an IPv4 socket:
/// an IPv6 socket cannot be bound to one once it is IPv6-only.
fn shared_udp(local: SocketAddr) -> std::io::Result<UdpSocket> {
    let local = SocketAddr::new(local.ip().to_canonical(), local.port());
    let domain = if local.is_ipv6() {
        socket2::Domain::IPV6
    } else {
        socket2::Domain::IPV4
    };
    let s = socket2::Socket::new(domain, socket2::Type::DGRAM, None)?;
    s.set_reuse_address(true)?;
    if local.is_ipv6() {
        s.set_only_v6(!local.ip().is_unspecified())?;
    }
    let _ = s.set_recv_buffer_size(sonde_engine::connect::UDP_BUFFER);
    let _ = s.set_send_buffer_size(sonde_engine::connect::UDP_BUFFER);
    s.bind(&local.into())?;
    Ok(s.into())
}

/// Takes `n` UDP connects from `client`, the first on `listener` (bound
/// before the client was told to connect): each connect request gets the
/// socket connected to its sender and a reply, and the next socket is
/// bound before that reply goes out, so the client's next request never
/// finds the port closed.
fn take_connects(
    mut listener: UdpSocket,
    local: SocketAddr,
    client: std::net::IpAddr,
    n: usize,
    deadline: Instant,
) -> Result<Vec<UdpSocket>, EngineError> {
    let mut socks = Vec::with_capacity(n);
    let mut buf = [0u8; 64];
    while socks.len() < n {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(EngineError::Timeout {
                what: "the iperf3 UDP connects",
            });
        }
        listener
            .set_read_timeout(Some(left.min(Duration::from_millis(200))))
            .map_err(EngineError::io("UDP timeout"))?;
        let Ok((len, from)) = listener.recv_from(&mut buf) else {
            continue;
        };
        let from_client = from.ip().to_canonical() == client.to_canonical();
        let Some(flavor) = wire::classify_connect_request(&buf[..len]).filter(|_| from_client)
        else {
            continue;
        };
        listener
            .connect(from)
            .map_err(EngineError::io("connecting a UDP stream"))?;
        let next = if socks.len() + 1 < n {
            Some(shared_udp(local).map_err(EngineError::io("the iperf3 UDP port"))?)
        } else {
            None
        };
        listener
            .send(&flavor.reply())
            .map_err(EngineError::io("the UDP connect reply"))?;
        socks.push(listener);
        match next {
            Some(l) => listener = l,
            None => break,
        }
    }
    Ok(socks)
}

/// One stream's thread: sends (this end sends where the client
/// receives) or receives until `end`, noting its count when the omitted
/// start ends.
fn stream_thread(
    sock: UdpSocket,
    sending: bool,
    spec: &UdpSpec,
    width: wire::CounterWidth,
    start: Instant,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<std::io::Result<UdpStream>> {
    let (len, rate) = (spec.length as usize, spec.bitrate.bps());
    let omit_end = start + spec.omit;
    let omit_s = spec.omit.as_secs_f64();
    let run_end = omit_end + spec.time;
    std::thread::spawn(move || {
        if sending {
            let bounds = udp_data::SendBounds {
                omit_end: Some(omit_end),
                ..udp_data::SendBounds::until(run_end)
            };
            let (whole, omitted) = udp_data::send_within(&sock, len, rate, width, &bounds, &stop)?;
            let secs = (whole.secs - omit_s).max(0.0);
            return Ok(UdpStream {
                sending,
                whole,
                omitted,
                secs,
            });
        }
        // The receiver counts the omitted start apart, then the rest;
        // at TEST_END it reads what is still queued (sent before it).
        let omitted = if omit_s > 0.0 {
            udp_data::receive(&sock, width, omit_end, &stop)?
        } else {
            UdpTally::default()
        };
        let rest = udp_data::receive(&sock, width, run_end + END_GRACE, &stop)?;
        let queued = udp_data::receive(
            &sock,
            width,
            Instant::now() + UDP_DRAIN,
            &AtomicBool::new(false),
        )?;
        let whole = then(then(omitted, rest), queued);
        Ok(UdpStream {
            sending,
            whole,
            omitted,
            secs: rest.secs,
        })
    })
}

/// How long a receiver reads what was queued at TEST_END.
const UDP_DRAIN: Duration = Duration::from_millis(30);

/// Two counts of one stream, `later` taken right after `earlier`, as one.
/// Each count starts from sequence number 0, so `later` took the numbers
/// up to `earlier`'s highest for lost datagrams: they are given back.
/// The jitter is the longer count's.
fn then(earlier: UdpTally, later: UdpTally) -> UdpTally {
    if later.packets == 0 {
        return earlier;
    }
    UdpTally {
        packets: earlier.packets + later.packets,
        bytes: earlier.bytes + later.bytes,
        highest: earlier.highest.max(later.highest),
        lost: earlier.lost
            + later
                .lost
                .saturating_sub(earlier.highest.min(later.highest)),
        out_of_order: earlier.out_of_order + later.out_of_order,
        jitter_s: if later.packets >= earlier.packets {
            later.jitter_s
        } else {
            earlier.jitter_s
        },
        secs: earlier.secs + later.secs,
    }
}

/// Runs the test.
pub(super) fn run(
    control: &mut Iperf3Control,
    peer: SocketAddr,
    spec: &UdpSpec,
    params: &Params,
    handshake_deadline: Instant,
) -> Result<(), EngineError> {
    tracing::info!(name: "test_started", %peer, streams = spec.stream_count(), direction = ?spec.direction, rate = %spec.bitrate,
        time = ?spec.time, "iperf3 UDP test accepted");
    let local = control
        .stream()
        .local_addr()
        .map_err(EngineError::io("the control address"))?;
    let socks = {
        let _one = CONNECTS.lock().unwrap_or_else(|e| e.into_inner());
        let first = shared_udp(local).map_err(EngineError::io("the iperf3 UDP port"))?;
        control.send_state(State::CreateStreams)?;
        let deadline = crate::handshake::connect_deadline(handshake_deadline);
        take_connects(first, local, peer.ip(), spec.stream_count(), deadline)?
    };
    control.send_state(State::TestStart)?;
    control.send_state(State::TestRunning)?;
    let width = params.counter_width();
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let sending: Vec<bool> = (0..socks.len())
        .map(|i| spec.stream_direction(i) == Direction::Reverse)
        .collect();
    let handles: Vec<_> = socks
        .iter()
        .zip(&sending)
        .map(|(s, &send)| {
            let s = s.try_clone().map_err(EngineError::io("a UDP socket"))?;
            Ok(stream_thread(
                s,
                send,
                spec,
                width,
                start,
                Arc::clone(&stop),
            ))
        })
        .collect::<Result<_, EngineError>>()?;
    let ended = await_test_end(control, spec.omit + spec.time);
    stop.store(true, Ordering::Relaxed);
    let mut streams: Vec<UdpStream> = Vec::new();
    for h in handles {
        let t = h
            .join()
            .map_err(|_| EngineError::Aborted("a UDP stream thread failed".into()))?;
        streams.push(t.map_err(EngineError::io("UDP data"))?);
    }
    if ended? != State::TestEnd {
        return Err(EngineError::Aborted(
            "the iperf3 client did not end the test".into(),
        ));
    }
    let mut ours = super::results::udp(&streams);
    add_server_output(&mut ours, params, peer, &sending, true);
    let _theirs = swap_results(control, &ours)?;
    let packets: u64 = streams.iter().map(|s| s.whole.packets).sum();
    tracing::info!(name: "test_finished", %peer, packets, "iperf3 test done");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_taken_one_after_the_other_add_up() {
        // 1..=100 with 3 lost, then 101..=150 with 2 lost (the second
        // count saw 48 datagrams and took 1..=100 for lost too).
        let a = UdpTally {
            packets: 97,
            bytes: 97_000,
            highest: 100,
            lost: 3,
            ..UdpTally::default()
        };
        let b = UdpTally {
            packets: 48,
            bytes: 48_000,
            highest: 150,
            lost: 102,
            ..UdpTally::default()
        };
        let t = then(a, b);
        assert_eq!(
            (t.packets, t.bytes, t.highest, t.lost),
            (145, 145_000, 150, 5)
        );
        assert_eq!(then(a, UdpTally::default()), a);
    }
}
