//! The metric registry: every figure sonde summarises, judges, compares,
//! charts and alerts on, with the one name it is written under, the
//! short name the command line takes, how it is labelled, the unit it is
//! shown in and the scale from the unit it is kept in, its precision,
//! which way is worse and which tests measure it. The archive's index,
//! its queries, the alert rules, `results stats`, `compare`, reports, the
//! API (`GET /api/v1/metrics`) and the portal read it here rather than
//! each keeping its own list: a new figure is its computation, its field
//! in [`Figures`] and one entry here.

use crate::{Figures, TestKind};
use serde::{Deserialize, Serialize};

/// A figure of a result.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
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
    /// The longest run of consecutive packets lost (RFC 3357's loss
    /// period, its length in packets).
    LossBurstMax,
}

/// Which way a metric gets worse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MetricInfo {
    /// As written in JSON, the archive's columns and `--metric`.
    pub name: &'static str,
    /// The short name `compare --metric` and a chart's title take.
    pub short: &'static str,
    /// Other names the command line, the API and alert rules take (the
    /// RTT median is `rtt_ms` there).
    pub aliases: &'static [&'static str],
    /// As a table's column or a chart's axis names it.
    pub label: &'static str,
    /// The unit it is shown in.
    pub unit: &'static str,
    /// Shown value = kept value × scale (bit/s to Mbit/s: 1e-6).
    pub scale: f64,
    /// Decimals a value kept in its own unit is printed with for people
    /// (bit/s and counts 0; %, ms 3); JSON keeps the full value.
    pub decimals: usize,
    pub worse: Worse,
    /// The tests whose results have it.
    pub tests: &'static [TestKind],
    /// What it is, in a few words (`/metrics`' help, the API).
    pub about: &'static str,
    /// Its base unit, as OpenMetrics names series by it (`seconds`,
    /// `ratio`, `bytes_per_second`), and base value = kept value × this.
    pub base: (&'static str, f64),
}

impl MetricInfo {
    /// The `/metrics` gauge of a path's latest value:
    /// `sonde_{short}_{base unit}`.
    pub fn gauge(&self) -> String {
        format!("sonde_{}_{}", self.short, self.base.0)
    }
}

const TCP: TestKind = TestKind::Tcp;
const UDP: TestKind = TestKind::Udp;
const PING: TestKind = TestKind::Ping;
const HTTP: TestKind = TestKind::Http;

/// An entry: `(name, short, label)`, `(unit, scale, decimals)`, which
/// way is worse, the tests, and `(about, (base unit, factor))`.
const fn info(
    (name, short, label): (&'static str, &'static str, &'static str),
    (unit, scale, decimals): (&'static str, f64, usize),
    worse: Worse,
    tests: &'static [TestKind],
    (about, base): (&'static str, (&'static str, f64)),
) -> MetricInfo {
    MetricInfo {
        name,
        short,
        aliases: &[],
        label,
        unit,
        scale,
        decimals,
        worse,
        tests,
        about,
        base,
    }
}

impl Metric {
    /// Every metric, in the order tables list them.
    pub const ALL: [Metric; 10] = [
        Metric::ThroughputBps,
        Metric::SenderThroughputBps,
        Metric::LossPct,
        Metric::PdrPct,
        Metric::JitterMs,
        Metric::DelayMs,
        Metric::RttP50Ms,
        Metric::RttAvgMs,
        Metric::Retransmits,
        Metric::LossBurstMax,
    ];

    /// The metrics `compare` and the API's charts offer, in that order:
    /// goodput, loss, PDR, jitter, the RTT median and the longest loss
    /// burst (every metric is indexed; these are the ones a path is
    /// judged by).
    pub const HEADLINE: [Metric; 6] = [
        Metric::ThroughputBps,
        Metric::LossPct,
        Metric::PdrPct,
        Metric::JitterMs,
        Metric::RttP50Ms,
        Metric::LossBurstMax,
    ];

    /// Its entry in the registry.
    pub const fn info(self) -> MetricInfo {
        use Worse::*;
        const MBIT: (&str, f64, usize) = ("Mbit/s", 1e-6, 0);
        const PCT: (&str, f64, usize) = ("%", 1.0, 3);
        const MS: (&str, f64, usize) = ("ms", 1.0, 3);
        const BYTES_S: (&str, f64) = ("bytes_per_second", 1.0 / 8.0);
        const RATIO: (&str, f64) = ("ratio", 0.01);
        const SECONDS: (&str, f64) = ("seconds", 1e-3);
        match self {
            Metric::ThroughputBps => info(
                ("throughput_bps", "throughput", "throughput"),
                MBIT,
                Lower,
                &[TCP, UDP, HTTP],
                ("Receiver goodput", BYTES_S),
            ),
            Metric::SenderThroughputBps => info(
                ("sender_throughput_bps", "offered", "offered"),
                MBIT,
                Neither,
                &[TCP, UDP],
                ("What the sender offered", BYTES_S),
            ),
            Metric::LossPct => info(
                ("loss_pct", "loss", "loss"),
                PCT,
                Higher,
                &[UDP, PING, HTTP],
                ("Packets lost over packets sent", RATIO),
            ),
            Metric::PdrPct => info(
                ("pdr_pct", "pdr", "PDR"),
                PCT,
                Lower,
                &[UDP, PING],
                ("Packets received over packets sent", RATIO),
            ),
            Metric::JitterMs => info(
                ("jitter_ms", "jitter", "jitter"),
                MS,
                Higher,
                &[UDP],
                ("RFC 3550 jitter", SECONDS),
            ),
            Metric::DelayMs => info(
                ("delay_ms", "delay", "one-way delay"),
                MS,
                Higher,
                &[UDP],
                ("Mean one-way delay", SECONDS),
            ),
            Metric::RttP50Ms => MetricInfo {
                aliases: &["rtt_ms"],
                ..info(
                    ("rtt_p50_ms", "rtt", "RTT"),
                    MS,
                    Higher,
                    &[PING, TCP, UDP, HTTP],
                    ("Median round-trip time", SECONDS),
                )
            },
            Metric::RttAvgMs => info(
                ("rtt_avg_ms", "rtt_mean", "RTT mean"),
                MS,
                Higher,
                &[PING, TCP, UDP, HTTP],
                ("Mean round-trip time", SECONDS),
            ),
            Metric::Retransmits => info(
                ("retransmits", "retransmits", "retransmits"),
                ("segments", 1.0, 0),
                Higher,
                &[TCP],
                ("TCP segments retransmitted", ("segments", 1.0)),
            ),
            Metric::LossBurstMax => info(
                ("loss_burst_max", "burst", "longest loss burst"),
                ("packets", 1.0, 0),
                Higher,
                &[UDP],
                ("The longest run of packets lost in a row", ("packets", 1.0)),
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
            Metric::LossBurstMax => f.loss_burst_max.map(|v| v as f64),
        }
    }

    /// This figure in `f` in the unit it is shown in (goodput in Mbit/s).
    pub fn shown(self, f: &Figures) -> Option<f64> {
        self.of(f).map(|v| v * self.info().scale)
    }

    /// The metric named `s`: its name (`rtt_p50_ms`), its short name
    /// (`rtt`) or an alias (`rtt_ms`).
    pub fn named(s: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| {
            let i = m.info();
            i.name == s || i.short == s || i.aliases.contains(&s)
        })
    }

    /// Every name the metrics are taken by, for an error that lists them
    /// (`rtt_p50_ms (or rtt_ms)`).
    pub fn names() -> String {
        let names: Vec<String> = Metric::ALL
            .iter()
            .map(|m| match m.info().aliases {
                [] => m.name().to_string(),
                a => format!("{} (or {})", m.name(), a.join(", ")),
            })
            .collect();
        names.join(", ")
    }

    /// Whether results of `test` have it.
    pub fn measured_by(self, test: TestKind) -> bool {
        self.info().tests.contains(&test)
    }

    /// `v` (in the unit it is kept in) as people read it: rounded to the
    /// figure's precision (bit/s and segments whole, % and ms to three
    /// decimals), trailing zeros dropped. JSON keeps the full value.
    pub fn rounded(self, v: f64) -> String {
        match self.info().decimals {
            0 => format!("{v:.0}"),
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
            .ok_or_else(|| format!("'{s}' is not a metric: use one of {}", Metric::names()))
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
            let every = |o: &Metric| {
                let i = o.info();
                let mut v = vec![i.name, i.short];
                v.extend(i.aliases);
                v
            };
            for name in every(&m) {
                let same = Metric::ALL
                    .iter()
                    .filter(|o| every(o).contains(&name))
                    .count();
                assert_eq!(same, 1, "{m:?}: {name}");
            }
            assert!(!m.info().tests.is_empty(), "{m:?} is measured by some test");
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
