//! [`RunError`]: why a run gave no result, by kind, so that a scheduler
//! can act on it (retry later when busy, alert when unreachable, fix the
//! plan when refused by a limit).

use sonde_engine::EngineError;
use sonde_model::SpecError;
use sonde_wire::{Limit, Refusal};
use std::path::PathBuf;

/// Why a run gave no result.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The spec breaks a rule (a usage error: fix the request).
    #[error("invalid test: {0}")]
    Invalid(#[from] SpecError),
    /// A key file named in the spec cannot be used (a usage error).
    #[error("key file {}: {reason}", path.display())]
    KeyFile { path: PathBuf, reason: String },
    /// The server refused because the test exceeds one of its limits.
    #[error("the server refused the test: {limit} is {value} on this server (asked: {requested})")]
    Refused {
        limit: Limit,
        value: String,
        requested: String,
    },
    /// The server refused for another reason: who may connect, the
    /// protocol version, its own check of the spec, what it has.
    #[error("the server refused the test: {0}")]
    Denied(Refusal),
    /// This agent's own gate refused the test (a request from elsewhere
    /// than the command line: its origin's rules, limits, consent).
    #[error("refused by this agent: {0}")]
    Gate(String),
    /// The server runs as many tests as it may: try again later.
    #[error("{0}")]
    PeerBusy(String),
    /// The server cannot be resolved or connected to.
    #[error("{0}")]
    Unreachable(EngineError),
    /// The HTTP benchmark could not reach or use its target.
    #[error("{0}")]
    Http(#[from] sonde_http_load::HttpLoadError),
    /// The spec asks for something this host or the peer cannot do.
    #[error("{0}")]
    Unsupported(String),
    /// Stopped before anything was measured.
    #[error("interrupted before the test began")]
    Interrupted,
    /// The peer broke the protocol, timed out or aborted.
    #[error("{0}")]
    Protocol(EngineError),
    /// This host failed: a socket or a thread it could not have.
    #[error("internal error: {0}")]
    Internal(EngineError),
    /// A third-party test's agent ran it and it gave no result: the
    /// agent's error, of the kind it named (one of [`RunError::kind`]'s).
    #[error("third-party agent {agent}: {message}")]
    ThirdParty {
        agent: String,
        kind: &'static str,
        message: String,
    },
}

impl RunError {
    /// Whether the request itself is at fault (exit code 2 on the
    /// command line).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            RunError::Invalid(_)
                | RunError::KeyFile { .. }
                | RunError::Gate(_)
                | RunError::ThirdParty {
                    kind: "invalid",
                    ..
                }
        )
    }

    /// The kind of failure as one word, for machine readers (the `error`
    /// object of `-J` output, docs/result-format.md): `invalid`,
    /// `key_file`, `refused`, `denied`, `busy`, `unreachable`,
    /// `unsupported`, `interrupted`, `protocol`, `internal`.
    pub fn kind(&self) -> &'static str {
        match self {
            RunError::Invalid(_) => "invalid",
            RunError::KeyFile { .. } => "key_file",
            RunError::Refused { .. } | RunError::Gate(_) => "refused",
            RunError::Denied(_) => "denied",
            RunError::PeerBusy(_) => "busy",
            RunError::Unreachable(_) | RunError::Http(_) => "unreachable",
            RunError::Unsupported(_) => "unsupported",
            RunError::Interrupted => "interrupted",
            RunError::Protocol(_) => "protocol",
            RunError::Internal(_) => "internal",
            RunError::ThirdParty { kind, .. } => kind,
        }
    }

    /// The kind named `name` (as [`RunError::kind`] gives it), for an
    /// error relayed by a third-party agent; an unknown name is `protocol`.
    pub fn kind_named(name: &str) -> &'static str {
        const KINDS: [&str; 10] = [
            "invalid",
            "key_file",
            "refused",
            "denied",
            "busy",
            "unreachable",
            "unsupported",
            "interrupted",
            "protocol",
            "internal",
        ];
        KINDS.into_iter().find(|k| *k == name).unwrap_or("protocol")
    }
}

impl From<EngineError> for RunError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::Resolve { .. }
            | EngineError::NoAddress { .. }
            | EngineError::Connect { .. } => RunError::Unreachable(e),
            EngineError::Refused(Refusal::LimitExceeded {
                limit,
                value,
                requested,
            }) => RunError::Refused {
                limit,
                value,
                requested,
            },
            EngineError::Refused(r @ Refusal::Busy { .. }) => RunError::PeerBusy(r.to_string()),
            EngineError::Refused(r) => RunError::Denied(r),
            EngineError::PeerBusy => RunError::PeerBusy(e.to_string()),
            EngineError::Unavailable(what) => RunError::Unsupported(what),
            EngineError::SocketOption { .. }
            | EngineError::NoInterface { .. }
            | EngineError::Bind { .. }
            | EngineError::SourceFamily { .. } => RunError::Unsupported(e.to_string()),
            // Not allowed here (an ICMP socket without root or
            // ping_group_range) is something this host cannot do.
            EngineError::Io { ref source, .. }
                if source.kind() == std::io::ErrorKind::PermissionDenied =>
            {
                RunError::Unsupported(e.to_string())
            }
            EngineError::Io { .. } => RunError::Internal(e),
            other => RunError::Protocol(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_refusal_keeps_its_limit_value_and_request() {
        let e = RunError::from(EngineError::Refused(Refusal::LimitExceeded {
            limit: Limit::MaxDuration,
            value: "5m".into(),
            requested: "10m".into(),
        }));
        match &e {
            RunError::Refused {
                limit,
                value,
                requested,
            } => assert_eq!(
                (limit, value.as_str(), requested.as_str()),
                (&Limit::MaxDuration, "5m", "10m")
            ),
            other => panic!("{other:?}"),
        }
        assert!(!e.is_usage());
    }

    #[test]
    fn busy_servers_of_both_kinds_are_peer_busy() {
        let sonde = RunError::from(EngineError::Refused(Refusal::Busy {
            max_concurrent_tests: 4,
        }));
        assert!(matches!(sonde, RunError::PeerBusy(_)), "{sonde:?}");
        assert!(matches!(
            RunError::from(EngineError::PeerBusy),
            RunError::PeerBusy(_)
        ));
    }

    #[test]
    fn every_kind_is_one_the_error_schema_names() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/schema/error-v3.schema.json"
        );
        let schema: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let documented = &schema["$defs"]["FailureKind"]["enum"];
        let every = [
            RunError::Invalid(SpecError {
                field: "time_s",
                reason: "0".into(),
            }),
            RunError::KeyFile {
                path: "k".into(),
                reason: "missing".into(),
            },
            RunError::Refused {
                limit: Limit::MaxDuration,
                value: "5m".into(),
                requested: "10m".into(),
            },
            RunError::Denied(Refusal::Busy {
                max_concurrent_tests: 1,
            }),
            RunError::PeerBusy("busy".into()),
            RunError::Unreachable(EngineError::PeerBusy),
            RunError::Unsupported("x".into()),
            RunError::Interrupted,
            RunError::Protocol(EngineError::PeerBusy),
            RunError::Internal(EngineError::PeerBusy),
        ];
        let kinds: Vec<&str> = every.iter().map(RunError::kind).collect();
        let listed: Vec<&str> = documented
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap())
            .collect();
        assert_eq!(
            kinds, listed,
            "RunError::kind and docs/schema/error-v3.schema.json"
        );
    }
}
