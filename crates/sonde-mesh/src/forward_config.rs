//! `[[forward]]` of the agent's configuration: the central archives this
//! agent delivers its results to (store-and-forward, docs/mesh.md). Each
//! result is kept in the local archive first; a destination only ever
//! gets a copy, however long it is away.

use serde::Deserialize;
use std::path::PathBuf;
use std::time::Duration;

/// One destination results are forwarded to.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForwardConfig {
    /// What logs, `sonde status`, the API and `/metrics` call it.
    pub name: String,
    /// Where: a central agent's API (`https://central:8443`,
    /// `http://…` only on a trusted network), or an archive itself
    /// (`postgres://…`, or a SQLite path).
    pub to: String,
    /// A file holding the bearer token the central agent knows this
    /// agent by (API destinations).
    pub token_file: Option<PathBuf>,
    /// A PEM file of the certificate authorities to trust for an
    /// `https://` destination, instead of the system's.
    pub ca_file: Option<PathBuf>,
    /// Most results delivered in one request.
    #[serde(default = "default_batch")]
    pub batch: usize,
    /// Longest wait between two tries after failures (back-off doubles
    /// from a second up to it).
    #[serde(default = "default_retry_max", with = "sonde_model::serde_secs")]
    pub retry_max: Duration,
}

fn default_batch() -> usize {
    200
}

fn default_retry_max() -> Duration {
    Duration::from_secs(30)
}

impl ForwardConfig {
    /// Whether the destination is a central agent's API.
    pub fn is_api(&self) -> bool {
        self.to.starts_with("https://") || self.to.starts_with("http://")
    }

    /// The one place a destination is checked: `(key, reason)`.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if self.name.is_empty() || self.name.len() > 64 {
            return Err(("forward.name", "must be 1 to 64 characters".into()));
        }
        if self.name.starts_with("local:") {
            return Err((
                "forward.name",
                format!(
                    "{}: names starting with local: are sonde's own queues",
                    self.name
                ),
            ));
        }
        if self.to.is_empty() {
            return Err(("forward.to", format!("{}: is empty", self.name)));
        }
        // Anything else is taken as a SQLite file: a mistyped scheme or
        // a bare address would make one and fill it without a word.
        let lower = self.to.to_ascii_lowercase();
        if let Some((scheme, _)) = lower.split_once("://") {
            let known = ["https", "http", "postgres", "postgresql"];
            if !known.contains(&scheme) || !self.to.starts_with(scheme) {
                return Err((
                    "forward.to",
                    format!(
                        "{}: '{}': write https://HOST:PORT (a central agent), postgres://… \
                         (an archive) or a SQLite file's path",
                        self.name, self.to
                    ),
                ));
            }
        } else if !self.to.contains('/')
            && !self.to.ends_with(".db")
            && sonde_model::host_port::split_host_port(&self.to).is_ok_and(|(_, p)| p.is_some())
        {
            return Err((
                "forward.to",
                format!(
                    "{}: '{}' is an address, not a file: write https://{} for a central agent",
                    self.name, self.to, self.to
                ),
            ));
        }
        if self.batch == 0 || self.batch > 10_000 {
            return Err((
                "forward.batch",
                format!("{}: must be 1 to 10000", self.name),
            ));
        }
        if self.retry_max < Duration::from_secs(1) {
            return Err((
                "forward.retry_max",
                format!("{}: must be at least 1s", self.name),
            ));
        }
        if self.is_api() && self.token_file.is_none() {
            return Err((
                "forward.token_file",
                format!("{}: an API destination needs a token", self.name),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to(to: &str) -> ForwardConfig {
        ForwardConfig {
            name: "central".into(),
            to: to.into(),
            token_file: Some(PathBuf::from("/etc/sonde/central.token")),
            ca_file: None,
            batch: default_batch(),
            retry_max: default_retry_max(),
        }
    }

    #[test]
    fn a_destination_that_is_no_api_archive_or_file_is_refused() {
        for ok in [
            "https://central:8443",
            "http://[::1]:8080",
            "postgres://root@127.0.0.1/test",
            "/var/lib/sonde/copy.db",
            "copy.db",
        ] {
            assert!(to(ok).check().is_ok(), "{ok}");
        }
        // Each of these would have become a SQLite file of that name.
        for (bad, says) in [
            ("HTTPS://central:8443", "write https://HOST:PORT"),
            ("htps://central:8443", "write https://HOST:PORT"),
            ("central:8443", "is an address, not a file"),
            ("[2001:db8::1]:8443", "is an address, not a file"),
        ] {
            let (key, why) = to(bad).check().unwrap_err();
            assert_eq!(key, "forward.to", "{bad}");
            assert!(why.contains(says), "{bad}: {why}");
        }
    }
}
