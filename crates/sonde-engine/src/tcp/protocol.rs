//! What both ends of a native TCP test agree on: how long each step of
//! the handshake and the wait for a report may take, the report frame's
//! cap, each stream's role and the plan each end runs its streams by. The
//! client's session is sonde-run's (`native_tcp`), the server's
//! sonde-server's.

use crate::tcp::side::{DataStream, LiveInterval, SidePlan, DRAIN_GRACE};
use sonde_model::{HostEnv, StreamLayout, StreamRole, TcpSpec};
use sonde_wire::HANDSHAKE_FRAME_MAX;
use std::net::SocketAddr;
use std::time::Duration;

/// How long each step of the handshake may take.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What a running test tells its caller.
#[derive(Debug)]
pub enum TestEvent<'a> {
    /// The server accepted; data streams are next.
    Accepted {
        server: SocketAddr,
        env: &'a HostEnv,
    },
    /// Every stream is connected and data starts to flow.
    Started {
        streams: &'a [(u16, StreamRole, SocketAddr, SocketAddr)],
    },
    Interval(&'a LiveInterval),
}

/// Each connected stream: its number, this end's role, and both addresses
/// (what [`TestEvent::Started`] tells).
pub fn opened(streams: &[DataStream]) -> Vec<(u16, StreamRole, SocketAddr, SocketAddr)> {
    streams
        .iter()
        .filter_map(|d| {
            Some((
                d.index,
                d.role,
                d.stream.local_addr().ok()?,
                d.stream.peer_addr().ok()?,
            ))
        })
        .collect()
}

/// The largest report frame either end reads, whatever the test asks: a
/// server admits no test whose report could be larger (its refusal names
/// `report_size`), so no client can make it hold more than this.
pub const MAX_REPORT_FRAME: usize = 24 * 1024 * 1024;

/// Interval windows a test of `duration` cut every `interval` can have.
pub fn report_windows(duration: Duration, interval: Duration) -> usize {
    if interval.is_zero() {
        2
    } else {
        (duration.as_secs_f64() / interval.as_secs_f64()).ceil() as usize + 3
    }
}

/// The largest report frame a test of `spec` can produce: every stream's
/// samples with room to spare (before [`MAX_REPORT_FRAME`]).
pub fn report_frame_need(spec: &TcpSpec) -> usize {
    let windows = report_windows(spec.send_duration(), spec.interval);
    HANDSHAKE_FRAME_MAX.saturating_add(
        spec.stream_count()
            .saturating_mul(windows)
            .saturating_mul(600),
    )
}

/// The report frame cap of a test of `spec`, both ends.
pub fn report_frame_cap(spec: &TcpSpec) -> usize {
    report_frame_need(spec).min(MAX_REPORT_FRAME)
}

/// This end's role for stream `index` of `spec`, seen from the client.
pub fn client_role(spec: &TcpSpec, index: usize) -> StreamRole {
    match spec.stream_direction(index) {
        sonde_model::Direction::Reverse => StreamRole::Receiver,
        _ => StreamRole::Sender,
    }
}

/// The same plan on both ends: the server caps apply where they bind.
pub fn side_plan(spec: &TcpSpec) -> SidePlan {
    SidePlan {
        omit: spec.omit,
        time: spec.time,
        interval: spec.interval,
        length: usize::try_from(spec.length.bytes()).unwrap_or(usize::MAX),
        send_rate: spec.bitrate,
        receive_rate: None,
        receive_grace: DRAIN_GRACE,
        send_budget: spec.byte_budget(),
        receive_budget: None,
        zerocopy: spec.zerocopy,
    }
}

/// How long to wait for the peer's report after this end's data stopped:
/// the peer may still be draining (DRAIN_GRACE), then answers.
pub const REPORT_WAIT: Duration =
    Duration::from_secs(DRAIN_GRACE.as_secs() + HANDSHAKE_TIMEOUT.as_secs());
