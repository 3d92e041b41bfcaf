//! From an SNMP agent's octet counters to bytes moved. IF-MIB's counters
//! only grow, and wrap: a 32-bit `ifInOctets` at 2^32 (every 34 s at
//! 1 Gbit/s), a 64-bit `ifHCInOctets` never in practice. Between two
//! polls a counter that went down has wrapped (32 bits: once, as MRTG
//! assumes) or was reset. The agent's `sysUpTime` tells a restart: it
//! went back, or grew by less than the time between the polls (the agent
//! restarted in between and has been up for less). After a restart, or a
//! figure faster than twice the interface's speed, the interval between
//! the two polls is unknown: no rate is made of it, and the totals this
//! follower keeps start again from zero (so a total that goes down marks
//! the break for whoever reads the totals).
//!
//! Agents answer from a cache of the interface counters (net-snmp's
//! lasts 3 s, reloaded by the first request after it expires; routers
//! refresh theirs every few seconds). Polled faster than that, counters
//! that were moving stand still for a poll or two, then jump: the time
//! between two polls is not the time between the counts. So counters that
//! were moving and then did not move at all are held for up to
//! [`STALE_HOLD_NS`]: the interval runs on from the last poll that saw
//! them move to the next one that does, both times at which the agent
//! counted afresh. Past the hold the link is taken to be idle.

/// How wide the agent's counters are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    /// `ifInOctets`/`ifOutOctets` (Counter32): old agents.
    Bits32,
    /// `ifHCInOctets`/`ifHCOutOctets` (Counter64).
    Bits64,
}

impl Width {
    /// How far the counter counts before it wraps to 0.
    fn span(self) -> u128 {
        match self {
            Width::Bits32 => 1 << 32,
            Width::Bits64 => 1 << 64,
        }
    }
}

/// One poll of one interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Poll {
    /// When the answer came, ns since the epoch.
    pub at_ns: i64,
    /// The agent's `sysUpTime`: hundredths of a second since it started.
    pub uptime: u32,
    pub in_octets: u64,
    pub out_octets: u64,
}

/// How long counters that were moving may stand still before the link is
/// taken to be idle rather than the agent's cache to be stale.
pub const STALE_HOLD_NS: i64 = 10_000_000_000;

/// What a poll says about the interval since the poll before it.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// The first poll: nothing to compare with yet.
    First,
    /// Bytes in and out over `secs`; `wrapped`: a 32-bit counter went
    /// past 2^32 on the way.
    Moved {
        secs: f64,
        in_bytes: u64,
        out_bytes: u64,
        wrapped: bool,
    },
    /// The counters stand still where they were moving: the agent's
    /// cache, most likely; the interval runs on to the next poll.
    Stale,
    /// The interval cannot be measured, and why.
    Break(Break),
}

/// Why an interval cannot be measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Break {
    /// The agent restarted (its uptime went back, or grew by less than
    /// the time since the last poll).
    Restarted,
    /// A 64-bit counter went down: the interface's counters were reset.
    Reset,
    /// The bytes counted would be faster than twice the interface's
    /// speed: a counter jumped.
    TooFast,
    /// The poll is not later than the last one.
    NoTime,
}

impl Break {
    pub fn describe(self) -> &'static str {
        match self {
            Break::Restarted => "the agent restarted",
            Break::Reset => "the counters were reset",
            Break::TooFast => "the counters moved faster than twice the interface's speed",
            Break::NoTime => "the poll is not later than the last one",
        }
    }
}

/// Slack allowed between the agent's uptime and this host's clock over an
/// interval (answers late by a retry, clocks that drift): the larger of
/// 1 s and 5 % of the interval.
fn slack_s(secs: f64) -> f64 {
    (secs * 0.05).max(1.0)
}

/// Follows one interface's counters from poll to poll.
#[derive(Debug, Clone)]
pub struct Follower {
    width: Width,
    last: Option<Poll>,
    /// Whether the counters moved over the last interval measured.
    moving: bool,
    in_total: u64,
    out_total: u64,
}

impl Follower {
    pub fn new(width: Width) -> Self {
        Self {
            width,
            last: None,
            moving: false,
            in_total: 0,
            out_total: 0,
        }
    }

    /// Bytes in and out since this follower started (or since the last
    /// break).
    pub fn totals(&self) -> (u64, u64) {
        (self.in_total, self.out_total)
    }

    /// Takes `poll`; `speed_bps` is the interface's speed, if the agent
    /// knows it.
    pub fn step(&mut self, poll: Poll, speed_bps: Option<u64>) -> Step {
        let Some(last) = self.last else {
            self.last = Some(poll);
            return Step::First;
        };
        let still = poll.in_octets == last.in_octets && poll.out_octets == last.out_octets;
        if still
            && self.moving
            && poll.uptime >= last.uptime
            && poll.at_ns > last.at_ns
            && poll.at_ns - last.at_ns < STALE_HOLD_NS
        {
            return Step::Stale;
        }
        self.last = Some(poll);
        let step = self.compare(last, poll, speed_bps);
        match step {
            Step::Moved {
                in_bytes,
                out_bytes,
                ..
            } => {
                self.moving = in_bytes > 0 || out_bytes > 0;
                self.in_total = self.in_total.saturating_add(in_bytes);
                self.out_total = self.out_total.saturating_add(out_bytes);
            }
            Step::Break(_) => {
                self.moving = false;
                self.in_total = 0;
                self.out_total = 0;
            }
            Step::First | Step::Stale => {}
        }
        step
    }

    fn compare(&self, last: Poll, now: Poll, speed_bps: Option<u64>) -> Step {
        let secs = (now.at_ns - last.at_ns) as f64 / 1e9;
        if secs <= 0.0 {
            return Step::Break(Break::NoTime);
        }
        let Some(up_ticks) = now.uptime.checked_sub(last.uptime) else {
            return Step::Break(Break::Restarted);
        };
        if f64::from(up_ticks) / 100.0 + slack_s(secs) < secs {
            return Step::Break(Break::Restarted);
        }
        let (in_bytes, in_wrapped) = match self.delta(last.in_octets, now.in_octets) {
            Ok(d) => d,
            Err(b) => return Step::Break(b),
        };
        let (out_bytes, out_wrapped) = match self.delta(last.out_octets, now.out_octets) {
            Ok(d) => d,
            Err(b) => return Step::Break(b),
        };
        if let Some(speed) = speed_bps.filter(|s| *s > 0) {
            let most = in_bytes.max(out_bytes) as f64 * 8.0 / secs;
            if most > 2.0 * speed as f64 {
                return Step::Break(Break::TooFast);
            }
        }
        Step::Moved {
            secs,
            in_bytes,
            out_bytes,
            wrapped: in_wrapped || out_wrapped,
        }
    }

    /// Bytes between two readings of one counter, and whether it wrapped.
    fn delta(&self, last: u64, now: u64) -> Result<(u64, bool), Break> {
        if now >= last {
            return Ok((now - last, false));
        }
        match self.width {
            Width::Bits32 if last < (1 << 32) => {
                let d = self.width.span() - u128::from(last) + u128::from(now);
                Ok((u64::try_from(d).unwrap_or(u64::MAX), true))
            }
            _ => Err(Break::Reset),
        }
    }
}

/// The longest poll interval at which a 32-bit octet counter of an
/// interface at `speed_bps` cannot wrap twice unseen: the time it takes to
/// count 2^32 bytes at line rate.
pub fn longest_safe_interval_s(speed_bps: u64) -> f64 {
    if speed_bps == 0 {
        return f64::INFINITY;
    }
    (1u64 << 32) as f64 * 8.0 / speed_bps as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    fn poll(at_s: i64, uptime_s: u32, i: u64, o: u64) -> Poll {
        Poll {
            at_ns: at_s * S,
            uptime: uptime_s * 100,
            in_octets: i,
            out_octets: o,
        }
    }

    #[test]
    fn bytes_between_polls_and_the_totals() {
        let mut f = Follower::new(Width::Bits64);
        assert_eq!(f.step(poll(100, 5000, 1_000, 50), None), Step::First);
        assert_eq!(
            f.step(poll(110, 5010, 12_501_000, 1_250_050), Some(100_000_000)),
            Step::Moved {
                secs: 10.0,
                in_bytes: 12_500_000,
                out_bytes: 1_250_000,
                wrapped: false
            }
        );
        assert_eq!(f.totals(), (12_500_000, 1_250_000));
    }

    #[test]
    fn a_32_bit_counter_that_wraps_counts_past_the_wrap() {
        let mut f = Follower::new(Width::Bits32);
        let near = (1u64 << 32) - 1_000;
        f.step(poll(0, 100, near, 0), None);
        let step = f.step(poll(10, 110, 4_000, 10), Some(1_000_000_000));
        assert_eq!(
            step,
            Step::Moved {
                secs: 10.0,
                in_bytes: 5_000,
                out_bytes: 10,
                wrapped: true
            }
        );
        assert_eq!(f.totals(), (5_000, 10));
    }

    #[test]
    fn a_64_bit_counter_that_goes_down_was_reset() {
        let mut f = Follower::new(Width::Bits64);
        f.step(poll(0, 100, 1 << 40, 0), None);
        f.step(poll(10, 110, (1 << 40) + 10, 5), None);
        assert_eq!(f.totals(), (10, 5));
        assert_eq!(
            f.step(poll(20, 120, 500, 7), None),
            Step::Break(Break::Reset)
        );
        assert_eq!(f.totals(), (0, 0), "a break starts the totals again");
        // The poll after the break is measured from it.
        assert!(matches!(
            f.step(poll(30, 130, 1_500, 7), None),
            Step::Moved {
                in_bytes: 1_000,
                ..
            }
        ));
    }

    #[test]
    fn an_agent_restart_breaks_the_interval_however_it_shows() {
        // Uptime went back.
        let mut f = Follower::new(Width::Bits32);
        f.step(poll(0, 1_000, 900, 900), None);
        assert_eq!(
            f.step(poll(10, 3, 950, 950), None),
            Step::Break(Break::Restarted)
        );
        // Uptime grew, but by far less than the time between the polls:
        // restarted in between (a 32-bit counter that went down would
        // otherwise be taken for a wrap).
        let mut f = Follower::new(Width::Bits32);
        f.step(poll(0, 10, 900, 900), None);
        assert_eq!(
            f.step(poll(600, 200, 100, 100), None),
            Step::Break(Break::Restarted)
        );
        // A late answer within the slack is no restart.
        let mut f = Follower::new(Width::Bits32);
        f.step(poll(0, 10, 900, 900), None);
        assert!(matches!(
            f.step(poll(10, 19, 1_000, 1_000), None),
            Step::Moved { .. }
        ));
    }

    #[test]
    fn a_jump_faster_than_the_interface_is_no_rate() {
        let mut f = Follower::new(Width::Bits64);
        f.step(poll(0, 100, 0, 0), None);
        // 10 GB in 10 s on a 100 Mbit/s interface.
        assert_eq!(
            f.step(poll(10, 110, 10_000_000_000, 0), Some(100_000_000)),
            Step::Break(Break::TooFast)
        );
        // Without a speed it cannot be told.
        let mut f = Follower::new(Width::Bits64);
        f.step(poll(0, 100, 0, 0), None);
        assert!(matches!(
            f.step(poll(10, 110, 10_000_000_000, 0), None),
            Step::Moved { .. }
        ));
    }

    #[test]
    fn counters_that_stand_still_while_moving_are_an_agents_cache() {
        let mut f = Follower::new(Width::Bits64);
        f.step(poll(0, 100, 0, 0), None);
        f.step(poll(1, 101, 5_000_000, 0), None);
        // Two polls answered from the agent's cache, then a fresh count:
        // one interval from the last fresh count, 3 s long.
        assert_eq!(f.step(poll(2, 102, 5_000_000, 0), None), Step::Stale);
        assert_eq!(f.step(poll(3, 103, 5_000_000, 0), None), Step::Stale);
        assert_eq!(
            f.step(poll(4, 104, 20_000_000, 0), None),
            Step::Moved {
                secs: 3.0,
                in_bytes: 15_000_000,
                out_bytes: 0,
                wrapped: false
            }
        );
        // Still past the hold: the link went idle.
        f.step(poll(5, 105, 20_000_000, 0), None);
        assert!(matches!(
            f.step(poll(15, 115, 20_000_000, 0), None),
            Step::Moved { in_bytes: 0, secs, .. } if secs == 11.0
        ));
        // An idle link's still counters are read at once.
        assert!(matches!(
            f.step(poll(16, 116, 20_000_000, 0), None),
            Step::Moved { in_bytes: 0, .. }
        ));
    }

    #[test]
    fn a_poll_at_the_same_time_is_no_interval() {
        let mut f = Follower::new(Width::Bits64);
        f.step(poll(10, 100, 0, 0), None);
        assert_eq!(
            f.step(poll(10, 100, 5, 5), None),
            Step::Break(Break::NoTime)
        );
    }

    #[test]
    fn how_often_a_32_bit_counter_must_be_polled() {
        let s = longest_safe_interval_s(1_000_000_000);
        assert!((s - 34.36).abs() < 0.01, "{s}");
        assert!(longest_safe_interval_s(0).is_infinite());
    }
}
