//! What `-J` prints instead of a result when the test gave none:
//! [`FailureDocument`] (`docs/schema/error-v3.schema.json`).

use crate::schema::leaf_schema;
use crate::{TestKind, TestSpec, RESULT_FORMAT_VERSION};
use serde::{Deserialize, Serialize};

/// What `sonde tcp|udp|ping|run -J` prints instead of a result when the
/// test gave none (the server unreachable or refusing, a usage error
/// found when the spec was checked, an interruption before anything was
/// measured): the result's header as far as it is known, and `error`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("dependentRequired" = { "spec": ["test"], "test": ["spec"] }))]
pub struct FailureDocument {
    /// Version of the document layout, as a result's.
    #[schemars(extend("const" = 3))]
    pub format_version: u32,
    /// The version of sonde that tried.
    pub sonde_version: String,
    /// Which test was asked for; absent when the spec could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<TestKind>,
    /// The spec's title, if it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What was asked, as in a result's `spec` (result-v3.schema.json);
    /// absent when the spec could not be read. It may break the rules a
    /// result's spec keeps: that can be the failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<SpecAsAsked>")]
    pub spec: Option<TestSpec>,
    pub error: Failure,
}

impl FailureDocument {
    /// The document of a failure of `kind` (a [`FailureKind`]'s name; an
    /// unknown one is `internal`) with `message`, for `spec` when known.
    pub fn new(kind: &str, message: &str, spec: Option<&TestSpec>, sonde_version: &str) -> Self {
        Self {
            format_version: RESULT_FORMAT_VERSION,
            sonde_version: sonde_version.to_string(),
            test: spec.map(TestSpec::kind),
            title: spec.and_then(TestSpec::title).map(String::from),
            spec: spec.cloned(),
            error: Failure {
                kind: FailureKind::named(kind),
                message: message.to_string(),
            },
        }
    }
}

/// A spec as asked, rules broken or not: the schema of a failure's
/// `spec`.
struct SpecAsAsked;

leaf_schema!(SpecAsAsked, "SpecAsAsked", {
    "type": "object",
    "required": ["test", "host"],
    "description": "What was asked, as in a result's `spec` (result-v3.schema.json), whether or not it keeps its rules."
});

/// Why, and in words.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Failure {
    pub kind: FailureKind,
    /// The error in words, as the command line prints it on stderr.
    #[schemars(length(min = 1))]
    pub message: String,
}

/// Why, as one word: invalid (the spec or a flag breaks a rule: fix the
/// request), key_file (a key file cannot be used), refused (over a server
/// limit), denied (the server refused for another reason: who may
/// connect, version), busy (the server runs all the tests it may: retry
/// later), unreachable (cannot resolve or connect), unsupported (this host
/// or the peer cannot do what was asked), interrupted (stopped before
/// anything was measured), protocol (the peer broke the protocol, timed
/// out or aborted), internal (this host failed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    Invalid,
    KeyFile,
    Refused,
    Denied,
    Busy,
    Unreachable,
    Unsupported,
    Interrupted,
    Protocol,
    Internal,
}

impl FailureKind {
    /// The kind called `name`; `internal` for a name that is none.
    pub fn named(name: &str) -> Self {
        serde_json::from_value(serde_json::Value::String(name.to_string()))
            .unwrap_or(FailureKind::Internal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kind_is_read_by_its_name_and_an_unknown_one_is_internal() {
        assert_eq!(FailureKind::named("key_file"), FailureKind::KeyFile);
        assert_eq!(FailureKind::named("busy"), FailureKind::Busy);
        assert_eq!(FailureKind::named("no such"), FailureKind::Internal);
    }
}
