//! [`Refused`]: why the gate turned a request away — the rule, the value
//! at fault and where it is in the spec, and what was asked.

use super::Origin;
use sonde_wire::{Limit, Refusal};

/// A request the gate did not let through.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refused {
    /// The spec breaks its own rules.
    #[error("invalid spec: {at}: {detail}")]
    Invalid { at: String, detail: String },
    /// A field names a file on the agent, from a request that may not.
    #[error(
        "{at}: '{path}' names a file on this agent, and a request from {origin} may not \
         (rule: no_files; key material for remote requests is named in the agent's config)"
    )]
    File {
        origin: Origin,
        at: String,
        path: String,
    },
    /// What the request runs is not for this origin at all.
    #[error("{at}: {what} is not run for a request from {origin} (rule: not_permitted)")]
    NotPermitted {
        origin: Origin,
        at: String,
        what: String,
    },
    /// Over one of the limits, for the whole request or one of its tests.
    #[error("{at}: {refusal}")]
    Limit { at: String, refusal: Refusal },
    /// Test traffic toward a target that did not agree to it.
    #[error(
        "{at}: {target} is not a target this agent may aim {kind} at for a request \
         from {origin} (rule: consent; allowed by {allowed_by})"
    )]
    Consent {
        origin: Origin,
        at: String,
        kind: &'static str,
        target: String,
        /// The config key that would allow it.
        allowed_by: &'static str,
    },
    /// Every slot is taken.
    #[error("{0}")]
    Busy(Refusal),
}

impl Refused {
    /// The rule's name, as the API, the audit log and `/metrics` give it:
    /// a limit's config key, or `no_files`, `consent`, `not_permitted`,
    /// `invalid_spec`.
    pub fn rule(&self) -> String {
        match self {
            Refused::Invalid { .. } => "invalid_spec".into(),
            Refused::File { .. } => "no_files".into(),
            Refused::NotPermitted { .. } => "not_permitted".into(),
            Refused::Limit { refusal, .. } | Refused::Busy(refusal) => {
                sonde_server::counters::refusal_reason(refusal)
            }
            Refused::Consent { .. } => "consent".into(),
        }
    }

    /// Where in the spec (a JSON pointer; `/` the whole request).
    pub fn at(&self) -> &str {
        match self {
            Refused::Invalid { at, .. }
            | Refused::File { at, .. }
            | Refused::NotPermitted { at, .. }
            | Refused::Limit { at, .. }
            | Refused::Consent { at, .. } => at,
            Refused::Busy(_) => "/",
        }
    }

    /// The control protocol's refusal closest to this one (the audit log
    /// and the counters speak it).
    pub fn to_wire(&self) -> Refusal {
        match self {
            Refused::Limit { refusal, .. } | Refused::Busy(refusal) => refusal.clone(),
            Refused::Invalid { at, detail } => Refusal::InvalidSpec {
                field: at.clone(),
                detail: detail.clone(),
            },
            other => Refusal::LimitExceeded {
                limit: Limit::Other(other.rule()),
                value: "refused".into(),
                requested: other.to_string(),
            },
        }
    }

    pub(crate) fn limit(at: &str, limit: Limit, value: String, requested: String) -> Refused {
        Refused::Limit {
            at: at.to_string(),
            refusal: Refusal::LimitExceeded {
                limit,
                value,
                requested,
            },
        }
    }
}
