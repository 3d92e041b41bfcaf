//! The readings a rule on readings (`metric = "reading"`) watches: its
//! `reading` and `probe` keys, checked against what a reading's name can
//! be and against the keys that select tests' paths.

use crate::config::{AlertMetric, RuleConfig};

/// The readings a rule on readings watches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadingSelect {
    /// Every probe's, without one.
    pub probe: Option<String>,
    pub metric: String,
}

impl ReadingSelect {
    pub fn selects(&self, probe: &str, metric: &str) -> bool {
        metric == self.metric && self.probe.as_deref().is_none_or(|p| p == probe)
    }
}

impl RuleConfig {
    /// The readings a rule on readings watches: `reading` is needed, the
    /// keys that select paths of tests are refused (they would select
    /// nothing), and `reading` and `probe` go only with it.
    pub(crate) fn reading_select(&self) -> Result<Option<ReadingSelect>, (&'static str, String)> {
        let name = |key: &'static str, v: &str| {
            if sonde_readings::reading::valid_name(v) {
                Ok(())
            } else {
                Err((
                    key,
                    format!("'{v}' is not a reading's name (1 to 64 letters, digits, '.', '_', '-', ':')"),
                ))
            }
        };
        if self.metric != AlertMetric::Reading {
            for (key, given) in [("reading", &self.reading), ("probe", &self.probe)] {
                if given.is_some() {
                    return Err((key, "only with metric = \"reading\"".into()));
                }
            }
            return Ok(None);
        }
        for (key, given) in [
            ("test", &self.test),
            ("source", &self.source),
            ("target", &self.target),
            ("family", &self.family),
            ("direction", &self.direction),
            ("campaign", &self.campaign),
            ("step", &self.step),
        ] {
            if given.is_some() {
                return Err((
                    key,
                    "selects tests' paths, not readings: use probe and reading".into(),
                ));
            }
        }
        let metric = self.reading.clone().ok_or((
            "reading",
            "metric = \"reading\" needs the reading's name (reading = \"to_b.out\")".to_string(),
        ))?;
        name("reading", &metric)?;
        if let Some(p) = &self.probe {
            name("probe", p)?;
        }
        Ok(Some(ReadingSelect {
            probe: self.probe.clone(),
            metric,
        }))
    }
}
