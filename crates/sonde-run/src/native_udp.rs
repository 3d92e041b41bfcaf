//! The client end of a native UDP test: ask the server, say hello on each
//! stream, run this end (with the server's intervals as they end), swap
//! reports, assemble the result.

use crate::native_tcp::handshake;
use sonde_engine::connect::udp_connect;
use sonde_engine::host_env::host_env;
use sonde_engine::sockopt::{udp_in_force, StreamOptions};
use sonde_engine::tcp::protocol::{HANDSHAKE_TIMEOUT, REPORT_WAIT};
use sonde_engine::udp::flow::Credits;
use sonde_engine::udp::protocol::{udp_client_role, udp_report_cap, udp_side_plan};
use sonde_engine::udp::side::{run_udp_side, UdpDataStream, UdpFlow, UdpLive, UDP_RX_GRACE};
use sonde_engine::EngineError;
use sonde_model::udp_assemble::udp_result;
use sonde_model::StreamLayout;
use sonde_model::{
    HostEnv, PeerKind, StreamRole, TestResult, TestSpec, Timestamp, UdpSideReport, UdpSpec,
};
use sonde_wire::{
    ClientMessage, ReceivedInterval, ServerMessage, TestId, UdpHello, HANDSHAKE_FRAME_MAX,
};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// How often a new UDP stream repeats its hello until the server starts.
const HELLO_EVERY: Duration = Duration::from_millis(50);

/// What a running UDP test tells its caller.
#[derive(Debug)]
pub enum UdpEvent<'a> {
    Accepted {
        server: SocketAddr,
        env: &'a HostEnv,
    },
    /// This end's interval, with what the server's receivers counted in
    /// it when that came in time (forward streams).
    Interval {
        live: &'a UdpLive,
        received: Option<&'a ReceivedInterval>,
    },
}

/// How long the end of an interval waits for the server's count of it:
/// half the interval, at most this (the next interval is being sent).
const LIVE_WAIT: Duration = Duration::from_millis(250);
/// The last interval waits longer (nothing more is sent): a receiver
/// ends 200 ms after the first end marker.
const LAST_LIVE_WAIT: Duration = Duration::from_secs(1);

/// The server's intervals as the control reader hands them over, matched
/// to this end's by index.
struct PeerIntervals {
    rx: mpsc::Receiver<ReceivedInterval>,
    early: Vec<ReceivedInterval>,
    wait: Duration,
    /// Whether the server sent any: an older one sends none, and after
    /// two intervals without, none is waited for.
    heard: bool,
}

impl PeerIntervals {
    /// The server's interval `index`, waiting at most `wait` for it
    /// (`last`: the test's last interval, longer).
    fn take(&mut self, index: u32, last: bool) -> Option<ReceivedInterval> {
        let wait = match (self.heard || index < 2, last) {
            (false, _) => Duration::ZERO,
            (true, false) => self.wait,
            (true, true) => LAST_LIVE_WAIT,
        };
        let deadline = Instant::now() + wait;
        loop {
            if let Some(i) = self.early.iter().position(|r| r.index == index) {
                return Some(self.early.swap_remove(i));
            }
            // Older ones will not be asked for again.
            self.early.retain(|r| r.index > index);
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(r) => {
                    self.heard = true;
                    self.early.push(r);
                }
                Err(_) => return None,
            }
        }
    }
}

fn hellos(streams: &[UdpDataStream], id: TestId, done: &AtomicBool) {
    let deadline = Instant::now() + HANDSHAKE_TIMEOUT;
    let mut next = Instant::now();
    while !done.load(Ordering::Relaxed) && Instant::now() < deadline {
        if Instant::now() >= next {
            for s in streams {
                let hello = UdpHello {
                    test_id: id.0,
                    stream: s.index,
                };
                let _ = s.socket.send(&hello.encode());
            }
            next += HELLO_EVERY;
        }
        // Short naps, so the test starts as soon as the server says so.
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Runs `spec` against a sonde server; `stop` ends it early.
pub fn run_udp(
    spec: &UdpSpec,
    stop: &Arc<AtomicBool>,
    on_event: &mut dyn FnMut(UdpEvent<'_>),
) -> Result<TestResult, EngineError> {
    let (mut control, accepted) = handshake(
        &spec.host,
        spec.port,
        spec.family,
        TestSpec::Udp(spec.clone()),
        &StreamOptions {
            bind: spec.bind,
            connect_timeout: spec.connect_timeout,
            ..StreamOptions::default()
        },
    )?;
    let cut;
    let spec = match &accepted.spec {
        Some(TestSpec::Udp(s)) if !accepted.cuts.is_empty() => {
            crate::native_tcp::check_cuts(&accepted.cuts, s.send_duration(), spec.send_duration())?;
            cut = UdpSpec {
                time: s.time,
                parallel: s.parallel.min(spec.parallel),
                bitrate: if spec.bitrate.bps() == 0 {
                    s.bitrate
                } else {
                    s.bitrate.min(spec.bitrate)
                },
                ..spec.clone()
            };
            &cut
        }
        _ => spec,
    };
    let server = accepted.server;
    on_event(UdpEvent::Accepted {
        server,
        env: &accepted.env,
    });
    if accepted.udp_ports.len() != spec.stream_count() {
        return Err(EngineError::Unexpected {
            expected: "one UDP port per stream",
            got: format!(
                "{} ports for {} streams",
                accepted.udp_ports.len(),
                spec.stream_count()
            ),
        });
    }
    let local = control
        .stream()
        .local_addr()
        .map_err(EngineError::io("control address"))?
        .ip();
    let mut streams = Vec::with_capacity(spec.stream_count());
    for (i, port) in accepted.udp_ports.iter().enumerate() {
        let peer = SocketAddr::new(server.ip(), *port);
        let port = spec
            .cport
            .and_then(|p| u16::try_from(usize::from(p) + i).ok());
        let socket = udp_connect(local, port, peer, spec.dscp, spec.flowlabel)?;
        streams.push(UdpDataStream {
            index: u16::try_from(i).unwrap_or(u16::MAX),
            role: udp_client_role(spec, i),
            info: udp_in_force(&socket, spec.flowlabel),
            socket,
            dscp: spec.dscp.map_or(0, sonde_model::Dscp::value),
        });
    }
    let introduced = AtomicBool::new(false);
    let (start_msg, start, start_ts) = std::thread::scope(|s| {
        s.spawn(|| hellos(&streams, accepted.test_id, &introduced));
        let msg = control.recv::<ServerMessage>(
            HANDSHAKE_FRAME_MAX,
            HANDSHAKE_TIMEOUT,
            "the start signal",
        );
        introduced.store(true, Ordering::Relaxed);
        (msg, Instant::now(), Timestamp::now())
    });
    let (start_msg, start, start_ts) = (start_msg?, start, start_ts);
    match start_msg {
        ServerMessage::Start => {}
        ServerMessage::Refused { refusal } => return Err(EngineError::Refused(refusal)),
        ServerMessage::Abort { reason } => return Err(EngineError::Aborted(reason)),
        other => {
            return Err(EngineError::Unexpected {
                expected: "start",
                got: format!("{other:?}").chars().take(80).collect(),
            })
        }
    }
    // While data flows a reader takes the server's messages until its
    // report: its intervals (asked for in the request) and, unpaced, its
    // progress (flow control).
    let unpaced = spec.pace().is_none();
    let credits = Credits::new(spec.stream_count());
    let (intervals_tx, intervals_rx) = mpsc::channel();
    let reader = {
        let mut r = control.try_clone()?;
        let (cap, c) = (udp_report_cap(spec), Arc::clone(&credits));
        let wait = spec.send_duration() + UDP_RX_GRACE + REPORT_WAIT;
        std::thread::spawn(move || {
            let deadline = Instant::now() + wait;
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                match r.recv::<ServerMessage>(cap, left, "the server's report") {
                    Ok(ServerMessage::Progress { acks }) => c.update(&acks),
                    Ok(ServerMessage::UdpInterval(iv)) => {
                        let _ = intervals_tx.send(iv);
                    }
                    other => return other,
                }
            }
        })
    };
    let mut peer = PeerIntervals {
        rx: intervals_rx,
        early: Vec::new(),
        wait: (spec.interval / 2).min(LIVE_WAIT),
        heard: false,
    };
    // Only a sending end has anything to wait for.
    let sends = (0..spec.stream_count()).any(|i| udp_client_role(spec, i) == StreamRole::Sender);
    let mut index = 0u32;
    let flow = if unpaced {
        Some(UdpFlow::over_control(&control, credits, |acks| {
            ClientMessage::Progress { acks }
        })?)
    } else {
        None
    };
    let mine = run_udp_side(
        udp_side_plan(spec),
        streams,
        host_env(),
        start,
        stop,
        flow,
        &mut |live| {
            let last = live.window.end_s + 1e-6 >= spec.send_duration().as_secs_f64()
                || stop.load(Ordering::Relaxed);
            let received = sends.then(|| peer.take(index, last)).flatten();
            index += 1;
            on_event(UdpEvent::Interval {
                live,
                received: received.as_ref(),
            });
        },
    );
    if stop.load(Ordering::Relaxed) {
        control.send(&ClientMessage::Stop)?;
    }
    control.send(&ClientMessage::UdpReport {
        report: mine.clone(),
    })?;
    let reply = reader
        .join()
        .map_err(|_| EngineError::Aborted("control reader failed".into()))??;
    let mut theirs: UdpSideReport = match reply {
        ServerMessage::UdpReport { report } => report,
        ServerMessage::Abort { reason } => return Err(EngineError::Aborted(reason)),
        other => {
            return Err(EngineError::Unexpected {
                expected: "the server's UDP report",
                got: format!("{other:?}").chars().take(80).collect(),
            })
        }
    };
    theirs.env = accepted.env;
    let mut result = udp_result(spec, PeerKind::Sonde, start_ts, &mine, &theirs)?;
    let stream = control.stream();
    if let (Ok(local), Ok(peer)) = (stream.local_addr(), stream.peer_addr()) {
        result.env.set_ends(local.ip(), peer.ip());
    }
    Ok(result)
}
