//! Policers: a token bucket per policer that passes conforming packets
//! and drops or remarks the rest, optionally "punishing" a flow that
//! keeps exceeding (seed 000 §3.1.2: above 88 Mbit/s only 5 % got through).

use super::random::Rng;
use serde::{Deserialize, Serialize};

/// What happens to a packet beyond the policer's rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Exceed {
    Drop,
    /// Passed, with this DSCP.
    Remark(u8),
}

/// One policer.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Policer {
    /// Token rate, in bits of IP packet per second.
    pub rate_bps: u64,
    /// Bucket depth in bytes.
    pub burst: u64,
    /// Only packets with this DSCP are policed (`None`: all IP packets).
    pub dscp: Option<u8>,
    /// Only packets of this IP protocol (17 UDP, 6 TCP; `None`: all).
    #[serde(default)]
    pub protocol: Option<u8>,
    pub exceed: Exceed,
    /// Punishing limiter: while the offered traffic exceeds the rate, only
    /// this fraction of it passes (the rest gets `exceed`). Every offered
    /// packet is charged to the bucket, which may run up to one burst into
    /// debt, so the flow is let go once it has stayed under the rate for
    /// about (burst + debt) / rate.
    pub punish: Option<f64>,
}

/// The verdict on one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Exceed(Exceed),
}

/// A policer's bucket over time (times in ns since any fixed origin).
#[derive(Debug, Clone)]
pub struct Bucket {
    pub policer: Policer,
    tokens: f64,
    last_ns: u64,
}

impl Bucket {
    pub fn new(policer: Policer) -> Self {
        Self {
            policer,
            tokens: policer.burst as f64,
            last_ns: 0,
        }
    }

    /// Whether this policer looks at an IP packet with this DSCP and
    /// protocol (`None`: not IP).
    pub fn matches(&self, dscp: Option<u8>, protocol: Option<u8>) -> bool {
        let p = &self.policer;
        dscp.is_some()
            && (p.dscp.is_none() || p.dscp == dscp)
            && (p.protocol.is_none() || p.protocol == protocol)
    }

    /// Charges `len` bytes arriving at `now_ns`.
    pub fn police(&mut self, len: usize, now_ns: u64, rng: &mut Rng) -> Verdict {
        let p = &self.policer;
        let elapsed = now_ns.saturating_sub(self.last_ns) as f64 / 1e9;
        self.last_ns = self.last_ns.max(now_ns);
        let burst = p.burst as f64;
        self.tokens = (self.tokens + elapsed * p.rate_bps as f64 / 8.0).min(burst);
        let len = len as f64;
        let conforms = self.tokens >= len;
        match p.punish {
            None if conforms => {
                self.tokens -= len;
                Verdict::Pass
            }
            None => Verdict::Exceed(p.exceed),
            Some(keep) => {
                self.tokens = (self.tokens - len).max(-burst);
                if conforms || rng.chance(keep) {
                    Verdict::Pass
                } else {
                    Verdict::Exceed(p.exceed)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Offers `rate_bps` of `size`-byte packets for `secs`; returns the
    /// fraction passed.
    fn offer(policer: Policer, rate_bps: f64, size: usize, secs: f64) -> f64 {
        let mut b = Bucket::new(policer);
        let mut rng = Rng::new(5);
        let gap_ns = size as f64 * 8.0 / rate_bps * 1e9;
        let n = (secs * 1e9 / gap_ns) as u64;
        let passed = (0..n)
            .filter(|i| b.police(size, (*i as f64 * gap_ns) as u64, &mut rng) == Verdict::Pass)
            .count();
        passed as f64 / n as f64
    }

    const EF_5PCT: Policer = Policer {
        rate_bps: 7_750_000,
        burst: 15_000,
        dscp: Some(46),
        protocol: None,
        exceed: Exceed::Drop,
        punish: None,
    };

    #[test]
    fn under_the_rate_everything_passes() {
        assert_eq!(offer(EF_5PCT, 7_000_000.0, 1448, 10.0), 1.0);
    }

    #[test]
    fn above_the_rate_the_excess_is_cut() {
        // 10 Mbit/s offered to 7.75: 77.5 % passes, give or take the burst.
        let passed = offer(EF_5PCT, 10_000_000.0, 1448, 10.0);
        assert!((passed - 0.775).abs() < 0.005, "{passed}");
    }

    #[test]
    fn a_punishing_limiter_cuts_to_its_fraction() {
        let limiter = Policer {
            rate_bps: 88_000_000,
            burst: 110_000,
            dscp: None,
            protocol: Some(17),
            exceed: Exceed::Drop,
            punish: Some(0.05),
        };
        assert_eq!(offer(limiter, 80_000_000.0, 1448, 2.0), 1.0);
        // At 92 Mbit/s everything passes until the full bucket has drained
        // at (92 - 88) / 8 bytes per µs, 0.22 s; then 5 %.
        let passed = offer(limiter, 92_000_000.0, 1448, 5.0);
        let drain = 110_000.0 / (4e6 / 8.0);
        let expected = (drain + 0.05 * (5.0 - drain)) / 5.0;
        assert!((passed - expected).abs() < 0.005, "{passed} vs {expected}");
    }

    #[test]
    fn a_policer_matches_its_dscp_protocol_and_ip_only() {
        let b = Bucket::new(EF_5PCT);
        assert!(b.matches(Some(46), Some(6)));
        assert!(!b.matches(Some(0), Some(6)));
        assert!(!b.matches(None, None));
        let all = Bucket::new(Policer {
            dscp: None,
            ..EF_5PCT
        });
        assert!(all.matches(Some(0), None) && !all.matches(None, None));
        let udp = Bucket::new(Policer {
            dscp: None,
            protocol: Some(17),
            ..EF_5PCT
        });
        assert!(udp.matches(Some(0), Some(17)) && !udp.matches(Some(0), Some(6)));
    }
}
