//! The queue in front of an emulated line (`line_rate`): a tail-drop FIFO
//! of at most `limit` packets, or RIO, RED with In and Out (Clark and
//! Fang), as the AF router of seed 004 §5.1 ran it under ALTQ: one queue,
//! three drop precedences (the colours of RFC 2597's AFx1, AFx2, AFx3),
//! each with its own RED thresholds over its own average queue.
//!
//! RIO is coupled: the average that decides a colour's fate counts the
//! packets of that colour and of every colour less likely to be dropped
//! (green's counts green, yellow's green and yellow, red's all), so red
//! goes first when anything queues, yellow when green and yellow do, and
//! green only when green alone fills the queue. Each average is an
//! exponentially weighted moving average of that count, taken at every
//! arrival with weight `weight` (seed 004 Table 8: 0.008) and decayed
//! over idle time as if small packets had arrived to an empty queue, as
//! RED (Floyd and Jacobson 1993) does. Between a colour's `min` and `max`
//! a packet is dropped with RED's probability, `max_p` × (avg − min) /
//! (max − min), spread by the count of packets since the last drop; at
//! `max` or above, always. The kernel here has no RED or GRED qdisc, so
//! the emulator's line, where the queue builds, holds it.

use super::random::Rng;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// One colour's RED thresholds, in packets of average queue.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RedThresholds {
    pub min: f64,
    pub max: f64,
    pub max_p: f64,
}

/// RIO's settings: seed 004 Table 8 by default.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rio {
    pub green: RedThresholds,
    pub yellow: RedThresholds,
    pub red: RedThresholds,
    /// The averages' weight.
    pub weight: f64,
}

impl Default for Rio {
    /// Seed 004 Table 8, for a queue of 30 packets.
    fn default() -> Self {
        let t = |min, max, max_p| RedThresholds { min, max, max_p };
        Self {
            green: t(11.0, 18.0, 0.001),
            yellow: t(6.0, 12.0, 0.1),
            red: t(3.0, 8.0, 0.2),
            weight: 0.008,
        }
    }
}

impl Rio {
    fn thresholds(&self, c: Colour) -> RedThresholds {
        match c {
            Colour::Green => self.green,
            Colour::Yellow => self.yellow,
            Colour::Red => self.red,
        }
    }
}

/// A packet's drop precedence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Colour {
    Green = 0,
    Yellow = 1,
    Red = 2,
}

impl Colour {
    /// AFx1 green, AFx2 yellow, AFx3 red (RFC 2597); every other DSCP
    /// (and a frame that is not IP) is out of profile: red, as seed 004's
    /// ingress conditioner marked the background.
    pub fn of_dscp(dscp: Option<u8>) -> Colour {
        match dscp {
            Some(d) if (10..=38).contains(&d) && (d >> 3) >= 1 && (d >> 3) <= 4 => match d & 0x07 {
                2 => Colour::Green,
                4 => Colour::Yellow,
                _ => Colour::Red,
            },
            _ => Colour::Red,
        }
    }
}

/// The line's queue at work: which packets are in it and until when.
#[derive(Debug, Clone)]
pub struct LineQueue {
    limit: usize,
    rio: Option<Rio>,
    /// When each queued packet's last bit is across, and its colour.
    held: VecDeque<(u64, Colour)>,
    /// Packets queued of each colour or a less droppable one.
    coupled: [u32; 3],
    avg: [f64; 3],
    /// Packets since the last drop, per colour (RED's count).
    since_drop: [u32; 3],
    /// When the queue last went empty.
    idle_since: Option<u64>,
    /// How long the line takes over a small packet: RED's idle decay
    /// counts that many arrivals per this much idle time.
    small_packet_ns: u64,
}

/// Why a packet did not join the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The queue held `limit` packets.
    Full,
    /// RIO dropped it early.
    Early,
}

impl LineQueue {
    /// A queue of at most `limit` packets (0: unbounded) on a line of
    /// `rate_bps`.
    pub fn new(limit: u32, rio: Option<Rio>, rate_bps: u64) -> Self {
        Self {
            limit: limit as usize,
            rio,
            held: VecDeque::new(),
            coupled: [0; 3],
            avg: [0.0; 3],
            since_drop: [0; 3],
            idle_since: Some(0),
            small_packet_ns: (500 * 8 * 1_000_000_000 / rate_bps.max(1)).max(1),
        }
    }

    /// Packets in the queue (the one on the line included) at `now_ns`.
    #[cfg(test)]
    fn len(&mut self, now_ns: u64) -> usize {
        self.drain(now_ns);
        self.held.len()
    }

    /// Whether a packet with `dscp` arriving at `now_ns` may join.
    pub fn admit(&mut self, dscp: Option<u8>, now_ns: u64, rng: &mut Rng) -> Result<(), Refusal> {
        self.drain(now_ns);
        let colour = Colour::of_dscp(dscp);
        if let Some(rio) = self.rio {
            self.average(&rio, now_ns);
            let c = colour as usize;
            let t = rio.thresholds(colour);
            let avg = self.avg[c];
            let drop = if avg < t.min {
                self.since_drop[c] = 0;
                false
            } else if avg >= t.max {
                true
            } else {
                self.since_drop[c] += 1;
                let pb = t.max_p * (avg - t.min) / (t.max - t.min);
                let spread = 1.0 - f64::from(self.since_drop[c]) * pb;
                let pa = if spread <= 0.0 { 1.0 } else { pb / spread };
                rng.chance(pa.min(1.0))
            };
            if drop {
                self.since_drop[c] = 0;
                return Err(Refusal::Early);
            }
        }
        if self.limit > 0 && self.held.len() >= self.limit {
            return Err(Refusal::Full);
        }
        Ok(())
    }

    /// Records an admitted packet of `dscp` whose last bit is across at
    /// `done_ns`.
    pub fn push(&mut self, dscp: Option<u8>, done_ns: u64) {
        let colour = Colour::of_dscp(dscp);
        for n in &mut self.coupled[colour as usize..] {
            *n += 1;
        }
        self.held.push_back((done_ns, colour));
        self.idle_since = None;
    }

    /// Takes out the packets that are across by `now_ns`.
    fn drain(&mut self, now_ns: u64) {
        while let Some(&(done, colour)) = self.held.front() {
            if done > now_ns {
                break;
            }
            self.held.pop_front();
            for n in &mut self.coupled[colour as usize..] {
                *n = n.saturating_sub(1);
            }
            if self.held.is_empty() {
                self.idle_since = Some(done);
            }
        }
    }

    /// Moves each average towards its count; after idle time, first
    /// decays it as if a small packet had found the queue empty every
    /// `small_packet_ns`.
    fn average(&mut self, rio: &Rio, now_ns: u64) {
        let w = rio.weight;
        if let Some(since) = self.idle_since.take() {
            let m = now_ns.saturating_sub(since) / self.small_packet_ns;
            let keep = (1.0 - w).powf(m.min(1_000_000) as f64);
            for a in &mut self.avg {
                *a *= keep;
            }
        }
        for (a, &q) in self.avg.iter_mut().zip(&self.coupled) {
            *a += w * (f64::from(q) - *a);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn af_drop_precedences_are_colours_and_the_rest_is_red() {
        for (d, c) in [
            (10, Colour::Green),
            (12, Colour::Yellow),
            (14, Colour::Red),
            (18, Colour::Green),
            (28, Colour::Yellow),
            (38, Colour::Red),
            (0, Colour::Red),
            (46, Colour::Red),
            (8, Colour::Red),
            (40, Colour::Red),
        ] {
            assert_eq!(Colour::of_dscp(Some(d)), c, "DSCP {d}");
        }
        assert_eq!(Colour::of_dscp(None), Colour::Red);
    }

    /// Offers `load` × the line's rate of 1000-byte packets, one colour
    /// after another in turn, for `secs`; returns each colour's loss.
    fn offer(rio: Option<Rio>, limit: u32, load: f64, secs: u64) -> [f64; 3] {
        let rate = 1_000_000u64;
        let tx_ns = 1000 * 8 * 1_000_000_000 / rate;
        let gap = (tx_ns as f64 / load) as u64;
        let mut q = LineQueue::new(limit, rio, rate);
        let mut rng = Rng::new(7);
        let (mut sent, mut lost) = ([0u32; 3], [0u32; 3]);
        let mut line_free = 0u64;
        let dscps = [10u8, 12, 14];
        let n = secs * 1_000_000_000 / gap;
        for k in 0..n {
            let now = k * gap;
            let c = (k % 3) as usize;
            sent[c] += 1;
            if q.admit(Some(dscps[c]), now, &mut rng).is_err() {
                lost[c] += 1;
                continue;
            }
            line_free = line_free.max(now) + tx_ns;
            q.push(Some(dscps[c]), line_free);
        }
        [0, 1, 2].map(|c| f64::from(lost[c]) / f64::from(sent[c]))
    }

    #[test]
    fn a_tail_drop_queue_loses_every_colour_alike() {
        let loss = offer(None, 30, 1.3, 60);
        // 1 − 1/1.3 = 23 % in all, shared by the colours within a point.
        for l in loss {
            assert!((l - 0.231).abs() < 0.01, "{loss:?}");
        }
    }

    #[test]
    fn rio_drops_red_before_yellow_before_green() {
        let loss = offer(Some(Rio::default()), 30, 1.3, 60);
        let all = loss.iter().sum::<f64>() / 3.0;
        assert!(
            (all - 0.231).abs() < 0.01,
            "the line still carries its rate: {loss:?}"
        );
        assert!(loss[0] < 0.01, "green kept: {loss:?}");
        assert!(loss[0] < loss[1] && loss[1] < loss[2], "{loss:?}");
    }

    #[test]
    fn under_the_line_rate_nothing_is_lost_and_idle_time_empties_the_average() {
        let loss = offer(Some(Rio::default()), 30, 0.9, 20);
        assert_eq!(loss, [0.0; 3]);
        let mut q = LineQueue::new(30, Some(Rio::default()), 1_000_000);
        let mut rng = Rng::new(1);
        for _ in 0..30 {
            q.push(Some(10), 1_000_000_000);
        }
        // A standing queue of 30 green packets: the averages climb
        // towards it, and past green's max everything is dropped.
        for k in 0..500u64 {
            let _ = q.admit(Some(10), k * 1000, &mut rng);
        }
        assert_eq!(q.admit(Some(10), 600_000, &mut rng), Err(Refusal::Early));
        assert!(q.avg[0] > 18.0, "{:?}", q.avg);
        // Five seconds after the queue emptied (1250 small packets' time
        // at 1 Mbit/s), the averages are near 0 and a red packet passes.
        assert!(q.len(1_000_000_001) == 0);
        assert_eq!(q.admit(Some(14), 6_000_000_000, &mut rng), Ok(()));
        assert!(q.avg[2] < 1.0, "{:?}", q.avg);
    }

    #[test]
    fn a_full_queue_refuses_whatever_the_colour() {
        let mut q = LineQueue::new(2, None, 1_000_000);
        let mut rng = Rng::new(1);
        for _ in 0..2 {
            assert_eq!(q.admit(Some(10), 0, &mut rng), Ok(()));
            q.push(Some(10), 10_000_000);
        }
        assert_eq!(q.admit(Some(10), 0, &mut rng), Err(Refusal::Full));
        assert_eq!(q.admit(Some(10), 10_000_000, &mut rng), Ok(()));
    }
}
