//! The one log line of a refused test, for sonde's and iperf3's clients
//! alike: event `test_refused` with the stable fields a log shipper
//! filters on (`peer`, `reason`, `limit` when a limit refused it) and the
//! refusal in words.

use sonde_wire::Refusal;
use std::net::SocketAddr;

/// Logs `refusal` of `peer`'s test; `what` is the line's message.
pub(crate) fn log_refused(peer: SocketAddr, refusal: &Refusal, what: &str) {
    let reason = refusal.reason();
    let reason = reason.as_str();
    match refusal.limit() {
        Some(limit) => {
            tracing::warn!(name: "test_refused", %peer, reason, limit = limit.name(), %refusal, "{what}");
        }
        None => tracing::warn!(name: "test_refused", %peer, reason, %refusal, "{what}"),
    }
}
