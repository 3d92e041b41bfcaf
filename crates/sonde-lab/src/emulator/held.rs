//! The frames one direction holds, in the order they leave: by release
//! time, then by arrival.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Instant;

/// A frame and when it may leave.
pub(super) struct Held {
    pub release: Instant,
    /// Arrival order: frames released at the same time leave in it.
    pub seq: u64,
    pub frame: Vec<u8>,
}

impl Held {
    fn key(&self) -> (Instant, u64) {
        (self.release, self.seq)
    }
}

impl PartialEq for Held {
    fn eq(&self, o: &Self) -> bool {
        self.key() == o.key()
    }
}
impl Eq for Held {}
impl PartialOrd for Held {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Held {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.key().cmp(&o.key())
    }
}

/// Held frames, earliest release first. A steady delay releases frames in
/// the order they came, so those go to a queue (constant time each);
/// only a frame due before the last one queued (jitter, a reordered
/// frame) goes to a heap. At 2.5 Gbit/s through 10 ms a direction holds
/// some 2,000 frames, and the heap alone cost its writer 3 % of the
/// machine's time (bench/lab-emulator).
#[derive(Default)]
pub(super) struct HeldQueue {
    in_order: VecDeque<Held>,
    early: BinaryHeap<Reverse<Held>>,
}

impl HeldQueue {
    pub fn len(&self) -> usize {
        self.in_order.len() + self.early.len()
    }

    pub fn push(&mut self, h: Held) {
        if self
            .in_order
            .back()
            .is_none_or(|last| last.key() <= h.key())
        {
            self.in_order.push_back(h);
        } else {
            self.early.push(Reverse(h));
        }
    }

    /// The earliest release held.
    pub fn first_release(&self) -> Option<Instant> {
        self.peek().map(|h| h.release)
    }

    fn peek(&self) -> Option<&Held> {
        match (self.in_order.front(), self.early.peek()) {
            (Some(a), Some(Reverse(b))) => Some(if a.key() <= b.key() { a } else { b }),
            (a, b) => a.or(b.map(|Reverse(b)| b)),
        }
    }

    /// Takes the frame that leaves first.
    pub fn pop(&mut self) -> Option<Held> {
        let from_queue = match (self.in_order.front(), self.early.peek()) {
            (Some(a), Some(Reverse(b))) => a.key() <= b.key(),
            (a, _) => a.is_some(),
        };
        if from_queue {
            self.in_order.pop_front()
        } else {
            self.early.pop().map(|Reverse(h)| h)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn frames_leave_by_release_then_arrival_however_they_came() {
        let t0 = Instant::now();
        // Releases (µs) in arrival order: steady runs, jitter that goes
        // back, ties, and a long gap.
        let releases = [5u64, 7, 7, 3, 9, 8, 8, 20, 1, 21, 21, 2, 30, 25, 31, 31, 0];
        let mut q = HeldQueue::default();
        for (seq, us) in releases.iter().enumerate() {
            q.push(Held {
                release: t0 + Duration::from_micros(*us),
                seq: seq as u64,
                frame: vec![seq as u8],
            });
        }
        assert_eq!(q.len(), releases.len());
        let mut want: Vec<(u64, u64)> = releases
            .iter()
            .enumerate()
            .map(|(seq, us)| (*us, seq as u64))
            .collect();
        want.sort_unstable();
        let mut got = Vec::new();
        while let Some(first) = q.first_release() {
            let h = q.pop().expect("a frame when one is held");
            assert_eq!(h.release, first, "first_release names the next to leave");
            assert_eq!(h.frame, vec![h.seq as u8]);
            got.push(((h.release - t0).as_micros() as u64, h.seq));
        }
        assert_eq!(got, want);
        assert_eq!(q.len(), 0);
        assert!(q.pop().is_none());
    }
}
