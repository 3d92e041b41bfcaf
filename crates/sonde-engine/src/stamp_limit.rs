//! The STAMP reflector's rate limits: a token bucket per source address,
//! and one for all sources together, so that many sources cannot make
//! the reflector answer more than its overall cap.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Instant;

/// A bucket of a tenth of a second of `rate` (at least 10 packets),
/// refilled at `rate` per second.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    last: Instant,
}

/// The burst a rate allows: a tenth of a second of it, at least 10.
pub fn burst_of(rate_pps: u32) -> f64 {
    (f64::from(rate_pps.max(1)) / 10.0).max(10.0)
}

impl Bucket {
    fn full(burst: f64, now: Instant) -> Self {
        Self {
            tokens: burst,
            last: now,
        }
    }

    fn take(&mut self, rate: f64, burst: f64, now: Instant) -> bool {
        let since = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens = (self.tokens + since * rate).min(burst);
        self.last = self.last.max(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Per-source token buckets, bounded in number.
pub(crate) struct PerSource {
    rate: f64,
    burst: f64,
    sources: HashMap<IpAddr, Bucket>,
}

const MAX_SOURCES: usize = 65_536;

impl PerSource {
    pub(crate) fn new(rate_pps: u32) -> Self {
        Self {
            rate: f64::from(rate_pps.max(1)),
            burst: burst_of(rate_pps),
            sources: HashMap::new(),
        }
    }

    pub(crate) fn allow(&mut self, ip: IpAddr, now: Instant) -> bool {
        if self.sources.len() >= MAX_SOURCES && !self.sources.contains_key(&ip) {
            // Forget sources whose bucket has long been full again.
            let idle = self.burst / self.rate;
            self.sources
                .retain(|_, b| now.duration_since(b.last).as_secs_f64() < idle);
            if self.sources.len() >= MAX_SOURCES {
                return false;
            }
        }
        let burst = self.burst;
        self.sources
            .entry(ip)
            .or_insert_with(|| Bucket::full(burst, now))
            .take(self.rate, burst, now)
    }
}

/// One bucket for every source and every reflector socket together.
#[derive(Debug)]
pub struct TotalCap {
    rate: f64,
    burst: f64,
    bucket: Mutex<Bucket>,
}

impl TotalCap {
    /// At most `rate_pps` answers a second overall, after a burst of
    /// [`burst_of`] it.
    pub fn new(rate_pps: u32) -> Self {
        let burst = burst_of(rate_pps);
        Self {
            rate: f64::from(rate_pps.max(1)),
            burst,
            bucket: Mutex::new(Bucket::full(burst, Instant::now())),
        }
    }

    pub(crate) fn allow(&self, now: Instant) -> bool {
        let mut b = self.bucket.lock().unwrap_or_else(|p| p.into_inner());
        b.take(self.rate, self.burst, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_source_gets_its_rate_and_burst_and_no_more() {
        let mut l = PerSource::new(100);
        let t = Instant::now();
        let ip: IpAddr = "2001:db8::1".parse().unwrap();
        let other: IpAddr = "2001:db8::2".parse().unwrap();
        // A burst of 10 (a tenth of a second at 100/s, at least 10).
        let first = (0..50).filter(|_| l.allow(ip, t)).count();
        assert_eq!(first, 10);
        assert!(l.allow(other, t), "another source has its own bucket");
        // One second later: 100 more tokens, capped at the burst.
        let later = (0..50)
            .filter(|_| l.allow(ip, t + Duration::from_secs(1)))
            .count();
        assert_eq!(later, 10);
        // 10 ms later: one more.
        assert!(l.allow(ip, t + Duration::from_millis(1010)));
        assert!(!l.allow(ip, t + Duration::from_millis(1010)));
    }

    #[test]
    fn all_sources_share_the_total_cap() {
        let cap = TotalCap::new(1000);
        let t = Instant::now();
        // The burst: 100 (a tenth of a second at 1000/s).
        assert_eq!((0..500).filter(|_| cap.allow(t)).count(), 100);
        // Half a second later: 500 more, capped at the burst.
        let later = t + Duration::from_millis(500);
        assert_eq!((0..500).filter(|_| cap.allow(later)).count(), 100);
        // 1 ms later: one more.
        let next = later + Duration::from_millis(1);
        assert!(cap.allow(next));
        assert!(!cap.allow(next));
        // A clock read before the last one takes nothing back.
        assert!(!cap.allow(t));
    }
}
