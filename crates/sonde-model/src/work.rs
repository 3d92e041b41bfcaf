//! [`Work`]: how much a request asks of the agent that runs it, computed
//! once from its spec, so that limits bound the whole of it: a ping's
//! every series and timeout, an HTTP test's every ramp step, a method's
//! every trial.

use crate::{HttpSpec, PingSpec, Rate, StreamLayout, TcpSpec, TestSpec, UdpSpec};
use std::time::Duration;

/// The bound on a request's work: how long it can run, and the most it
/// holds or sends at any moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Work {
    /// The longest it can take, every wait included; `None`: no end
    /// (a ping without a count or a deadline).
    pub duration: Option<Duration>,
    /// Tests it runs (1 for a test; a method's most trials).
    pub trials: u64,
    /// Most data streams or connections at once.
    pub streams: u32,
    /// Highest rate it can send at, all streams together; `None`: as fast
    /// as the path allows (TCP without pacing, unpaced UDP).
    pub rate: Option<Rate>,
}

impl Work {
    /// Work that runs this, then `b`: durations add, the peaks are the
    /// higher of the two, where "no pacing" is the highest. Work of no
    /// trials (the default) adds nothing.
    pub fn then(self, b: Work) -> Work {
        if self.trials == 0 {
            return b;
        }
        if b.trials == 0 {
            return self;
        }
        Work {
            duration: self
                .duration
                .zip(b.duration)
                .map(|(x, y)| x.saturating_add(y)),
            trials: self.trials.saturating_add(b.trials),
            streams: self.streams.max(b.streams),
            rate: self
                .rate
                .zip(b.rate)
                .map(|(x, y)| if x.bps() >= y.bps() { x } else { y }),
        }
    }

    /// `n` runs of this work, one after another.
    pub fn times(self, n: u64) -> Work {
        let n32 = u32::try_from(n).unwrap_or(u32::MAX);
        Work {
            duration: self.duration.map(|d| d.saturating_mul(n32)),
            trials: self.trials.saturating_mul(n),
            ..self
        }
    }

    /// This work with `gap` of quiet after each of its trials.
    pub fn with_gaps(self, gap: Duration) -> Work {
        let n = u32::try_from(self.trials).unwrap_or(u32::MAX);
        Work {
            duration: self
                .duration
                .map(|d| d.saturating_add(gap.saturating_mul(n))),
            ..self
        }
    }
}

fn total(per_stream: Option<Rate>, streams: usize) -> Option<Rate> {
    per_stream.map(|r| Rate::from_bps(r.bps().saturating_mul(streams as u64)))
}

impl TcpSpec {
    pub fn work(&self) -> Work {
        Work {
            duration: Some(self.send_duration()),
            trials: 1,
            streams: u32::try_from(self.stream_count()).unwrap_or(u32::MAX),
            rate: total(self.bitrate, self.stream_count()),
        }
    }
}

impl UdpSpec {
    pub fn work(&self) -> Work {
        let rate = self.stream_rate();
        Work {
            duration: Some(self.send_duration()),
            trials: 1,
            streams: u32::try_from(self.stream_count()).unwrap_or(u32::MAX),
            // A rate of 0 is unpaced (flow-controlled).
            rate: total(Some(rate).filter(|r| r.bps() > 0), self.stream_count()),
        }
    }
}

impl PingSpec {
    /// Every series (one per size) sends `count` requests `interval`
    /// apart and then waits up to `timeout` for the last answers; a
    /// deadline ends the whole run sooner. The rate is the largest
    /// request's bits once per interval.
    pub fn work(&self) -> Work {
        let sizes = self.series_sizes();
        let series = u32::try_from(sizes.len()).unwrap_or(u32::MAX);
        let count = u32::try_from(self.count).unwrap_or(u32::MAX);
        let each = (self.count > 0).then(|| self.interval.saturating_mul(count) + self.timeout);
        let all = each.map(|e| e.saturating_mul(series));
        let duration = match (all, self.deadline) {
            (Some(a), Some(d)) => Some(a.min(d)),
            (a, d) => a.or(d),
        };
        let largest = u64::from(sizes.iter().copied().max().unwrap_or(0));
        let per_s = 1e9 / self.interval.as_nanos().max(1) as f64;
        Work {
            duration,
            trials: 1,
            streams: 1,
            rate: Some(Rate::from_bps((largest as f64 * 8.0 * per_s) as u64)),
        }
    }
}

impl HttpSpec {
    /// Every step of a ramp, plus one request timeout at the end; the
    /// most connections of any step. Its rate is in requests, not bits:
    /// `None` here, bounded by `connections` and `time`.
    pub fn work(&self) -> Work {
        Work {
            duration: Some(self.send_duration() + self.timeout),
            trials: 1,
            streams: self.most_connections(),
            rate: None,
        }
    }
}

impl crate::TraceSpec {
    /// Every hop's probes waiting their whole wait (16 are in flight at
    /// once, so a trace is usually far shorter), and the MTU search's
    /// sizes each waiting too. A multipath trace waits once per round of
    /// a hop, at most 16 rounds (one per interface found, up to 15, and
    /// the first). A trace's probes are a few small packets: no rate.
    pub fn work(&self) -> Work {
        let hops = u32::from(self.max_hops - self.first_hop.min(self.max_hops)) + 1;
        let rounds = if self.multipath { 16 } else { 1 };
        let mtu_sizes = if self.mtu { 16 } else { 0 };
        Work {
            duration: Some(self.wait * (hops * rounds + mtu_sizes)),
            trials: 1,
            streams: 1,
            rate: None,
        }
    }
}

impl TestSpec {
    /// The bound on this test's work.
    pub fn work(&self) -> Work {
        match self {
            TestSpec::Tcp(s) => s.work(),
            TestSpec::Udp(s) => s.work(),
            TestSpec::Ping(s) => s.work(),
            TestSpec::Http(s) => s.work(),
            TestSpec::Trace(s) => s.work(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ping_is_bounded_by_every_series_and_its_timeouts() {
        let spec = PingSpec {
            host: "::1".into(),
            count: 10,
            interval: Duration::from_millis(200),
            sizes: vec![56, 1000, 1400, 8000, 65_000],
            timeout: Duration::from_secs(600),
            ..PingSpec::default()
        };
        let w = spec.work();
        assert_eq!(w.duration, Some(Duration::from_secs(5 * (2 + 600))));
        // 65,000 bytes five times a second.
        assert_eq!(w.rate, Some(Rate::from_bps(65_000 * 8 * 5)));
        let w = PingSpec {
            deadline: Some(Duration::from_secs(30)),
            ..spec.clone()
        }
        .work();
        assert_eq!(w.duration, Some(Duration::from_secs(30)));
        let w = PingSpec { count: 0, ..spec }.work();
        assert_eq!(w.duration, None, "no count, no deadline: no end");
    }

    #[test]
    fn an_http_ramp_counts_every_step_and_its_largest() {
        let spec = HttpSpec {
            url: "http://[::1]/".into(),
            ramp: Some(crate::HttpRamp {
                steps: crate::RampSteps::Connections(vec![1, 64, 8]),
                step_time: Duration::from_secs(20),
                rise_pct: 50.0,
            }),
            ..HttpSpec::default()
        };
        let w = spec.work();
        assert_eq!(w.duration, Some(Duration::from_secs(60 + 10)));
        assert_eq!(w.streams, 64);
    }

    #[test]
    fn runs_in_turn_add_their_times_and_keep_their_peaks() {
        let tcp = TcpSpec {
            time: Duration::from_secs(10),
            parallel: 4,
            bitrate: Some(Rate::from_bps(1_000_000)),
            ..TcpSpec::default()
        }
        .work();
        assert_eq!(tcp.rate, Some(Rate::from_bps(4_000_000)));
        let udp = UdpSpec {
            time: Duration::from_secs(5),
            bitrate: Rate::from_bps(9_000_000),
            ..UdpSpec::default()
        }
        .work();
        let both = tcp.then(udp).times(3).with_gaps(Duration::from_secs(1));
        assert_eq!(both.trials, 6);
        assert_eq!(both.duration, Some(Duration::from_secs(45 + 6)));
        assert_eq!(both.streams, 4);
        assert_eq!(both.rate, Some(Rate::from_bps(9_000_000)));
        assert_eq!(Work::default().then(udp), udp, "nothing then a test");
    }
}
