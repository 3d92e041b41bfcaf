//! What the command line changes of a plan for one `campaign run`
//! (`--scale`, `--repeat`, `--max-runs`, `--endpoint`): applied when the
//! plan is read, and kept in the archive beside the plan's text as JSON,
//! so that the campaign's page shows the plan as written and the
//! overrides as overrides.

use crate::CampaignError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// A plan's `[quick]` table: the overrides `campaign run --quick` takes,
/// a desk run of the study's battery (shorter steps, fewer runs) where
/// the plan as written is a real one. What the command line gives wins.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quick {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_runs: Option<u64>,
}

/// A plan's overrides; the default changes nothing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Overrides {
    /// The plan's desk form (`--quick`): its `[quick]` table, and each
    /// step's `quick` keys.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub quick: bool,
    /// Multiplies every step's duration and the schedule (the plan's own
    /// `scale` otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<f64>,
    /// Runs every this long instead of the plan's schedule, as written
    /// (`PT40S`): not scaled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<String>,
    /// Stops after this many runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_runs: Option<u64>,
    /// Endpoints' addresses by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub endpoints: BTreeMap<String, String>,
}

impl Overrides {
    pub fn is_empty(&self) -> bool {
        *self == Overrides::default()
    }

    /// The JSON the archive keeps; none when nothing is overridden.
    pub fn to_json(&self) -> Option<String> {
        (!self.is_empty()).then(|| serde_json::to_string(self).unwrap_or_default())
    }

    /// Reads what the archive keeps (none: no overrides).
    pub fn from_json(json: Option<&str>) -> Result<Overrides, CampaignError> {
        match json {
            None => Ok(Overrides::default()),
            Some(j) => serde_json::from_str(j)
                .map_err(|e| crate::plan_where::bad(format!("overrides kept with the plan: {e}"))),
        }
    }

    /// These overrides with `quick`'s where these have none.
    pub fn with_quick(self, quick: &Quick) -> Overrides {
        Overrides {
            scale: self.scale.or(quick.scale),
            repeat: self.repeat.or_else(|| quick.repeat.clone()),
            max_runs: self.max_runs.or(quick.max_runs),
            ..self
        }
    }

    /// `--repeat` as a span, checked.
    pub(crate) fn repeat_span(&self) -> Result<Option<Duration>, CampaignError> {
        let Some(r) = &self.repeat else {
            return Ok(None);
        };
        let every = crate::schedule::parse_span("--repeat", r)?;
        if every < Duration::from_secs(1) {
            return Err(crate::plan_where::bad(format!(
                "--repeat {r}: at least 1 s"
            )));
        }
        Ok(Some(every))
    }

    /// One line for people: `scale 0.01, repeat PT40S, max_runs 3`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.quick {
            parts.push("quick".to_string());
        }
        if let Some(s) = self.scale {
            parts.push(format!("scale {s}"));
        }
        if let Some(r) = &self.repeat {
            parts.push(format!("repeat {r}"));
        }
        if let Some(n) = self.max_runs {
            parts.push(format!("max_runs {n}"));
        }
        for (name, address) in &self.endpoints {
            parts.push(format!("endpoint {name} = {address}"));
        }
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_go_to_json_and_back_and_none_is_no_json() {
        assert_eq!(Overrides::default().to_json(), None);
        let o = Overrides {
            scale: Some(0.01),
            repeat: Some("PT40S".into()),
            max_runs: Some(3),
            endpoints: BTreeMap::from([("B".into(), "10.0.0.2".into())]),
            ..Overrides::default()
        };
        let json = o.to_json().unwrap();
        assert_eq!(Overrides::from_json(Some(&json)).unwrap(), o);
        assert_eq!(
            o.describe(),
            "scale 0.01, repeat PT40S, max_runs 3, endpoint B = 10.0.0.2"
        );
        assert!(Overrides::from_json(Some("{\"speed\": 2}")).is_err());
    }

    #[test]
    fn the_quick_form_fills_what_the_command_line_left() {
        let quick = Quick {
            scale: Some(0.1),
            repeat: Some("PT30S".into()),
            max_runs: Some(1),
        };
        let given = Overrides {
            max_runs: Some(3),
            ..Overrides::default()
        };
        let o = given.with_quick(&quick);
        assert_eq!(
            (o.scale, o.repeat.as_deref(), o.max_runs),
            (Some(0.1), Some("PT30S"), Some(3))
        );
    }
}
