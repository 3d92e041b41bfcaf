//! An admitted native TCP test on the server: gather its data
//! connections through the registry, run the server's end of each stream,
//! and swap reports.

use super::watcher::{answer_report, spawn_watcher};
use crate::gone::{client_gone, GONE_POLL};
use crate::handshake::connect_deadline;
use crate::limits::{END_GRACE, REPORT_GRACE, REPORT_MARGIN};
use crate::state::{Delivered, Shared};
use sonde_engine::control::Control;
use sonde_engine::host_env::host_env;
use sonde_engine::sockopt::{apply_accepted, StreamOptions};
use sonde_engine::tcp::protocol::{client_role, report_frame_cap, side_plan};
use sonde_engine::tcp::side::{run_side, DataStream};
use sonde_engine::EngineError;
use sonde_model::{Rate, StreamLayout, TcpSpec};
use sonde_wire::{ServerMessage, TestId};
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::Instant;

/// Runs test `id`, open in the registry while it waits for its data
/// connections: until the handshake's `deadline` (measured from accept;
/// [`connect_deadline`]).
pub(super) fn run(
    control: Control,
    peer: SocketAddr,
    spec: &TcpSpec,
    id: TestId,
    shared: &Shared,
    deadline: Instant,
    terms: &super::Terms,
) -> Result<(), EngineError> {
    let rx = shared.registry().open(id, peer.ip(), spec.stream_count());
    let result = run_accepted(control, peer, spec, id, &rx, terms, deadline);
    shared.registry().close(id);
    result
}

fn run_accepted(
    mut control: Control,
    peer: SocketAddr,
    spec: &TcpSpec,
    id: TestId,
    rx: &Receiver<Delivered>,
    terms: &super::Terms,
    deadline: Instant,
) -> Result<(), EngineError> {
    let rate_capped = terms.rate_capped;
    let (cuts, cut_spec) = terms.told(|| sonde_model::TestSpec::Tcp(spec.clone()));
    control.send_preamble()?;
    control.send(&ServerMessage::Accepted {
        test_id: id,
        env: host_env(),
        udp_ports: Vec::new(),
        cuts,
        spec: cut_spec,
    })?;
    tracing::info!(name: "test_started", %peer, test = %id, streams = spec.stream_count(), direction = ?spec.direction,
        time = ?spec.time, "test accepted");

    let opts = StreamOptions::from(spec);
    let mut streams: Vec<Option<DataStream>> = (0..spec.stream_count()).map(|_| None).collect();
    let deadline = connect_deadline(deadline);
    while streams.iter().any(Option::is_none) {
        // A client that closed its control connection frees the slot now.
        if client_gone(control.stream()) {
            return Err(EngineError::Closed {
                during: "the wait for the data connections",
            });
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let got = rx.recv_timeout(left.min(GONE_POLL));
        if matches!(got, Err(RecvTimeoutError::Timeout)) && !left.is_zero() {
            continue;
        }
        let Ok((index, conn)) = got else {
            let reason = "not every data connection arrived in time".to_string();
            terms.release_slot();
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
        let role = client_role(spec, i).opposite();
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
    // The test ends at its time (never over max_duration: admission saw
    // to it); END_GRACE later the server stops reading and writing,
    // whatever the client does, and REPORT_GRACE later it stops waiting
    // for the report.
    let wait = spec.send_duration() + REPORT_GRACE;
    let watcher = spawn_watcher(&control, report_frame_cap(spec), wait, &stop, None)?;

    let mut plan = side_plan(spec);
    plan.receive_grace = END_GRACE.saturating_sub(REPORT_MARGIN);
    if rate_capped {
        // Enforce the rate on reads too, whatever the client sends
        // (2 % above the rate asked, so a fair client is never slowed).
        plan.receive_rate = spec.bitrate.map(|r| Rate::from_bps(r.bps() + r.bps() / 50));
    }
    let report = run_side(plan, streams, host_env(), start, &stop, &mut |_| {});
    // The traffic is over: the slot goes back before the reports cross,
    // so a client that starts its next test as soon as it has this one's
    // finds it free.
    terms.release_slot();
    answer_report(
        watcher,
        &mut control,
        ServerMessage::Report { report },
        peer,
        id,
    )
}
