//! What an alert rule watches: any figure of the metric registry, by its
//! name or an alias, a route change, or a probe's readings.

use crate::pattern::Quantity;
use crate::rule::Worse;
use serde::Deserialize;

/// A metric an alert watches: any figure of the metric registry (the
/// archive indexes each), by its name or an alias (`rtt_ms`), a route
/// change, or a probe's readings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlertMetric {
    Figure(sonde_model::Metric),
    /// A trace that took another route than the trace before it on its
    /// path (1; 0 for one on the same route): bad above 0.5.
    PathChanged,
    /// A probe's readings (a router's link load polled over SNMP, a
    /// sensor's values): the rule's `reading` and `probe` say which; bad
    /// above or below, as the rule says.
    Reading,
}

impl AlertMetric {
    /// The metric named `s`: a registry name or alias (short names are
    /// for the command line), or `path_changed`.
    pub fn parse(s: &str) -> Option<AlertMetric> {
        if s == "path_changed" {
            return Some(AlertMetric::PathChanged);
        }
        if s == "reading" {
            return Some(AlertMetric::Reading);
        }
        sonde_model::Metric::ALL
            .into_iter()
            .find(|m| m.name() == s || m.info().aliases.contains(&s))
            .map(AlertMetric::Figure)
    }

    pub fn name(self) -> &'static str {
        match self {
            AlertMetric::Figure(m) => m.name(),
            AlertMetric::PathChanged => "path_changed",
            AlertMetric::Reading => "reading",
        }
    }

    /// Its entry in the metric registry (a route change is an event of a
    /// path, not a measured figure: none).
    pub fn registry(self) -> Option<sonde_model::Metric> {
        match self {
            AlertMetric::Figure(m) => Some(m),
            AlertMetric::PathChanged | AlertMetric::Reading => None,
        }
    }

    /// Which way it is bad, as the metric registry says (a route change:
    /// above).
    pub fn worse(self) -> Worse {
        match self.registry().map(|m| m.info().worse) {
            Some(sonde_model::Worse::Lower | sonde_model::Worse::Neither) => Worse::Below,
            Some(sonde_model::Worse::Higher) | None => Worse::Above,
        }
    }

    /// A value as a message shows it: rounded to the registry's
    /// precision; a route change as 1 or 0.
    pub fn shown(self, v: f64) -> String {
        match self {
            AlertMetric::Figure(m) => m.rounded(v),
            AlertMetric::PathChanged => format!("{v:.0}"),
            // As read, to the thousandth.
            AlertMetric::Reading => {
                let s = format!("{v:.3}");
                s.trim_end_matches('0').trim_end_matches('.').to_string()
            }
        }
    }

    /// The unit of a pattern over it (SmokePing's patterns compare loss
    /// in % and times in ms): from the registry's unit.
    pub(crate) fn quantity(self) -> Option<Quantity> {
        match self.registry().map(|m| m.unit()) {
            Some("%") => Some(Quantity::LossPct),
            Some("ms") => Some(Quantity::RttMs),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for AlertMetric {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        AlertMetric::parse(&s).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "'{s}' is not a metric: use one of {}, path_changed, reading",
                sonde_model::Metric::names()
            ))
        })
    }
}
