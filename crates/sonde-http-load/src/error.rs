//! Why an HTTP benchmark could not start or go on, by kind.

use std::io;

#[derive(Debug, thiserror::Error)]
pub enum HttpLoadError {
    /// The URL, its TLS name or the request cannot be used.
    #[error("{0}")]
    Unavailable(String),
    /// The host has no address of the family asked for.
    #[error("'{host}' has no {family} address")]
    NoAddress { host: String, family: &'static str },
    #[error("{context}: {source}")]
    Io {
        context: &'static str,
        source: io::Error,
    },
}
