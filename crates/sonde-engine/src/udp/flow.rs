//! Flow control for unpaced UDP (`-b 0`): the receiver reports how far
//! each stream has got (its NextExp) over the control connection every
//! few milliseconds, and the sender keeps at most [`FLOW_WINDOW`] packets
//! beyond that. "As fast as possible" then means as fast as the receiver
//! takes, not as fast as the sender can overflow its socket buffer. Lost
//! packets do not stall the window (later arrivals move NextExp on); if
//! nothing at all comes back for [`FLOW_PROBE`], one more window goes out.

use sonde_wire::StreamAck;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Most packets a sender may have beyond its receiver's progress.
pub const FLOW_WINDOW: u64 = 8192;
/// Payload bytes a window may hold: large packets get fewer than
/// [`FLOW_WINDOW`], so that the receiver's queues (socket buffer,
/// loopback backlog) hold a whole window. On a path with delay the
/// window caps the rate at window × size / RTT.
pub const FLOW_WINDOW_BYTES: u64 = 6 << 20;

/// The window in packets for `len`-byte payloads: 2048 to 8192.
pub fn window_packets(len: u32) -> u64 {
    (FLOW_WINDOW_BYTES / u64::from(len.max(1))).clamp(2048, FLOW_WINDOW)
}
/// With no progress for this long, the sender sends one more window.
pub const FLOW_PROBE: Duration = Duration::from_millis(100);
/// How often a receiver reports its progress (a window of small packets
/// lasts about a millisecond at loopback speeds).
pub const ACK_EVERY: Duration = Duration::from_micros(250);

/// The latest progress each sending stream has heard of.
#[derive(Debug)]
pub struct Credits {
    acked: Vec<AtomicU64>,
}

impl Credits {
    pub fn new(streams: usize) -> Arc<Self> {
        Arc::new(Self {
            acked: (0..streams).map(|_| AtomicU64::new(0)).collect(),
        })
    }

    /// Takes a progress report; unknown streams are ignored, and progress
    /// never goes backwards.
    pub fn update(&self, acks: &[StreamAck]) {
        for a in acks {
            if let Some(slot) = self.acked.get(usize::from(a.stream)) {
                slot.fetch_max(a.next_expected, Ordering::Relaxed);
            }
        }
    }

    pub fn acked(&self, stream: u16) -> u64 {
        self.acked
            .get(usize::from(stream))
            .map_or(0, |a| a.load(Ordering::Relaxed))
    }
}

/// Whether a sender at `next_seq` may send `count` more packets, given
/// the receiver's progress and the floor a probe last set.
pub fn window_open(next_seq: u64, count: u64, acked: u64, probe_floor: u64, window: u64) -> bool {
    next_seq.saturating_add(count) <= acked.max(probe_floor).saturating_add(window)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_follows_progress() {
        assert!(window_open(0, 64, 0, 0, FLOW_WINDOW));
        assert!(window_open(FLOW_WINDOW - 64, 64, 0, 0, FLOW_WINDOW));
        assert!(!window_open(FLOW_WINDOW, 1, 0, 0, FLOW_WINDOW));
        assert!(window_open(FLOW_WINDOW, 1, 1, 0, FLOW_WINDOW));
        assert!(
            window_open(FLOW_WINDOW * 3, 64, 0, FLOW_WINDOW * 2 + 64, FLOW_WINDOW),
            "a probe opens it"
        );
    }

    #[test]
    fn big_packets_get_a_smaller_window() {
        assert_eq!(window_packets(64), FLOW_WINDOW);
        assert_eq!(window_packets(1400), (6 << 20) / 1400);
        assert_eq!(window_packets(65_000), 2048);
    }

    #[test]
    fn credits_never_go_back_and_ignore_strangers() {
        let c = Credits::new(2);
        c.update(&[StreamAck {
            stream: 1,
            next_expected: 50,
        }]);
        c.update(&[
            StreamAck {
                stream: 1,
                next_expected: 40,
            },
            StreamAck {
                stream: 9,
                next_expected: 1,
            },
        ]);
        assert_eq!(c.acked(1), 50);
        assert_eq!(c.acked(0), 0);
        assert_eq!(c.acked(9), 0);
    }
}
