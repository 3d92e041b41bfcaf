//! Round-trip time figures, with the same field names in every test that
//! reports RTT (`sonde ping`, latency under load).

use crate::Figures;
use serde::{Deserialize, Serialize};

/// RTT statistics over a set of replies, in milliseconds. `mdev` is the
/// population standard deviation (as iputils `ping` reports it);
/// percentiles are nearest-rank.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RttStats {
    #[schemars(range(min = 0))]
    pub min: f64,
    #[schemars(range(min = 0))]
    pub avg: f64,
    #[schemars(range(min = 0))]
    pub max: f64,
    #[schemars(range(min = 0))]
    pub mdev: f64,
    #[schemars(range(min = 0))]
    pub p50: f64,
    #[schemars(range(min = 0))]
    pub p90: f64,
    #[schemars(range(min = 0))]
    pub p99: f64,
}

impl RttStats {
    /// The statistics of `samples` (ms); `None` when there are none.
    pub fn from_ms(samples: &[f64]) -> Option<Self> {
        if samples.is_empty() {
            return None;
        }
        let mut sorted: Vec<f64> = samples.iter().copied().filter(|v| v.is_finite()).collect();
        if sorted.is_empty() {
            return None;
        }
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len() as f64;
        let avg = sorted.iter().sum::<f64>() / n;
        let var = sorted.iter().map(|v| (v - avg).powi(2)).sum::<f64>() / n;
        Some(Self {
            min: sorted[0],
            avg,
            max: sorted[sorted.len() - 1],
            mdev: var.sqrt(),
            p50: nearest_rank(&sorted, 50.0),
            p90: nearest_rank(&sorted, 90.0),
            p99: nearest_rank(&sorted, 99.0),
        })
    }
}

/// The nearest-rank percentile `p` of ascending `sorted` (not empty).
pub fn nearest_rank(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// How RTT probes travelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ProbeMethod {
    /// ICMP/ICMPv6 echo over a datagram socket (ping_group_range).
    IcmpDatagram,
    /// ICMP/ICMPv6 echo over a raw socket (root or CAP_NET_RAW).
    IcmpRaw,
    /// STAMP test packets (RFC 8762) to a reflector.
    Stamp,
    /// STAMP in authenticated mode (HMAC-SHA-256).
    StampAuthenticated,
}

impl ProbeMethod {
    pub fn name(self) -> &'static str {
        match self {
            ProbeMethod::IcmpDatagram => "icmp-datagram",
            ProbeMethod::IcmpRaw => "icmp-raw",
            ProbeMethod::Stamp => "stamp",
            ProbeMethod::StampAuthenticated => "stamp-authenticated",
        }
    }
}

impl std::fmt::Display for ProbeMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// RTT before a load and while it runs: the figure that shows a bloated
/// buffer (`sonde tcp --latency`, `sonde udp --latency`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LatencyUnderLoad {
    /// How the pings went.
    pub method: ProbeMethod,
    /// Pings to the server before the test.
    pub idle: Figures,
    /// Pings to the server while the test ran.
    pub loaded: Figures,
    /// Median RTT under load minus median RTT idle.
    pub increase_ms: Option<f64>,
}

impl LatencyUnderLoad {
    pub fn new(method: ProbeMethod, idle: Figures, loaded: Figures) -> Self {
        let increase_ms = match (&idle.rtt_ms, &loaded.rtt_ms) {
            (Some(i), Some(l)) => Some(l.p50 - i.p50),
            _ => None,
        };
        Self {
            method,
            idle,
            loaded,
            increase_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_of_a_known_series() {
        // 1..=100 ms: mean 50.5, population σ = sqrt((100² - 1) / 12).
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        let s = RttStats::from_ms(&v).unwrap();
        assert_eq!((s.min, s.max), (1.0, 100.0));
        assert!((s.avg - 50.5).abs() < 1e-12);
        assert!((s.mdev - (9999.0f64 / 12.0).sqrt()).abs() < 1e-9);
        assert_eq!((s.p50, s.p90, s.p99), (50.0, 90.0, 99.0));
    }

    #[test]
    fn percentiles_of_few_samples_are_samples() {
        let s = RttStats::from_ms(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.p50, s.p90, s.p99), (2.0, 3.0, 3.0));
        assert_eq!(s.mdev, (2.0f64 / 3.0).sqrt());
        assert!(RttStats::from_ms(&[]).is_none());
        assert!(RttStats::from_ms(&[f64::NAN]).is_none());
    }

    #[test]
    fn the_increase_is_between_medians() {
        let l = LatencyUnderLoad::new(
            ProbeMethod::IcmpRaw,
            Figures::round_trip(3, &[1.0, 2.0, 30.0], 0, None),
            Figures::round_trip(3, &[40.0, 50.0, 60.0], 0, None),
        );
        assert_eq!(l.increase_ms, Some(48.0));
        let none = LatencyUnderLoad::new(
            ProbeMethod::IcmpDatagram,
            Figures::round_trip(3, &[], 0, None),
            Figures::round_trip(1, &[1.0], 0, None),
        );
        assert_eq!(none.increase_ms, None);
    }
}
