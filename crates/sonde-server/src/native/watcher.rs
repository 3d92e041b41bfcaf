//! The control connection of a native test while its data flows, shared
//! by TCP and UDP tests: a thread reads what the client sends (`stop`,
//! UDP progress, its report, or an abort), and the server answers the
//! client's report with its own.

use crate::limits::{ABORT_LINGER, ABORT_LINGER_BYTES, END_GRACE};
use sonde_engine::control::Control;
use sonde_engine::udp::flow::Credits;
use sonde_engine::EngineError;
use sonde_wire::{ClientMessage, ServerMessage, TestId};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What the watcher ends with: the client's report, or why there is none.
pub(crate) type Watcher = JoinHandle<Result<ClientMessage, EngineError>>;

/// Reads the control connection on its own thread while data flows: the
/// client's report ends the test, `stop` stops the data early, a close or
/// garbage aborts it (and sets `stop`).
pub(crate) fn spawn_watcher(
    control: &Control,
    cap: usize,
    wait: Duration,
    stop: &Arc<AtomicBool>,
    credits: Option<Arc<Credits>>,
) -> Result<Watcher, EngineError> {
    // A client that stops reading cannot hold the server in a write.
    control
        .stream()
        .set_write_timeout(Some(END_GRACE))
        .map_err(EngineError::io("setting a write timeout"))?;
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
    watcher: Watcher,
    control: &mut Control,
    ours: ServerMessage,
    peer: SocketAddr,
    id: TestId,
) -> Result<(), EngineError> {
    let theirs = watcher.join();
    match theirs {
        Ok(Ok(ClientMessage::Report { .. } | ClientMessage::UdpReport { .. })) => {
            // The client's report is not kept while ours is encoded.
            drop(theirs);
            control.send(&ours)?;
            tracing::info!(name: "test_finished", %peer, test = %id, "test finished");
            Ok(())
        }
        Ok(Ok(ClientMessage::Abort { reason })) => Err(EngineError::Aborted(reason)),
        Ok(Ok(_)) => abort(
            control,
            EngineError::Unexpected {
                expected: "the client's report",
                got: "another message".into(),
            },
        ),
        Ok(Err(e)) => abort(control, e),
        Err(_) => abort(
            control,
            EngineError::Aborted("control watcher failed".into()),
        ),
    }
}

/// Tells the client why the server ended its test (an oversized or bad
/// frame, a late report), if it still listens, and closes without a
/// reset: what the client sent meanwhile is read and dropped.
fn abort(control: &mut Control, e: EngineError) -> Result<(), EngineError> {
    let _ = control.send(&ServerMessage::Abort {
        reason: format!("the server ended the test: {e}"),
    });
    control.close_lingering(ABORT_LINGER, ABORT_LINGER_BYTES);
    Err(e)
}
