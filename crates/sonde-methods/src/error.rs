//! What can stop a method.

use sonde_run::RunError;

#[derive(Debug, thiserror::Error)]
pub enum MethodError {
    /// The method's own spec breaks a rule (a usage error).
    #[error("invalid {field}: {detail}")]
    Invalid { field: &'static str, detail: String },
    /// A trial failed in a way that ends the method (refused, unreachable,
    /// invalid); the trials before it are lost only if none finished.
    #[error("trial {trial} failed: {source}")]
    Trial {
        trial: usize,
        #[source]
        source: RunError,
    },
}

impl MethodError {
    /// Whether the request itself is at fault (exit code 2).
    pub fn is_usage(&self) -> bool {
        match self {
            MethodError::Invalid { .. } => true,
            MethodError::Trial { source, .. } => source.is_usage(),
        }
    }
}

impl From<sonde_model::spec::SpecError> for MethodError {
    /// A method's own rule broken (its plan or spec), naming the field.
    fn from(e: sonde_model::spec::SpecError) -> Self {
        MethodError::Invalid {
            field: e.field,
            detail: e.reason,
        }
    }
}
