//! A test bounded by volume (iperf3's `-n` bytes, `-k` blocks): the
//! streams of one direction on one end share a [`Budget`]. Senders take
//! from it before each write (or datagram), so that together they send
//! exactly the budget after the warm-up; receivers against a peer that
//! does not close its streams (iperf3) count into it and stop when it is
//! spent. Time stays the upper bound: the test's timer ends it if the
//! budget lasts longer.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

/// Units (bytes or datagrams) one direction may still move.
#[derive(Debug)]
pub struct Budget {
    limit: u64,
    used: AtomicU64,
    /// Units moved before this instant (the warm-up) are not counted;
    /// `None`: not before [`Budget::open`].
    from: Option<Instant>,
    opened: AtomicBool,
}

impl Budget {
    /// Counting from `from` (the end of the warm-up).
    pub fn new(limit: u64, from: Instant) -> Self {
        Self {
            limit,
            used: AtomicU64::new(0),
            from: Some(from),
            opened: AtomicBool::new(false),
        }
    }

    /// Counting once [`Budget::open`] is called: when the side's sampler
    /// ends the warm-up, so that the budget and the measured bytes start
    /// at the same moment.
    pub fn gated(limit: u64) -> Self {
        Self {
            limit,
            used: AtomicU64::new(0),
            from: None,
            opened: AtomicBool::new(false),
        }
    }

    /// Starts counting (the warm-up is over).
    pub fn open(&self) {
        self.opened.store(true, Ordering::Relaxed);
    }

    fn counting(&self, now: Instant) -> bool {
        self.opened.load(Ordering::Relaxed) || self.from.is_some_and(|f| now >= f)
    }

    /// Takes up to `want` units for the next send at `now`: all of them
    /// within the warm-up, else what is left of the budget (0: spent).
    pub fn take(&self, want: u64, now: Instant) -> u64 {
        if !self.counting(now) {
            return want;
        }
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            let grant = want.min(self.limit.saturating_sub(used));
            if grant == 0 {
                return 0;
            }
            match self.used.compare_exchange_weak(
                used,
                used + grant,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return grant,
                Err(now_used) => used = now_used,
            }
        }
    }

    /// Returns what a send taken at `taken_at` did not use (a short write).
    pub fn give_back(&self, units: u64, taken_at: Instant) {
        if units > 0 && self.counting(taken_at) {
            self.used.fetch_sub(units, Ordering::Relaxed);
        }
    }

    /// Counts `units` received (all of them, the warm-up included, as
    /// iperf3's client counts what it receives); true once the budget is
    /// spent.
    pub fn count(&self, units: u64) -> bool {
        self.used.fetch_add(units, Ordering::Relaxed) + units >= self.limit
    }

    /// Whether nothing is left.
    pub fn spent(&self) -> bool {
        self.used.load(Ordering::Relaxed) >= self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn senders_together_take_exactly_the_budget() {
        let start = Instant::now();
        let b = Arc::new(Budget::new(1_000_003, start));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let b = Arc::clone(&b);
                std::thread::spawn(move || {
                    let mut sent = 0;
                    loop {
                        let n = b.take(4096, Instant::now());
                        if n == 0 {
                            return sent;
                        }
                        sent += n;
                    }
                })
            })
            .collect();
        let total: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
        assert_eq!(total, 1_000_003);
        assert!(b.spent());
    }

    #[test]
    fn the_warm_up_is_not_counted_and_short_writes_are_given_back() {
        let start = Instant::now();
        let b = Budget::new(100, start + Duration::from_secs(3600));
        assert_eq!(b.take(1000, Instant::now()), 1000);
        let later = start + Duration::from_secs(3601);
        assert_eq!(b.take(80, later), 80);
        b.give_back(30, later);
        assert_eq!(b.take(80, later), 50);
        assert_eq!(b.take(80, later), 0);
    }

    #[test]
    fn a_gated_budget_counts_from_when_it_is_opened() {
        let b = Budget::gated(10);
        assert_eq!(b.take(100, Instant::now()), 100);
        b.open();
        assert_eq!(b.take(100, Instant::now()), 10);
        assert!(b.spent());
    }

    #[test]
    fn receivers_stop_once_the_budget_arrived() {
        let b = Budget::new(10, Instant::now());
        assert!(!b.count(4));
        assert!(!b.count(5));
        assert!(b.count(1));
    }
}
