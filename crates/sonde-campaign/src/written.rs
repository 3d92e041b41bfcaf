//! A plan as written, before it is checked: its top level typed, each
//! step the table of keys `sonde run` reads plus the step's own. Every
//! crate that reads or writes a plan's text goes through it: the plan
//! reader ([`Plan::parse`](crate::Plan::parse)), a mesh plan's shares
//! (which are plans written again), and the portal's redacted view.

use crate::overrides::Quick;
use crate::plan::Endpoint;
use crate::schedule::ScheduleFile;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One step as written: a test's or a method's spec in `sonde run`'s
/// spelling with the step's keys (`name`, `from`, `to`, `labels`,
/// `resource`, `quick`). It stays a table here: which keys it may have
/// depends on its `test` or `method`, which the plan reader checks.
pub type WrittenStep = toml::Table;

/// The plan file's keys.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WrittenPlan {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Every step's duration, ping count, and the schedule's times,
    /// multiplied by this (e.g. 1/30: 5 min steps hourly become 10 s
    /// steps every 2 min).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quick: Option<Quick>,
    #[serde(rename = "endpoint", default, skip_serializing_if = "Vec::is_empty")]
    pub endpoints: Vec<Endpoint>,
    #[serde(rename = "step", default)]
    pub steps: Vec<WrittenStep>,
    pub schedule: ScheduleFile,
    /// A mesh plan's `[mesh]` table (who measures whom), read by
    /// sonde-mesh; a campaign plan has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mesh: Option<toml::Table>,
}

impl WrittenPlan {
    /// Reads the keys of a plan's text; the message (one line) has the
    /// TOML mistake's line and key.
    pub fn read(text: &str) -> Result<Self, String> {
        toml::from_str(text).map_err(|e| e.to_string().trim_end().replace('\n', " "))
    }

    /// The plan as TOML text again (comments are not kept).
    pub fn to_toml(&self) -> String {
        // Every field serializes as TOML: strings, numbers, tables and
        // arrays of tables (no None left in, no non-string keys).
        toml::to_string(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_written_again_reads_as_the_same_plan() {
        let text = "name = \"p\"\ndescription = \"d\"\nscale = 0.5\n\
                    [labels]\nstudy = \"000\"\n[quick]\nmax_runs = 2\n\
                    [schedule]\nrepeat = \"PT1H\"\nslip = \"PT1M\"\n\
                    [[endpoint]]\nname = \"a\"\naddress = \"2001:db8::1\"\nport = 5301\n\
                    [[step]]\ntest = \"tcp\"\ntime_s = 5\nquick = { time_s = 1 }\n";
        let plan = WrittenPlan::read(text).unwrap();
        assert_eq!(plan.steps[0]["test"].as_str(), Some("tcp"));
        assert_eq!(plan.endpoints[0].port, Some(5301));
        let again = WrittenPlan::read(&plan.to_toml()).unwrap();
        assert_eq!(again, plan, "{}", plan.to_toml());
        let a = crate::Plan::parse(text, &crate::Overrides::default()).unwrap();
        let b = crate::Plan::parse(&plan.to_toml(), &crate::Overrides::default()).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn an_unknown_key_is_named_with_its_line() {
        let e = WrittenPlan::read("name = \"p\"\nshedule = 1\n").unwrap_err();
        assert!(e.contains("line 2") && e.contains("shedule"), "{e}");
    }

    #[test]
    fn a_mesh_plan_is_not_taken_for_a_campaign() {
        let text = "name = \"m\"\n[schedule]\nrepeat = \"PT1H\"\n[mesh]\ngroup = \"all-pairs\"\n\
                    [[step]]\ntest = \"ping\"\n";
        assert!(WrittenPlan::read(text).unwrap().mesh.is_some());
        let e = crate::Plan::parse(text, &crate::Overrides::default()).unwrap_err();
        assert!(e.to_string().contains("[mesh]: a mesh plan"), "{e}");
    }
}
