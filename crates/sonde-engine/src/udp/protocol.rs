//! What both ends of a native UDP test agree on: the report frame's cap,
//! each stream's role and the plan each end runs its streams by. The
//! client's session is sonde-run's (`native_udp`), the server's
//! sonde-server's.

use crate::tcp::protocol::{report_windows, MAX_REPORT_FRAME};
use crate::udp::side::UdpSidePlan;
use sonde_model::{Direction, StreamLayout, StreamRole, UdpSpec};
use sonde_wire::HANDSHAKE_FRAME_MAX;

/// The largest UDP report a test of `spec` can produce (before
/// [`MAX_REPORT_FRAME`]).
pub fn udp_report_need(spec: &UdpSpec) -> usize {
    let windows = report_windows(spec.send_duration(), spec.interval);
    HANDSHAKE_FRAME_MAX.saturating_add(
        (spec.stream_count() + 1)
            .saturating_mul(windows)
            .saturating_mul(2048),
    )
}

/// The UDP report frame cap of a test of `spec`, both ends.
pub fn udp_report_cap(spec: &UdpSpec) -> usize {
    udp_report_need(spec).min(MAX_REPORT_FRAME)
}

/// This end's role for stream `index`, seen from the client.
pub fn udp_client_role(spec: &UdpSpec, index: usize) -> StreamRole {
    match spec.stream_direction(index) {
        Direction::Reverse => StreamRole::Receiver,
        _ => StreamRole::Sender,
    }
}

pub fn udp_side_plan(spec: &UdpSpec) -> UdpSidePlan {
    UdpSidePlan {
        omit: spec.omit,
        time: spec.time,
        interval: spec.interval,
        profile: spec.profile,
        rate: spec.bitrate,
        length: spec.payload_len(),
        clock_synced: spec.clock_synced,
        send_budget: spec.packet_budget(),
    }
}
