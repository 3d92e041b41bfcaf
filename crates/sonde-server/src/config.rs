//! The test endpoint's configuration: where it listens and what it
//! allows.
//!
//! Read with the rest of the serve file (`sonde serve --config FILE`, by
//! sonde-agent), then overridden by flags, then checked once by
//! [`ServerConfig::validate`]. Every key is documented in
//! `docs/serve.md`.

use serde::Deserialize;
use std::net::IpAddr;
use std::path::Path;

pub use crate::limits_config::Limits;

/// What the test endpoint runs with: where it listens, `[limits]`,
/// `[reflector]` and `[auth]`. The daemon's configuration (sonde-agent's
/// `AgentConfig`, the whole serve file) holds these and the daemon's own
/// sections.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// Addresses to listen on; empty: every address, IPv6 and IPv4.
    pub bind: Vec<IpAddr>,
    pub port: u16,
    pub limits: Limits,
    pub reflector: ReflectorConfig,
    /// Tokens, limit classes and the audit log (`[auth]`).
    pub auth: crate::auth_config::AuthConfig,
}

/// The STAMP reflector (RFC 8762) of `sonde serve`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReflectorConfig {
    pub enabled: bool,
    /// UDP port (default 862, STAMP's; 0: any free port).
    pub port: u16,
    /// Most test packets per second answered for one source address.
    pub rate_limit: u32,
    /// Most test packets per second answered for all sources together.
    pub total_rate_limit: u32,
    /// A file holding the authentication key in hex: authenticated mode
    /// (HMAC-SHA-256); without it, unauthenticated.
    pub key_file: Option<std::path::PathBuf>,
    /// Unauthenticated: answer TWAMP-Light session-senders' test packets
    /// shorter than STAMP's 44 bytes (14 or more, RFC 5357 Appendix I)
    /// with a 44-byte answer, as RFC 8762 §4.6 has a STAMP reflector do.
    /// Such an answer is up to 3.1 times its request (the rate limits
    /// bound it); `false` drops them.
    pub twamp_light: bool,
}

impl Default for ReflectorConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            port: 862,
            rate_limit: 1000,
            total_rate_limit: 10_000,
            key_file: None,
            twamp_light: true,
        }
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            bind: Vec::new(),
            port: 5201,
            limits: Limits::default(),
            reflector: ReflectorConfig::default(),
            auth: crate::auth_config::AuthConfig::default(),
        }
    }
}

/// A configuration that cannot be used, naming the key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: String, message: String },
    #[error("{key}: {reason}")]
    Invalid { key: &'static str, reason: String },
    /// A named entry of an array of tables that cannot work (an
    /// `[[alert]]`): the table, the entry's name and its key.
    #[error("{table} '{name}': {key}: {why}")]
    Entry {
        table: &'static str,
        name: String,
        key: &'static str,
        why: String,
    },
    /// One of the above, where it is in the file.
    #[error("{path}:{line}: {error}")]
    At {
        path: String,
        line: usize,
        error: Box<ConfigError>,
    },
}

impl ConfigError {
    /// The error with the file and line of the key it names, read from
    /// the file at `path` (as it is when none can be found).
    pub fn located(self, path: &Path) -> ConfigError {
        use sonde_model::toml_where::{line_of, Step};
        let Ok(text) = std::fs::read_to_string(path) else {
            return self;
        };
        let line = match &self {
            ConfigError::Invalid { key, .. } => {
                let steps: Vec<Step<'_>> = key.split('.').map(Step::Key).collect();
                line_of(&text, &steps)
            }
            ConfigError::Entry {
                table, name, key, ..
            } => line_of(
                &text,
                &[Step::Key(table), Step::Named(name), Step::Key(key)],
            ),
            _ => None,
        };
        match line {
            Some(line) => ConfigError::At {
                path: path.display().to_string(),
                line,
                error: Box::new(self),
            },
            None => self,
        }
    }
}

/// A configuration document of type `T` parsed from TOML; `origin` names
/// it in errors (the endpoint's and the daemon's read alike).
pub fn from_toml<T: serde::de::DeserializeOwned>(
    text: &str,
    origin: &str,
) -> Result<T, ConfigError> {
    toml::from_str(text).map_err(|e| ConfigError::Parse {
        path: origin.to_string(),
        message: e.to_string().trim_end().replace('\n', " "),
    })
}

/// [`from_toml`] of the file at `path`.
pub fn from_file<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, ConfigError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: shown.clone(),
        source,
    })?;
    from_toml(&text, &shown)
}

impl ServerConfig {
    /// Parses a TOML document; `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<Self, ConfigError> {
        from_toml(text, origin)
    }

    /// The one place a configuration is checked.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let l = &self.limits;
        let invalid = |key, reason: &str| {
            Err(ConfigError::Invalid {
                key,
                reason: reason.to_string(),
            })
        };
        if l.max_duration.is_zero() {
            return invalid("limits.max_duration", "must be more than 0");
        }
        if l.max_streams == 0 {
            return invalid("limits.max_streams", "must be at least 1");
        }
        if l.max_concurrent_tests == 0 {
            return invalid("limits.max_concurrent_tests", "must be at least 1");
        }
        if l.max_rate.is_some_and(|r| r.bps() == 0) {
            return invalid(
                "limits.max_rate",
                "must be more than 0 (leave it out for no cap)",
            );
        }
        if self.reflector.rate_limit == 0 {
            return invalid(
                "reflector.rate_limit",
                "must be at least 1 packet per second",
            );
        }
        if l.max_connections == 0 {
            return invalid("limits.max_connections", "must be at least 1");
        }
        if l.max_handshakes_per_source == 0 {
            return invalid("limits.max_handshakes_per_source", "must be at least 1");
        }
        if self.reflector.total_rate_limit == 0 {
            return invalid(
                "reflector.total_rate_limit",
                "must be at least 1 packet per second",
            );
        }
        if l.allow.is_empty() {
            return invalid("limits.allow", "is empty, so no client could test");
        }
        if l.max_work.is_zero() {
            return invalid("limits.max_work", "must be more than 0");
        }
        self.auth
            .check()
            .map_err(|(key, reason)| ConfigError::Invalid { key, reason })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_model::Rate;
    use std::time::Duration;

    #[test]
    fn a_full_file_parses() {
        let c = ServerConfig::from_toml(
            r#"
            bind = ["::1", "127.0.0.1"]
            port = 5999
            [limits]
            max_duration = "30s"
            max_streams = 8
            max_concurrent_tests = 2
            max_rate = "100M"
            allow = ["2001:2::/48", "198.18.0.0/15"]
            max_connections = 64
            max_handshakes_per_source = 4
            third_party_allow = ["2001:2::/48"]
            "#,
            "t.toml",
        )
        .unwrap();
        c.validate().unwrap();
        assert_eq!(c.port, 5999);
        assert_eq!(c.limits.max_duration, Duration::from_secs(30));
        assert_eq!(c.limits.max_rate, Some(Rate::from_bps(100_000_000)));
        assert_eq!(c.limits.allow.len(), 2);
        assert_eq!(c.limits.max_connections, 64);
        assert_eq!(c.limits.max_handshakes_per_source, 4);
        assert_eq!(c.limits.third_party_allow.len(), 1);
        let zero = ServerConfig::from_toml("[limits]\nmax_connections = 0\n", "t.toml").unwrap();
        assert!(zero
            .validate()
            .unwrap_err()
            .to_string()
            .contains("limits.max_connections"));
    }

    #[test]
    fn unknown_keys_and_bad_values_are_named() {
        let e = ServerConfig::from_toml("[limits]\nmax_streems = 3\n", "t.toml").unwrap_err();
        assert!(e.to_string().contains("max_streems"), "{e}");
        let e = ServerConfig::from_toml("[limits]\nmax_rate = \"fast\"\n", "t.toml").unwrap_err();
        assert!(e.to_string().contains("fast"), "{e}");
        let c = ServerConfig::from_toml("[limits]\nallow = []\n", "t.toml").unwrap();
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("limits.allow"));
    }

    #[test]
    fn defaults_allow_everyone_and_cap_duration() {
        let c = ServerConfig::default();
        c.validate().unwrap();
        assert_eq!(c.limits.max_duration, Duration::from_secs(300));
        assert!(
            c.limits.third_party_allow.is_empty(),
            "third-party tests are off"
        );
    }
}
