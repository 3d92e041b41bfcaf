//! One accepted test on the server: check it, gather its data
//! connections, run the server's end, and swap reports.

use crate::limits::{check_tcp, check_udp};
use crate::server::Shared;
use sonde_engine::control::Control;
use sonde_engine::host_env::host_env;
use sonde_engine::sockopt::{apply_accepted, StreamOptions};
use sonde_engine::tcp::client::{client_role, report_frame_cap, side_plan};
use sonde_engine::tcp::side::{run_side, DataStream, DRAIN_GRACE};
use sonde_engine::udp::flow::Credits;
use sonde_engine::EngineError;
use sonde_model::StreamLayout;
use sonde_model::{HostEnv, Rate, StreamRole, TcpSpec, TestSpec};
use sonde_wire::{ClientMessage, Refusal, ServerMessage, TestId};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the server waits for all data connections of a test.
pub const STREAMS_TIMEOUT: Duration = Duration::from_secs(10);

/// A claimed test slot; released on drop.
pub(crate) struct Slot(Arc<Shared>);

impl Slot {
    pub(crate) fn claim(shared: &Arc<Shared>) -> Option<Slot> {
        let max = shared.config.limits.max_concurrent_tests;
        shared
            .running_tests
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| Slot(Arc::clone(shared)))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.running_tests.fetch_sub(1, Ordering::AcqRel);
    }
}

pub(crate) fn refuse(
    mut control: Control,
    peer: SocketAddr,
    refusal: Refusal,
) -> Result<(), EngineError> {
    tracing::warn!(%peer, %refusal, "test refused");
    control.send_preamble()?;
    control.send(&ServerMessage::Refused { refusal })
}

fn new_test_id() -> TestId {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No OS randomness: fall back to time and address bits, still
        // unique per test and checked against the client address.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        bytes = t.to_le_bytes();
    }
    TestId(bytes)
}

/// Runs one test request from `peer` to the end.
pub fn run_control(
    control: Control,
    peer: SocketAddr,
    request: TestSpec,
    client_env: &HostEnv,
    shared: &Arc<Shared>,
) -> Result<(), EngineError> {
    if let Err(e) = request.validate() {
        let refusal = Refusal::InvalidSpec {
            field: e.field.to_string(),
            detail: e.reason,
        };
        return refuse(control, peer, refusal);
    }
    let limits = &shared.config.limits;
    let checked = match &request {
        TestSpec::Tcp(s) => check_tcp(limits, s),
        TestSpec::Udp(s) => check_udp(limits, s),
        TestSpec::Ping(_) => Err(Refusal::Unavailable {
            what: "ping tests (ping needs no sonde server: ICMP, or STAMP to the reflector)".into(),
        }),
    };
    if let Err(refusal) = checked {
        return refuse(control, peer, refusal);
    }
    let Some(slot) = Slot::claim(shared) else {
        let refusal = Refusal::Busy {
            max_concurrent_tests: limits.max_concurrent_tests,
        };
        return refuse(control, peer, refusal);
    };
    let id = new_test_id();
    tracing::info!(%peer, test = %id, client = %format!("sonde {} on {} {}", client_env.sonde_version, client_env.os, client_env.kernel), "client");
    let result = match request {
        TestSpec::Tcp(spec) => {
            let rx = shared.registry.open(id, peer.ip(), spec.stream_count());
            let r = run_accepted(control, peer, &spec, id, &rx, limits.max_rate.is_some());
            shared.registry.close(id);
            r
        }
        TestSpec::Udp(spec) => crate::udp_session::run_udp_accepted(control, peer, &spec, id),
        TestSpec::Ping(_) => Ok(()),
    };
    drop(slot);
    result
}

/// Reads the control connection on its own thread while data flows: the
/// client's report ends the test, `stop` stops the data early, a close or
/// garbage aborts it (and sets `stop`).
pub(crate) fn spawn_watcher(
    control: &Control,
    cap: usize,
    wait: Duration,
    stop: &Arc<AtomicBool>,
    credits: Option<Arc<Credits>>,
) -> Result<std::thread::JoinHandle<Result<ClientMessage, EngineError>>, EngineError> {
    let mut reader = control.try_clone()?;
    let watcher_stop = Arc::clone(stop);
    Ok(std::thread::spawn(move || {
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let got = reader.recv::<ClientMessage>(cap, left, "the client's report");
            match got {
                Ok(ClientMessage::Stop) => watcher_stop.store(true, Ordering::Relaxed),
                Ok(ClientMessage::Progress { acks }) => {
                    if let Some(c) = &credits {
                        c.update(&acks);
                    }
                }
                Ok(ClientMessage::Report { .. } | ClientMessage::UdpReport { .. }) => return got,
                other => {
                    watcher_stop.store(true, Ordering::Relaxed);
                    return other;
                }
            }
        }
    }))
}

/// Waits for the client's report, then answers with ours.
pub(crate) fn answer_report(
    watcher: std::thread::JoinHandle<Result<ClientMessage, EngineError>>,
    control: &mut Control,
    ours: ServerMessage,
    peer: SocketAddr,
    id: TestId,
) -> Result<(), EngineError> {
    match watcher.join() {
        Ok(Ok(ClientMessage::Report { .. } | ClientMessage::UdpReport { .. })) => {
            control.send(&ours)?;
            tracing::info!(%peer, test = %id, "test finished");
            Ok(())
        }
        Ok(Ok(ClientMessage::Abort { reason })) => Err(EngineError::Aborted(reason)),
        Ok(Ok(_)) => Err(EngineError::Unexpected {
            expected: "the client's report",
            got: "another message".into(),
        }),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(EngineError::Aborted("control watcher failed".into())),
    }
}

fn run_accepted(
    mut control: Control,
    peer: SocketAddr,
    spec: &TcpSpec,
    id: TestId,
    rx: &std::sync::mpsc::Receiver<crate::registry::Delivered>,
    rate_capped: bool,
) -> Result<(), EngineError> {
    control.send_preamble()?;
    control.send(&ServerMessage::Accepted {
        test_id: id,
        env: host_env(),
        udp_ports: Vec::new(),
    })?;
    tracing::info!(%peer, test = %id, streams = spec.stream_count(), direction = ?spec.direction,
        time = ?spec.time, "test accepted");

    let opts = StreamOptions::from(spec);
    let mut streams: Vec<Option<DataStream>> = (0..spec.stream_count()).map(|_| None).collect();
    let deadline = Instant::now() + STREAMS_TIMEOUT;
    while streams.iter().any(Option::is_none) {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok((index, conn)) = rx.recv_timeout(left) else {
            let reason = "not every data connection arrived in time".to_string();
            control.send(&ServerMessage::Abort {
                reason: reason.clone(),
            })?;
            return Err(EngineError::Aborted(reason));
        };
        let index = u16::try_from(index).unwrap_or(u16::MAX);
        let i = usize::from(index);
        if streams.get(i).is_some_and(Option::is_some) {
            tracing::warn!(%peer, index, "duplicate data connection dropped");
            continue;
        }
        apply_accepted(&conn, &opts)?;
        let role = match client_role(spec, i) {
            StreamRole::Sender => StreamRole::Receiver,
            StreamRole::Receiver => StreamRole::Sender,
        };
        if let Some(slot) = streams.get_mut(i) {
            *slot = Some(DataStream {
                index,
                role,
                stream: conn,
                flowlabel: None,
            });
        }
    }
    let streams: Vec<DataStream> = streams.into_iter().flatten().collect();
    control.send(&ServerMessage::Start)?;
    let start = Instant::now();

    let stop = Arc::new(AtomicBool::new(false));
    let wait = spec.send_duration() + DRAIN_GRACE + Duration::from_secs(10);
    let watcher = spawn_watcher(&control, report_frame_cap(spec), wait, &stop, None)?;

    let mut plan = side_plan(spec);
    if rate_capped {
        // Enforce the rate on reads too, whatever the client sends
        // (2 % above the rate asked, so a fair client is never slowed).
        plan.receive_rate = spec.bitrate.map(|r| Rate::from_bps(r.bps() + r.bps() / 50));
    }
    let report = run_side(plan, streams, host_env(), start, &stop, &mut |_| {});
    answer_report(
        watcher,
        &mut control,
        ServerMessage::Report { report },
        peer,
        id,
    )
}
