//! The `[auth]` table: tokens clients prove they hold, limit classes
//! chosen by token or source prefix, whether clients without a token may
//! test, and the audit log (docs/serve.md, "Authentication and limit
//! classes"). The default (no tokens, no classes) is a server without
//! authentication, every client under `[limits]`.
//!
//! Secrets are read from files (`secret_file`) or, for tests and
//! examples, written inline (`secret`); neither ever shows in `Debug`
//! output or a log.

use ipnet::IpNet;
use serde::Deserialize;
use sonde_model::credential::{valid_token_name, MIN_SECRET_LEN};
use sonde_model::Rate;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// The class of clients no token and no prefix picks out: `[limits]`.
pub const UNKNOWN_CLASS: &str = "unknown";
/// The class of a token that names none: `[limits]` too.
pub const DEFAULT_CLASS: &str = "default";

/// What a client may ask beyond running tests with this server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Permission {
    /// Third-party tests (`ThirdPartyRequest`).
    ThirdParty,
}

/// What the server does with a request over its class's caps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OverLimit {
    /// Refuse it, naming the class and the limit.
    #[default]
    Refuse,
    /// Run it cut down to the caps, and tell the client each cut (sonde
    /// clients only; iperf3 clients are refused).
    Cut,
}

/// One token (`[[auth.tokens]]`).
#[derive(Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    /// Its name, sent in the clear by clients.
    pub name: String,
    /// A file holding the secret (its content less one trailing newline).
    #[serde(default)]
    pub secret_file: Option<PathBuf>,
    /// The secret itself, for tests and examples; `secret_file` is the
    /// way for real servers.
    #[serde(default)]
    pub secret: Option<String>,
    /// The limit class its clients run under; none: `[limits]`.
    #[serde(default)]
    pub class: Option<String>,
    /// What else its clients may do.
    #[serde(default)]
    pub may: Vec<Permission>,
}

impl fmt::Debug for TokenConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenConfig")
            .field("name", &self.name)
            .field("secret_file", &self.secret_file)
            .field("secret", &self.secret.as_ref().map(|_| "<redacted>"))
            .field("class", &self.class)
            .field("may", &self.may)
            .finish()
    }
}

impl TokenConfig {
    /// The secret's bytes, read from its file or inline.
    pub fn load_secret(&self) -> Result<Vec<u8>, (&'static str, String)> {
        let bytes = match (&self.secret_file, &self.secret) {
            (Some(_), Some(_)) => {
                return Err((
                    "auth.tokens.secret",
                    format!("token {}: give secret_file or secret, not both", self.name),
                ))
            }
            (None, None) => {
                return Err((
                    "auth.tokens.secret_file",
                    format!("token {} has no secret_file (or secret)", self.name),
                ))
            }
            (Some(path), None) => {
                let mut b = std::fs::read(path).map_err(|e| {
                    (
                        "auth.tokens.secret_file",
                        format!("token {}: cannot read {}: {e}", self.name, path.display()),
                    )
                })?;
                if b.last() == Some(&b'\n') {
                    b.pop();
                    if b.last() == Some(&b'\r') {
                        b.pop();
                    }
                }
                b
            }
            (None, Some(s)) => s.as_bytes().to_vec(),
        };
        if bytes.len() < MIN_SECRET_LEN {
            let key = if self.secret.is_some() {
                "auth.tokens.secret"
            } else {
                "auth.tokens.secret_file"
            };
            return Err((
                key,
                format!(
                    "token {}: the secret is {} bytes; it must be at least {MIN_SECRET_LEN}",
                    self.name,
                    bytes.len()
                ),
            ));
        }
        Ok(bytes)
    }
}

/// One limit class (`[[auth.classes]]`). Each cap left out is the
/// `[limits]` one; none can be more than it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassConfig {
    pub name: String,
    /// Sources in this class when they hold no token (v4-mapped
    /// addresses count as IPv4). The first class that holds a source is
    /// its class.
    #[serde(default)]
    pub prefixes: Vec<IpNet>,
    #[serde(default, with = "sonde_model::serde_secs::option")]
    pub max_duration: Option<Duration>,
    #[serde(default)]
    pub max_streams: Option<u16>,
    /// Highest total rate of one test, TCP or UDP.
    #[serde(default)]
    pub max_rate: Option<Rate>,
    /// Highest total rate of one UDP test.
    #[serde(default)]
    pub max_udp_rate: Option<Rate>,
    #[serde(default)]
    pub over_limit: OverLimit,
}

/// The `[auth]` table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    /// Refuse native clients without a token.
    pub required: bool,
    /// Whether iperf3 clients (who cannot hold a token) may test; they
    /// run under their prefix's class, else `[limits]`.
    pub iperf3: bool,
    /// An append-only JSON-lines file of every decision: who ran what,
    /// when, toward where.
    pub audit_log: Option<PathBuf>,
    pub tokens: Vec<TokenConfig>,
    pub classes: Vec<ClassConfig>,
}

impl Default for AuthConfig {
    fn default() -> Self {
        Self {
            required: false,
            iperf3: true,
            audit_log: None,
            tokens: Vec::new(),
            classes: Vec::new(),
        }
    }
}

impl AuthConfig {
    /// Checks the table (secrets read), naming the key at fault.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        let mut classes = std::collections::BTreeSet::new();
        for c in &self.classes {
            if c.name.is_empty() || c.name == UNKNOWN_CLASS || c.name == DEFAULT_CLASS {
                return Err((
                    "auth.classes.name",
                    format!(
                        "'{}' cannot name a class ('{UNKNOWN_CLASS}' and '{DEFAULT_CLASS}' are \
                         the server's own)",
                        c.name
                    ),
                ));
            }
            if !classes.insert(c.name.as_str()) {
                return Err(("auth.classes.name", format!("{} is named twice", c.name)));
            }
            if c.max_duration.is_some_and(|d| d.is_zero()) {
                return Err((
                    "auth.classes.max_duration",
                    format!("{}: must be more than 0", c.name),
                ));
            }
            if c.max_streams == Some(0) {
                return Err((
                    "auth.classes.max_streams",
                    format!("{}: must be at least 1", c.name),
                ));
            }
            if c.max_rate.is_some_and(|r| r.bps() == 0) {
                return Err((
                    "auth.classes.max_rate",
                    format!("{}: must be more than 0", c.name),
                ));
            }
            if c.max_udp_rate.is_some_and(|r| r.bps() == 0) {
                return Err((
                    "auth.classes.max_udp_rate",
                    format!("{}: must be more than 0", c.name),
                ));
            }
        }
        let mut names = std::collections::BTreeSet::new();
        for t in &self.tokens {
            if !valid_token_name(&t.name) {
                return Err((
                    "auth.tokens.name",
                    format!(
                        "'{}' is not 1 to 64 letters, digits, '-', '_' or '.'",
                        t.name
                    ),
                ));
            }
            if !names.insert(t.name.as_str()) {
                return Err(("auth.tokens.name", format!("{} is named twice", t.name)));
            }
            if let Some(class) = &t.class {
                if !classes.contains(class.as_str()) {
                    return Err((
                        "auth.tokens.class",
                        format!(
                            "token {} names class {class}, which is not in [[auth.classes]]",
                            t.name
                        ),
                    ));
                }
            }
            t.load_secret()?;
        }
        if self.required && self.tokens.is_empty() {
            return Err((
                "auth.required",
                "is true but no [[auth.tokens]] are configured, so no client could test".into(),
            ));
        }
        Ok(())
    }

    /// Whether anything of authentication or classes is configured: a
    /// server without is today's server, word for word.
    pub fn is_configured(&self) -> bool {
        !self.tokens.is_empty() || !self.classes.is_empty() || self.required || !self.iperf3
    }
}

#[cfg(test)]
mod tests {
    use crate::config::ServerConfig;

    fn err(toml: &str) -> String {
        let c = ServerConfig::from_toml(toml, "t.toml").unwrap();
        c.validate().unwrap_err().to_string()
    }

    #[test]
    fn a_full_auth_table_parses() {
        let c = ServerConfig::from_toml(
            r#"
            [auth]
            required = false
            iperf3 = false
            audit_log = "/tmp/audit.jsonl"
            [[auth.classes]]
            name = "friends"
            prefixes = ["2001:db8::/32", "198.51.100.0/24"]
            max_duration = "60s"
            max_streams = 6
            max_rate = "1G"
            max_udp_rate = "50M"
            over_limit = "cut"
            [[auth.tokens]]
            name = "ops"
            secret = "0123456789abcdef0123"
            class = "friends"
            may = ["third_party"]
            "#,
            "t.toml",
        )
        .unwrap();
        c.validate().unwrap();
        assert!(!c.auth.iperf3);
        assert_eq!(c.auth.classes[0].max_streams, Some(6));
        assert_eq!(
            c.auth.classes[0].over_limit,
            crate::auth_config::OverLimit::Cut
        );
        let shown = format!("{c:?}");
        assert!(!shown.contains("0123456789abcdef0123"), "{shown}");
    }

    #[test]
    fn each_fault_names_its_key() {
        let e =
            err("[[auth.tokens]]\nname = \"a\"\nsecret = \"0123456789abcdef\"\nclass = \"nope\"\n");
        assert!(e.starts_with("auth.tokens.class:"), "{e}");
        let e = err("[[auth.tokens]]\nname = \"a\"\nsecret = \"short\"\n");
        assert!(e.starts_with("auth.tokens.secret:"), "{e}");
        assert!(!e.contains("short\""), "{e}");
        let e = err("[[auth.tokens]]\nname = \"a\"\nsecret_file = \"/nonexistent/sonde-secret\"\n");
        assert!(e.starts_with("auth.tokens.secret_file:"), "{e}");
        let e = err("[[auth.tokens]]\nname = \"a b\"\nsecret = \"0123456789abcdef\"\n");
        assert!(e.starts_with("auth.tokens.name:"), "{e}");
        let e = err("[[auth.classes]]\nname = \"unknown\"\n");
        assert!(e.starts_with("auth.classes.name:"), "{e}");
        let e = err("[[auth.classes]]\nname = \"x\"\nmax_streams = 0\n");
        assert!(e.starts_with("auth.classes.max_streams:"), "{e}");
        let e = err("[auth]\nrequired = true\n");
        assert!(e.starts_with("auth.required:"), "{e}");
        let dir = std::env::temp_dir().join(format!("sonde-auth-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty");
        std::fs::write(&empty, "\n").unwrap();
        let e = err(&format!(
            "[[auth.tokens]]\nname = \"a\"\nsecret_file = \"{}\"\n",
            empty.display()
        ));
        assert!(e.contains("0 bytes"), "{e}");
        let good = dir.join("good");
        std::fs::write(&good, "0123456789abcdefXYZ\n").unwrap();
        let c = ServerConfig::from_toml(
            &format!(
                "[[auth.tokens]]\nname = \"a\"\nsecret_file = \"{}\"\n",
                good.display()
            ),
            "t.toml",
        )
        .unwrap();
        c.validate().unwrap();
        assert_eq!(
            c.auth.tokens[0].load_secret().unwrap(),
            b"0123456789abcdefXYZ"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_default_configures_nothing() {
        let c = ServerConfig::default();
        assert!(!c.auth.is_configured());
        assert!(c.auth.iperf3);
    }
}
