//! Pacing: when bytes are due at a target rate, and how a sender waits
//! for them.
//!
//! One piece of arithmetic, [`due_ns`] (when the first N bytes are due at
//! rate R), paces everything: TCP's [`Pacer`] and the departures of every
//! UDP [`crate::udp::schedule::Schedule`] (the native sender's profiles and
//! iperf3's datagrams). [`DepartureClock`] is the one way a UDP sender,
//! native or iperf3, waits for its next departure. Every decision takes
//! the time as an argument, so it is tested without sleeping; only
//! [`DepartureClock::wait`] reads the clock and sleeps.

use sonde_model::Rate;
use std::time::{Duration, Instant};

/// Nanoseconds after the start at which the first `bytes` bytes are due
/// at `rate_bps` bits per second (0: unpaced, always due). Exact integer
/// arithmetic, so no rounding lets one more packet in before an end.
pub fn due_ns(bytes: u64, rate_bps: u64) -> u64 {
    if rate_bps == 0 {
        return 0;
    }
    u64::try_from(u128::from(bytes) * 8_000_000_000 / u128::from(rate_bps)).unwrap_or(u64::MAX)
}

/// Most bytes one paced write may carry: 10 ms worth at the target rate,
/// so a paced stream never bursts a whole 128 KiB buffer at a low rate.
pub const PACING_QUANTUM: Duration = Duration::from_millis(10);

/// A TCP stream's pace: bytes moved against the time elapsed.
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
        Duration::from_nanos(due_ns(done, self.rate.bps()))
            .checked_sub(elapsed)
            .filter(|d| !d.is_zero())
    }

    /// The write size to use at this rate: at most `length`, at most one
    /// pacing quantum, at least one small segment.
    pub fn chunk(&self, length: usize) -> usize {
        let quantum = (self.rate.bytes_per_sec() as f64 * PACING_QUANTUM.as_secs_f64()) as usize;
        length.min(quantum.max(1448)).max(1)
    }
}

/// Below this gap between departures a sender does not spin: it sends
/// every departure that is due at once (in batches where it can).
pub const SPIN_GAP: Duration = Duration::from_micros(200);
/// Sleeps end this much before a departure; the rest is spun. Covers the
/// wake-up latency of a busy or virtual machine, at the cost of spinning
/// this long per packet at low rates (5 % of a core at 100 packets/s).
pub const SPIN_SLACK: Duration = Duration::from_micros(500);
/// A paced sender that fell behind (a busy CPU) sends at once what came
/// due in the last 5 ms, and lets the rest of its schedule slip: every
/// later departure leaves that much later, at the rate asked, rather
/// than the whole backlog in one burst at line rate. A sender stalled
/// 15 ms at 80 Mbit/s would offer 150 kB at once, past the 10 ms bucket
/// of a policer at 88 Mbit/s, and measure the policer punishing a rate
/// it was never offered (seed 000's GEANT limiter). 5 ms covers a time
/// slice of a busy scheduler (4 ms at 250 Hz) without a slip.
pub const MAX_LAG: Duration = Duration::from_millis(5);
/// A sender whose schedule slipped still sends every departure its
/// schedule has before the end, for at most this long after it.
pub const CATCH_UP: Duration = Duration::from_millis(250);
/// Longest single sleep, so a sleeping sender sees its stop flag.
pub const POLL: Duration = Duration::from_millis(50);

/// What a sender does about its next departure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// It is due: send it.
    Send,
    /// Spin until this offset from the start, then send.
    Spin(Duration),
    /// Sleep this long, then ask again.
    Nap(Duration),
    /// The run is over: the departure falls at or after the end, or the
    /// sender is past the end by more than its catch-up time.
    Over,
}

/// When a UDP sender's departures leave, in real time: offsets from
/// `start`, none at or after `end`.
#[derive(Debug, Clone, Copy)]
pub struct DepartureClock {
    start: Instant,
    /// The end, as an offset from `start`.
    end: Duration,
    spin: bool,
    catch_up: Duration,
    /// Paced: how far the schedule slipped (a departure more than
    /// [`MAX_LAG`] late moves it and every later one).
    slip: Option<Duration>,
}

impl DepartureClock {
    /// The clock of a sender whose departures are `gap` apart (`None`:
    /// unpaced, every departure due at once and none after the end).
    pub fn new(start: Instant, end: Instant, gap: Option<Duration>) -> Self {
        Self {
            start,
            end: end.saturating_duration_since(start),
            spin: gap.is_some_and(|g| g >= SPIN_GAP),
            catch_up: if gap.is_some() {
                CATCH_UP
            } else {
                Duration::ZERO
            },
            slip: gap.map(|_| Duration::ZERO),
        }
    }

    /// The clock of a schedule whose first gap is `gap` (its
    /// `next_gap`), on the calling thread, spinning the last stretch
    /// before each departure where the gap allows (the native sender:
    /// even spacing for the jitter it measures, at up to a core per
    /// stream).
    pub fn spinning(gap: Option<Duration>, start: Instant, end: Instant) -> Self {
        Self::new(start, end, gap).on_this_thread()
    }

    /// As [`Self::spinning`], sleeping to each departure and never
    /// spinning (iperf3's datagrams: several streams share the machine
    /// with the peer's process, and iperf3 itself spaces its datagrams no
    /// finer).
    pub fn sleeping(gap: Option<Duration>, start: Instant, end: Instant) -> Self {
        let clock = Self::new(start, end, gap).on_this_thread();
        Self {
            spin: false,
            ..clock
        }
    }

    /// Where departures are waited for one by one (the gap allows a
    /// spin), this thread's sleeps end on time: timer slack 1 ns.
    fn on_this_thread(self) -> Self {
        if self.spin {
            crate::sys::tight_timer_slack();
        }
        self
    }

    /// The end, in nanoseconds from the start.
    pub fn end_ns(&self) -> u64 {
        u64::try_from(self.end.as_nanos()).unwrap_or(u64::MAX)
    }

    /// How far the schedule slipped behind (zero unpaced).
    pub fn slip(&self) -> Duration {
        self.slip.unwrap_or_default()
    }

    /// Whether a departure at `at_ns` may leave now, at `now_ns` (both
    /// from the start), with the one before it: it is due (its slipped
    /// time), and before the end. A late wake-up sends what came due
    /// while it slept, never what falls after the end.
    pub fn due_now(&self, at_ns: u64, now_ns: u64) -> bool {
        let slip = u64::try_from(self.slip().as_nanos()).unwrap_or(u64::MAX);
        at_ns.saturating_add(slip) <= now_ns && at_ns < self.end_ns()
    }

    /// What to do, at `now` (from the start), about a departure at `at`.
    /// One more than [`MAX_LAG`] late slips the schedule to leave now.
    pub fn step(&mut self, at: Duration, now: Duration) -> Step {
        if now >= self.end + self.catch_up || at >= self.end {
            return Step::Over;
        }
        if let Some(slip) = &mut self.slip {
            if now > at + *slip + MAX_LAG {
                *slip = now - MAX_LAG - at;
            }
        }
        let at = at + self.slip();
        let Some(wait) = at.checked_sub(now).filter(|w| !w.is_zero()) else {
            return Step::Send;
        };
        if self.spin && wait <= SPIN_SLACK {
            Step::Spin(at)
        } else if self.spin {
            Step::Nap((wait - SPIN_SLACK).min(POLL))
        } else {
            Step::Nap(wait.min(POLL))
        }
    }

    /// Waits for the departure at `at_ns`: [`Step::Send`] once it is due
    /// (after spinning the last stretch), [`Step::Nap`] after a sleep (the
    /// caller checks its stop flag and asks again), or [`Step::Over`].
    pub fn wait(&mut self, at_ns: u64) -> Step {
        match self.step(Duration::from_nanos(at_ns), self.start.elapsed()) {
            Step::Spin(at) => {
                let target = self.start + at;
                while Instant::now() < target {
                    std::hint::spin_loop();
                }
                Step::Send
            }
            Step::Nap(d) => {
                std::thread::sleep(d);
                Step::Nap(d)
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::udp::schedule::Schedule;

    const MS: Duration = Duration::from_millis(1);
    const US: Duration = Duration::from_micros(1);

    #[test]
    fn bytes_are_due_at_their_share_of_the_rate() {
        // 1250-byte packets at 1 Mbit/s: packet k is due at k · 10 ms.
        for k in [0u64, 1, 7, 100, 360_000] {
            assert_eq!(due_ns(k * 1250, 1_000_000), k * 10_000_000);
        }
        // 1 byte at 3 bit/s: 8/3 s, rounded down to the nanosecond.
        assert_eq!(due_ns(1, 3), 2_666_666_666);
        assert_eq!(due_ns(u64::MAX, 1), u64::MAX, "saturates");
        assert_eq!(due_ns(1 << 40, 0), 0, "unpaced: always due");
    }

    #[test]
    fn ahead_of_rate_waits_the_difference() {
        let p = Pacer::new(Rate::from_bps(8_000_000)); // 1 MB/s
        assert_eq!(
            p.wait(500_000, Duration::from_millis(200)),
            Some(Duration::from_millis(300))
        );
        assert_eq!(p.wait(100_000, Duration::from_millis(200)), None);
        assert_eq!(p.wait(200_000, Duration::from_millis(200)), None);
        assert_eq!(Pacer::new(Rate::from_bps(0)).wait(1 << 30, MS), None);
    }

    #[test]
    fn chunks_are_ten_milliseconds_at_most() {
        let p = Pacer::new(Rate::from_bps(80_000_000)); // 10 MB/s
        assert_eq!(p.chunk(128 * 1024), 100_000);
        assert_eq!(Pacer::new(Rate::from_bps(8_000)).chunk(128 * 1024), 1448);
        assert_eq!(p.chunk(500), 500);
    }

    fn clock(gap: Option<Duration>, end: Duration) -> DepartureClock {
        let start = Instant::now();
        DepartureClock::new(start, start + end, gap)
    }

    #[test]
    fn a_spinning_sender_sleeps_then_spins_the_last_stretch() {
        // 100 packets/s over 1 s: the departure of 10 ms.
        let mut c = clock(Some(10 * MS), 1000 * MS);
        assert_eq!(c.step(10 * MS, 2 * MS), Step::Nap(7500 * US));
        assert_eq!(c.step(10 * MS, Duration::ZERO), Step::Nap(9500 * US));
        assert_eq!(c.step(10 * MS, 9600 * US), Step::Spin(10 * MS));
        assert_eq!(c.step(10 * MS, 10 * MS), Step::Send);
        assert_eq!(c.step(10 * MS, 14 * MS), Step::Send, "late: send now");
        assert_eq!(c.slip(), Duration::ZERO, "within 5 ms: no slip");
        // A long gap sleeps in short naps, to see the stop flag.
        assert_eq!(c.step(900 * MS, Duration::ZERO), Step::Nap(POLL));
    }

    #[test]
    fn a_dense_schedule_sleeps_without_spinning() {
        let mut c = clock(Some(Duration::from_micros(100)), 1000 * MS);
        let at = Duration::from_micros(300);
        assert_eq!(c.step(at, Duration::from_micros(100)), Step::Nap(200 * US));
        assert_eq!(c.step(at, at), Step::Send);
    }

    #[test]
    fn a_sleeping_clock_naps_to_the_departure_itself() {
        let start = Instant::now();
        let schedule = Schedule::new(
            sonde_model::Profile::Cbr,
            Rate::from_bps(1_000_000),
            1250,
            0,
        );
        let mut c = DepartureClock::sleeping(schedule.next_gap(), start, start + 1000 * MS);
        assert_eq!(c.step(10 * MS, 2 * MS), Step::Nap(8 * MS));
        assert_eq!(c.step(10 * MS, 9600 * US), Step::Nap(400 * US));
        assert_eq!(c.step(10 * MS, 10 * MS), Step::Send);
        assert_eq!(c.step(1000 * MS, 999 * MS), Step::Over);
    }

    #[test]
    fn nothing_leaves_at_or_after_the_end() {
        let mut c = clock(Some(10 * MS), 1000 * MS);
        assert_eq!(c.step(1000 * MS, 995 * MS), Step::Over);
        // Behind by 0.2 s: what was due before the end still goes.
        assert_eq!(c.step(990 * MS, 1200 * MS), Step::Send);
        assert!(c.due_now(990_000_000, 1_200_000_000));
        assert!(!c.due_now(1_000_000_000, 1_200_000_000));
        assert!(!c.due_now(20_000_000, 10_000_000), "not due yet");
        // Past the catch-up time it gives up.
        assert_eq!(c.step(990 * MS, 1250 * MS), Step::Over);
    }

    #[test]
    fn a_stalled_sender_slips_its_schedule_rather_than_burst() {
        // 1250-byte packets at 10 Mbit/s (1 ms apart), a stall until 20.5
        // ms: the schedule slips 15.5 ms, so at 20.5 ms the departures of
        // 0 to 5 ms (now due at 15.5 to 20.5) leave at once, 5 ms of
        // them, and the one of 6 ms waits until 21.5 (it sleeps to 500 µs
        // before, then spins).
        let start = Instant::now();
        let mut schedule = Schedule::new(
            sonde_model::Profile::Cbr,
            Rate::from_bps(10_000_000),
            1250,
            0,
        );
        let mut c = DepartureClock::new(start, start + 1000 * MS, schedule.next_gap());
        let now = 20_500 * US;
        let mut sent = 0;
        let step = loop {
            let at = schedule.next_departure().at_ns;
            match c.step(Duration::from_nanos(at), now) {
                Step::Send => sent += 1,
                other => break other,
            }
        };
        assert_eq!((sent, step), (6, Step::Nap(500 * US)));
        assert_eq!(c.slip(), 15_500 * US);
        assert!(c.due_now(5_000_000, 20_500_000));
        assert!(!c.due_now(6_000_000, 20_500_000));
        // Later stalls add to the slip; the end is kept: nothing due
        // after it leaves, however late.
        assert_eq!(c.step(100 * MS, 130 * MS), Step::Send);
        assert_eq!(c.slip(), 25 * MS);
        assert_eq!(c.step(999 * MS, 1100 * MS), Step::Send);
        assert_eq!(c.step(1000 * MS, 1100 * MS), Step::Over);
    }

    #[test]
    fn an_unpaced_sender_stops_at_the_end_itself() {
        let mut c = clock(None, 1000 * MS);
        assert_eq!(c.step(Duration::ZERO, 999 * MS), Step::Send);
        assert_eq!(c.step(Duration::ZERO, 1000 * MS), Step::Over);
    }
}
