//! Where a plan's mistake is: a plan's rules are checked after the TOML is
//! read, and each error says which step, endpoint or schedule key it is
//! about ([`PlanPlace`]); this finds that key in the text, so that the
//! error starts `line 14:` as a TOML error does.

use crate::CampaignError;
use sonde_model::toml_where::{line_of, Step};
use std::fmt;

/// What a plan's mistake is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanPlace {
    /// The plan as a whole, or what the command line laid over it.
    Plan,
    /// `[[step]]` number `n` (from 1), at `key` (dotted) if it names one.
    Step { n: usize, key: Option<String> },
    /// The `[[endpoint]]` named `name`, at `key` if it names one.
    Endpoint { name: String, key: Option<String> },
    /// `[schedule]`, at `key` if it names one.
    Schedule { key: Option<String> },
}

impl fmt::Display for PlanPlace {
    /// What the message starts with (the key is part of the message).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlanPlace::Plan => Ok(()),
            PlanPlace::Step { n, .. } => write!(f, "step {n}: "),
            PlanPlace::Endpoint { name, .. } => write!(f, "endpoint {name}: "),
            PlanPlace::Schedule { .. } => f.write_str("schedule: "),
        }
    }
}

impl PlanPlace {
    /// Its line in `text`, when that can be found.
    fn line(&self, text: &str) -> Option<usize> {
        let (mut path, key) = match self {
            PlanPlace::Plan => return None,
            PlanPlace::Step { n, key } => {
                (vec![Step::Key("step"), Step::Index(n.checked_sub(1)?)], key)
            }
            PlanPlace::Endpoint { name, key } => {
                (vec![Step::Key("endpoint"), Step::Named(name)], key)
            }
            PlanPlace::Schedule { key } => (vec![Step::Key("schedule")], key),
        };
        if let Some(k) = key {
            path.extend(k.split('.').map(Step::Key));
        }
        line_of(text, &path)
    }
}

/// A mistake about the plan as a whole.
pub(crate) fn bad(message: impl Into<String>) -> CampaignError {
    at(PlanPlace::Plan, message)
}

/// A mistake at `place`.
pub(crate) fn at(place: PlanPlace, message: impl Into<String>) -> CampaignError {
    CampaignError::Plan {
        place,
        line: None,
        message: message.into(),
    }
}

/// A mistake in step `n`, at `key` if it is about one (the message says
/// it too).
pub(crate) fn in_step(n: usize, key: Option<&str>, message: impl Into<String>) -> CampaignError {
    at(
        PlanPlace::Step {
            n,
            key: key.map(str::to_string),
        },
        message,
    )
}

/// `e` with the line of what it is about, when that can be found.
pub(crate) fn located(e: CampaignError, text: &str) -> CampaignError {
    match e {
        CampaignError::Plan {
            place,
            line: None,
            message,
        } => CampaignError::Plan {
            line: place.line(text),
            place,
            message,
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = "name = \"p\"\n[schedule]\nrepeat = \"PT1H\"\nslip = \"soon\"\n\
                        [[endpoint]]\nname = \"A\"\naddress = \"a\"\n\
                        [[endpoint]]\nname = \"B\"\naddress = \"b:99999\"\n\
                        [[step]]\ntest = \"ping\"\n\
                        [[step]]\ntest = \"tcp\"\ntime_s = \"soon\"\n";

    fn shown(place: PlanPlace, message: &str) -> String {
        located(at(place, message), PLAN).to_string()
    }

    #[test]
    fn a_plans_mistake_is_given_the_line_of_what_it_names() {
        assert_eq!(
            shown(
                PlanPlace::Step {
                    n: 2,
                    key: Some("time_s".into())
                },
                "time_s: 'soon' is not a duration"
            ),
            "plan: line 15: step 2: time_s: 'soon' is not a duration"
        );
        assert_eq!(
            shown(
                PlanPlace::Endpoint {
                    name: "B".into(),
                    key: Some("address".into())
                },
                "address 'b:99999': port 99999 is none"
            ),
            "plan: line 10: endpoint B: address 'b:99999': port 99999 is none"
        );
        assert_eq!(
            shown(
                PlanPlace::Schedule {
                    key: Some("slip".into())
                },
                "slip 'soon': not a span"
            ),
            "plan: line 4: schedule: slip 'soon': not a span"
        );
        // A step without a key: the step's own line.
        let e = shown(PlanPlace::Step { n: 1, key: None }, "say what it runs");
        assert!(e.starts_with("plan: line 1"), "{e}");
        // Nothing it can place: as it was.
        assert_eq!(shown(PlanPlace::Plan, "no [[step]]"), "plan: no [[step]]");
    }
}
