//! Pacing: spreading bytes evenly over time at a target rate.
//!
//! The pacer never reads a clock; the caller passes the time elapsed, so
//! the arithmetic is tested without sleeping.

use sonde_model::Rate;
use std::time::Duration;

/// Most bytes one paced write may carry: 10 ms worth at the target rate,
/// so a paced stream never bursts a whole 128 KiB buffer at a low rate.
pub const PACING_QUANTUM: Duration = Duration::from_millis(10);

#[derive(Debug, Clone, Copy)]
pub struct Pacer {
    rate: Rate,
}

impl Pacer {
    pub fn new(rate: Rate) -> Self {
        Self { rate }
    }

    pub fn rate(&self) -> Rate {
        self.rate
    }

    /// How long to wait before moving more bytes, given `done` bytes moved
    /// in `elapsed`; `None` when the stream is not ahead of its rate.
    pub fn wait(&self, done: u64, elapsed: Duration) -> Option<Duration> {
        let bps = self.rate.bps();
        if bps == 0 {
            return None;
        }
        let due = Duration::from_secs_f64(done as f64 * 8.0 / bps as f64);
        due.checked_sub(elapsed).filter(|d| !d.is_zero())
    }

    /// The write size to use at this rate: at most `length`, at most one
    /// pacing quantum, at least one small segment.
    pub fn chunk(&self, length: usize) -> usize {
        let quantum = (self.rate.bytes_per_sec() as f64 * PACING_QUANTUM.as_secs_f64()) as usize;
        length.min(quantum.max(1448)).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ahead_of_rate_waits_the_difference() {
        let p = Pacer::new(Rate::from_bps(8_000_000)); // 1 MB/s
        assert_eq!(
            p.wait(500_000, Duration::from_millis(200)),
            Some(Duration::from_millis(300))
        );
        assert_eq!(p.wait(100_000, Duration::from_millis(200)), None);
    }

    #[test]
    fn chunks_are_ten_milliseconds_at_most() {
        let p = Pacer::new(Rate::from_bps(80_000_000)); // 10 MB/s
        assert_eq!(p.chunk(128 * 1024), 100_000);
        assert_eq!(Pacer::new(Rate::from_bps(8_000)).chunk(128 * 1024), 1448);
        assert_eq!(p.chunk(500), 500);
    }
}
