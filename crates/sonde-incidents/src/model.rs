//! An incident (AIRT's model, seed 003 §4.2): its type, state, status and
//! severity, the addresses involved with their role and owner, its
//! comments and the history of every change.
//!
//! The **state** says where handling is, in the team's own words (AIRT
//! lets a team define its states): free text, lowercase letters, digits,
//! `-` and `_`; an incident starts `reported`, and the usual ones are
//! `reported`, `confirmed`, `notified`, `resolved` and `false-positive`.
//! The **status** says whether anyone still has to act: `open`,
//! `stalled` (waiting on someone outside the team) or `closed`.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

/// The state every incident starts in.
pub const INITIAL_STATE: &str = "reported";

/// Why an incident, a constituency or a template cannot be taken; each
/// names the field and the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IncidentError {
    #[error("{field}: {reason}")]
    Invalid { field: String, reason: String },
    #[error("{what} {name} does not exist")]
    NotFound { what: &'static str, name: String },
    #[error("{what} {name} already exists")]
    Exists { what: &'static str, name: String },
    #[error("{0}")]
    Owners(#[from] crate::OwnersError),
}

pub(crate) fn invalid(field: impl Into<String>, reason: impl Into<String>) -> IncidentError {
    IncidentError::Invalid {
        field: field.into(),
        reason: reason.into(),
    }
}

macro_rules! word_enum {
    ($(#[$m:meta])* $name:ident, $what:literal, $($(#[$vm:meta])* $variant:ident = $word:literal),+) => {
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
            schemars::JsonSchema,
        )]
        #[serde(rename_all = "lowercase")]
        $(#[$m])*
        pub enum $name { $($(#[$vm])* $variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $word),+ }
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
        impl FromStr for $name {
            type Err = IncidentError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($word => Ok($name::$variant),)+
                    _ => Err(invalid($what, format!(
                        "'{s}' is not one of {}",
                        [$($word),+].join(", ")
                    ))),
                }
            }
        }
    };
}

word_enum!(
    /// How bad an incident is; `medium` unless said.
    #[derive(Default)]
    Severity, "severity",
    Low = "low", #[default] Medium = "medium", High = "high", Critical = "critical"
);
word_enum!(
    /// Whether anyone still has to act on an incident.
    #[derive(Default)]
    #[schemars(rename = "IncidentStatus")]
    Status, "status",
    #[default] Open = "open", Stalled = "stalled", Closed = "closed"
);
word_enum!(
    /// What an address did in an incident: it sent the traffic, or it
    /// was what the traffic went to (or the path that failed toward).
    Role, "role",
    Source = "source", Target = "target"
);

/// Checks a state's spelling: 1 to 40 of lowercase letters, digits, `-`
/// and `_`, starting with a letter.
pub fn check_state(field: &str, state: &str) -> Result<(), IncidentError> {
    let ok = (1..=40).contains(&state.len())
        && state.starts_with(|c: char| c.is_ascii_lowercase())
        && state
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(invalid(
            field,
            format!(
                "'{state}' is not a state (1 to 40 lowercase letters, digits, '-' or '_', \
                 starting with a letter)"
            ),
        ))
    }
}

/// Checks a line of text: not empty (unless `may_be_empty`), at most
/// `max` characters, no control characters but newlines and tabs when
/// `multiline`.
pub fn check_text(
    field: &str,
    text: &str,
    max: usize,
    multiline: bool,
) -> Result<(), IncidentError> {
    if text.trim().is_empty() {
        return Err(invalid(field, "empty"));
    }
    if text.chars().count() > max {
        return Err(invalid(field, format!("longer than {max} characters")));
    }
    let allowed = |c: char| !c.is_control() || (multiline && (c == '\n' || c == '\t' || c == '\r'));
    if !text.chars().all(allowed) {
        return Err(invalid(field, "holds control characters"));
    }
    Ok(())
}

/// An incident to open: what the alerts, an import and `sonde incident
/// open` hand the archive. Its owners are looked up when it is kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewIncident {
    /// Its type, e.g. `loss-high`, `scan`, `ddos` (AIRT's incident type).
    pub kind: String,
    pub severity: Severity,
    pub summary: String,
    pub addresses: Vec<(IpAddr, Role)>,
    /// Where it came from: `alert:RULE`, `import`, `cli`, `api`.
    pub source: String,
}

impl NewIncident {
    /// Checks its fields, naming the first that is wrong.
    pub fn validate(&self) -> Result<(), IncidentError> {
        check_kind("type", &self.kind)?;
        check_text("summary", &self.summary, 500, false)?;
        check_text("source", &self.source, 100, false)?;
        if self.addresses.len() > 256 {
            return Err(invalid("addresses", "more than 256"));
        }
        Ok(())
    }
}

/// Checks an incident type: 1 to 60 characters of letters, digits, `-`,
/// `_`, `.` and `:`.
pub fn check_kind(field: &str, kind: &str) -> Result<(), IncidentError> {
    let ok = (1..=60).contains(&kind.len())
        && kind
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.:".contains(c));
    if ok {
        Ok(())
    } else {
        Err(invalid(
            field,
            format!("'{kind}' is not a type (1 to 60 letters, digits, '-', '_', '.' or ':')"),
        ))
    }
}

/// An address of an incident, and who owns it (the constituency code,
/// found when the incident was kept; `None`: nobody's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IncidentAddress {
    pub address: IpAddr,
    pub role: Role,
    pub owner: Option<String>,
}

/// A comment on an incident.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "IncidentComment")]
pub struct Comment {
    pub author: String,
    pub text: String,
    pub at_ns: i64,
}

/// One change of an incident: what changed (`opened`, `state`,
/// `status`, `severity`, `comment`, `mail`), from what to what, by whom.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "IncidentHistory")]
pub struct HistoryEntry {
    pub at_ns: i64,
    pub actor: String,
    /// opened, state, status, severity, comment or mail.
    pub what: String,
    pub old: Option<String>,
    pub new: Option<String>,
}

/// An incident as kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Incident {
    pub id: i64,
    /// Its type, e.g. `loss-high`, `scan`, `ddos` (AIRT's incident type).
    #[serde(rename = "type")]
    pub kind: String,
    /// Free text: reported, confirmed, notified, resolved…
    pub state: String,
    pub status: Status,
    pub severity: Severity,
    pub summary: String,
    pub source: String,
    pub opened_ns: i64,
    pub updated_ns: i64,
    pub addresses: Vec<IncidentAddress>,
    /// Empty in a listing.
    #[serde(default)]
    pub comments: Vec<Comment>,
    /// Empty in a listing.
    #[serde(default)]
    pub history: Vec<HistoryEntry>,
}

impl Incident {
    /// The codes of the constituencies that own its addresses, each once,
    /// in order of first appearance.
    pub fn owners(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for a in &self.addresses {
            if let Some(o) = a.owner.as_deref() {
                if !out.contains(&o) {
                    out.push(o);
                }
            }
        }
        out
    }
}

/// A change asked of an incident: any of its state, status, severity.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IncidentChange {
    #[serde(default)]
    pub state: Option<String>,
    #[serde(default)]
    pub status: Option<Status>,
    #[serde(default)]
    pub severity: Option<Severity>,
}

impl IncidentChange {
    pub fn validate(&self) -> Result<(), IncidentError> {
        if let Some(s) = &self.state {
            check_state("state", s)?;
        }
        if self.state.is_none() && self.status.is_none() && self.severity.is_none() {
            return Err(invalid(
                "change",
                "nothing to change (give state, status or severity)",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_read_and_print_lowercase_and_bad_ones_are_named() {
        assert_eq!("high".parse::<Severity>().unwrap(), Severity::High);
        assert_eq!(Severity::default(), Severity::Medium);
        let s: Severity = serde_json::from_str("\"critical\"").unwrap();
        assert_eq!(s, Severity::Critical);
        assert_eq!(Status::Stalled.to_string(), "stalled");
        let e = "urgent".parse::<Severity>().unwrap_err().to_string();
        assert_eq!(
            e,
            "severity: 'urgent' is not one of low, medium, high, critical"
        );
        assert!("sender"
            .parse::<Role>()
            .unwrap_err()
            .to_string()
            .starts_with("role:"));
    }

    #[test]
    fn states_are_words() {
        assert!(check_state("state", "false-positive").is_ok());
        assert!(check_state("state", "Confirmed").is_err());
        assert!(check_state("state", "").is_err());
        assert!(check_state("state", "a b").is_err());
    }

    #[test]
    fn a_new_incident_names_its_bad_field() {
        let mut n = NewIncident {
            kind: "loss-high".into(),
            severity: Severity::High,
            summary: "loss over 5%".into(),
            addresses: vec![],
            source: "cli".into(),
        };
        assert!(n.validate().is_ok());
        n.kind = "loss high".into();
        assert!(n.validate().unwrap_err().to_string().starts_with("type:"));
        n.kind = "x".into();
        n.summary = " ".into();
        assert_eq!(n.validate().unwrap_err().to_string(), "summary: empty");
    }
}
