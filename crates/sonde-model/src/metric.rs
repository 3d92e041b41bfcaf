//! The metric registry: every figure sonde summarises, judges, compares,
//! charts and alerts on, with the one name it is written under, the
//! short name the command line takes, how it is labelled, the unit it is
//! shown in and the scale from the unit it is kept in, and which way is
//! worse. Reports, `compare`, `results stats`, the portal's charts and
//! the alert rules read it here rather than each keeping its own list.

use crate::Figures;
use serde::{Deserialize, Serialize};

/// A figure of a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Receiver goodput (tcp, udp).
    ThroughputBps,
    /// Offered load (the sender's rate).
    SenderThroughputBps,
    LossPct,
    PdrPct,
    JitterMs,
    /// One-way delay, mean.
    DelayMs,
    /// RTT median (ping, or tcp/udp with latency probes).
    RttP50Ms,
    /// RTT mean.
    RttAvgMs,
    Retransmits,
}

/// Which way a metric gets worse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Worse {
    /// Loss, jitter, delay: more is worse.
    Higher,
    /// Goodput, PDR: less is worse.
    Lower,
    /// The offered load: neither (it is what was asked).
    Neither,
}

/// What the registry knows of a metric.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MetricInfo {
    /// As written in JSON, the archive's columns and `--metric`.
    pub name: &'static str,
    /// The short name `compare --metric` and a chart's title take.
    pub short: &'static str,
    /// As a table's column or a chart's axis names it.
    pub label: &'static str,
    /// The unit it is shown in.
    pub unit: &'static str,
    /// Shown value = kept value × scale (bit/s to Mbit/s: 1e-6).
    pub scale: f64,
    pub worse: Worse,
}

const fn info(
    name: &'static str,
    short: &'static str,
    label: &'static str,
    unit: &'static str,
    scale: f64,
    worse: Worse,
) -> MetricInfo {
    MetricInfo {
        name,
        short,
        label,
        unit,
        scale,
        worse,
    }
}

impl Metric {
    /// Every metric, in the order tables list them.
    pub const ALL: [Metric; 9] = [
        Metric::ThroughputBps,
        Metric::SenderThroughputBps,
        Metric::LossPct,
        Metric::PdrPct,
        Metric::JitterMs,
        Metric::DelayMs,
        Metric::RttP50Ms,
        Metric::RttAvgMs,
        Metric::Retransmits,
    ];

    /// The five every result is indexed and compared by: goodput, loss,
    /// PDR, jitter and the RTT median.
    pub const HEADLINE: [Metric; 5] = [
        Metric::ThroughputBps,
        Metric::LossPct,
        Metric::PdrPct,
        Metric::JitterMs,
        Metric::RttP50Ms,
    ];

    /// Its entry in the registry.
    pub const fn info(self) -> MetricInfo {
        use Worse::*;
        match self {
            Metric::ThroughputBps => info(
                "throughput_bps",
                "throughput",
                "throughput",
                "Mbit/s",
                1e-6,
                Lower,
            ),
            Metric::SenderThroughputBps => info(
                "sender_throughput_bps",
                "offered",
                "offered",
                "Mbit/s",
                1e-6,
                Neither,
            ),
            Metric::LossPct => info("loss_pct", "loss", "loss", "%", 1.0, Higher),
            Metric::PdrPct => info("pdr_pct", "pdr", "PDR", "%", 1.0, Lower),
            Metric::JitterMs => info("jitter_ms", "jitter", "jitter", "ms", 1.0, Higher),
            Metric::DelayMs => info("delay_ms", "delay", "one-way delay", "ms", 1.0, Higher),
            Metric::RttP50Ms => info("rtt_p50_ms", "rtt", "RTT", "ms", 1.0, Higher),
            Metric::RttAvgMs => info("rtt_avg_ms", "rtt_mean", "RTT mean", "ms", 1.0, Higher),
            Metric::Retransmits => info(
                "retransmits",
                "retransmits",
                "retransmits",
                "segments",
                1.0,
                Higher,
            ),
        }
    }

    /// The name as written in JSON and on the command line.
    pub const fn name(self) -> &'static str {
        self.info().name
    }

    /// The unit it is shown in.
    pub const fn unit(self) -> &'static str {
        self.info().unit
    }

    /// This figure in `f`, if measured, in the unit it is kept in.
    pub fn of(self, f: &Figures) -> Option<f64> {
        match self {
            Metric::ThroughputBps => f.throughput_bps.map(|v| v as f64),
            Metric::SenderThroughputBps => f.sender_throughput_bps.map(|v| v as f64),
            Metric::LossPct => f.loss_pct,
            Metric::PdrPct => f.pdr_pct,
            Metric::JitterMs => f.jitter_ms,
            Metric::DelayMs => f.delay.map(|d| d.avg_ms),
            Metric::RttP50Ms => f.rtt_ms.as_ref().map(|r| r.p50),
            Metric::RttAvgMs => f.rtt_ms.as_ref().map(|r| r.avg),
            Metric::Retransmits => f.retransmits.map(|v| v as f64),
        }
    }

    /// This figure in `f` in the unit it is shown in (goodput in Mbit/s).
    pub fn shown(self, f: &Figures) -> Option<f64> {
        self.of(f).map(|v| v * self.info().scale)
    }

    /// The metric named `s`: its name (`rtt_p50_ms`) or its short name
    /// (`rtt`).
    pub fn named(s: &str) -> Option<Metric> {
        Metric::ALL
            .into_iter()
            .find(|m| m.info().name == s || m.info().short == s)
    }

    /// `v` (in the unit it is kept in) as people read it: rounded to the
    /// figure's precision (bit/s and segments whole, % and ms to three
    /// decimals), trailing zeros dropped. JSON keeps the full value.
    pub fn rounded(self, v: f64) -> String {
        match self {
            Metric::ThroughputBps | Metric::SenderThroughputBps | Metric::Retransmits => {
                format!("{v:.0}")
            }
            _ => rounded(v),
        }
    }

    /// Whether `a` is worse than `b` for this metric.
    pub fn is_worse(self, a: f64, b: f64) -> bool {
        match self.info().worse {
            Worse::Higher => a > b,
            Worse::Lower => a < b,
            Worse::Neither => false,
        }
    }
}

/// A figure whose metric is not known, as people read it: to three
/// decimals at most, trailing zeros dropped (`56.52173913` → `56.522`,
/// `2.5` → `2.5`).
pub fn rounded(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

impl std::str::FromStr for Metric {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Metric::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Metric::ALL.iter().map(|m| m.name()).collect();
                format!("'{s}' is not a metric: use one of {}", names.join(", "))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_read_back() {
        for m in Metric::ALL {
            assert_eq!(Metric::named(m.info().name), Some(m));
            assert_eq!(Metric::named(m.info().short), Some(m));
            assert_eq!(m.name().parse::<Metric>(), Ok(m));
            let same = Metric::ALL
                .iter()
                .filter(|o| o.info().short == m.info().short || o.info().name == m.info().name)
                .count();
            assert_eq!(same, 1, "{m:?}");
        }
    }

    #[test]
    fn values_are_rounded_to_their_figures_precision() {
        assert_eq!(Metric::LossPct.rounded(56.52173913043478), "56.522");
        assert_eq!(Metric::LossPct.rounded(2.0), "2");
        assert_eq!(Metric::ThroughputBps.rounded(9_400_000.4), "9400000");
        assert_eq!(Metric::RttP50Ms.rounded(94.1804), "94.18");
        assert_eq!(rounded(-0.0001), "0");
    }

    #[test]
    fn goodput_is_shown_in_mbit_and_worse_lower() {
        let f = Figures {
            throughput_bps: Some(9_400_000),
            loss_pct: Some(2.0),
            ..Figures::default()
        };
        assert_eq!(Metric::ThroughputBps.shown(&f), Some(9.4));
        assert!(Metric::ThroughputBps.is_worse(8.0, 9.0));
        assert!(Metric::LossPct.is_worse(3.0, 2.0));
        assert!(!Metric::SenderThroughputBps.is_worse(1.0, 2.0));
    }
}
