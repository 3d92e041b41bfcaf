//! `[[snmp]]` of the agent's configuration: a router (or switch) whose
//! interface counters the agent polls (docs/snmp.md).
//!
//! ```toml
//! [[snmp]]
//! name = "r1"                    # as the portal and the readings name it
//! address = "[2001:db8::1]:161"  # host or host:port (port 161)
//! version = "2c"                 # "2c" (community) or "3" (USM)
//! community = "public"           # v2c
//! interfaces = ["eth1"]          # by ifName or ifDescr; empty: every one but loopback
//! every = "30s"                  # how often it is polled
//! counters = 64                  # 64: ifHCInOctets…; 32: ifInOctets… (old agents)
//! timeout = "2s"                 # per request (one retry)
//! # version = "3":
//! user = "sonde"
//! auth = "sha256"                # md5 sha1 sha224 sha256 sha384 sha512; absent: noAuthNoPriv
//! auth_password = "…"            # at least 8 characters
//! privacy = "aes128"             # des aes128 aes192 aes256; absent: authNoPriv
//! privacy_password = "…"
//! ```

use crate::counter::Width;
use serde::Deserialize;
use std::fmt;
use std::time::Duration;

/// One `[[snmp]]` target.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnmpTarget {
    /// The router's name: the probe its readings are kept under, and the
    /// prefix of its interfaces' names (`r1:eth1`).
    pub name: String,
    /// `host` or `host:port`; IPv6 in brackets with a port.
    pub address: String,
    #[serde(default = "default_version")]
    pub version: String,
    /// The v2c community; never logged nor shown by `Debug`.
    #[serde(default)]
    pub community: Option<String>,
    #[serde(default)]
    pub interfaces: Vec<String>,
    #[serde(default = "default_every", with = "sonde_model::serde_secs")]
    pub every: Duration,
    #[serde(default = "default_counters")]
    pub counters: u8,
    #[serde(default = "default_timeout", with = "sonde_model::serde_secs")]
    pub timeout: Duration,
    #[serde(default)]
    pub user: Option<String>,
    #[serde(default)]
    pub auth: Option<String>,
    #[serde(default)]
    pub auth_password: Option<String>,
    #[serde(default)]
    pub privacy: Option<String>,
    #[serde(default)]
    pub privacy_password: Option<String>,
}

fn default_version() -> String {
    "2c".into()
}

fn default_every() -> Duration {
    Duration::from_secs(30)
}

fn default_counters() -> u8 {
    64
}

fn default_timeout() -> Duration {
    Duration::from_secs(2)
}

impl fmt::Debug for SnmpTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hidden = |s: &Option<String>| s.as_ref().map(|_| "<redacted>");
        f.debug_struct("SnmpTarget")
            .field("name", &self.name)
            .field("address", &self.address)
            .field("version", &self.version)
            .field("community", &hidden(&self.community))
            .field("interfaces", &self.interfaces)
            .field("every", &self.every)
            .field("counters", &self.counters)
            .field("timeout", &self.timeout)
            .field("user", &self.user)
            .field("auth", &self.auth)
            .field("auth_password", &hidden(&self.auth_password))
            .field("privacy", &self.privacy)
            .field("privacy_password", &hidden(&self.privacy_password))
            .finish()
    }
}

/// An `[[snmp]]` key that cannot be used: which target, which key, why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("snmp '{target}': {key}: {reason}")]
pub struct SnmpConfigError {
    pub target: String,
    pub key: &'static str,
    pub reason: String,
}

/// The shortest poll interval: routers' agents are slow, and rates over
/// shorter intervals are mostly noise.
pub const MIN_EVERY: Duration = Duration::from_secs(1);

/// The auth protocols, as the configuration spells them.
pub const AUTH_PROTOCOLS: [&str; 6] = ["md5", "sha1", "sha224", "sha256", "sha384", "sha512"];
/// The privacy protocols, as the configuration spells them.
pub const PRIVACY_PROTOCOLS: [&str; 4] = ["des", "aes128", "aes192", "aes256"];

impl SnmpTarget {
    fn err(&self, key: &'static str, reason: impl Into<String>) -> SnmpConfigError {
        SnmpConfigError {
            target: self.name.clone(),
            key,
            reason: reason.into(),
        }
    }

    /// The agent's host and port (161 unless given).
    pub fn host_port(&self) -> Result<(String, u16), SnmpConfigError> {
        let (host, port) = sonde_model::host_port::split_host_port(self.address.trim())
            .map_err(|e| self.err("address", e.to_string()))?;
        Ok((host, port.unwrap_or(161)))
    }

    /// The counters' width.
    pub fn width(&self) -> Width {
        if self.counters == 32 {
            Width::Bits32
        } else {
            Width::Bits64
        }
    }

    /// Checks every key: a name readings can carry, an address, a version
    /// with its credentials, known protocols, sane intervals.
    pub fn validate(&self) -> Result<(), SnmpConfigError> {
        if !sonde_readings::reading::valid_name(&self.name) {
            return Err(self.err(
                "name",
                "1 to 64 letters, digits, '.', '_', '-' or ':' (it names the readings' probe)",
            ));
        }
        if self.address.trim().is_empty() {
            return Err(self.err("address", "empty"));
        }
        self.host_port()?;
        if self.counters != 32 && self.counters != 64 {
            return Err(self.err("counters", format!("{} is not 32 or 64", self.counters)));
        }
        if self.every < MIN_EVERY {
            return Err(self.err("every", "at least 1 s"));
        }
        if self.timeout.is_zero() || self.timeout > self.every {
            return Err(self.err("timeout", "more than 0 and at most `every`"));
        }
        if self.interfaces.iter().any(|i| i.trim().is_empty()) {
            return Err(self.err("interfaces", "an empty interface name"));
        }
        match self.version.as_str() {
            "2c" => self.check_v2c(),
            "3" => self.check_v3(),
            v => Err(self.err("version", format!("'{v}' is not \"2c\" or \"3\""))),
        }
    }

    fn check_v2c(&self) -> Result<(), SnmpConfigError> {
        if self.community.as_deref().unwrap_or("").is_empty() {
            return Err(self.err("community", "version \"2c\" needs a community"));
        }
        for (key, set) in [
            ("user", self.user.is_some()),
            ("auth", self.auth.is_some()),
            ("auth_password", self.auth_password.is_some()),
            ("privacy", self.privacy.is_some()),
            ("privacy_password", self.privacy_password.is_some()),
        ] {
            if set {
                return Err(self.err(key, "only with version = \"3\""));
            }
        }
        Ok(())
    }

    fn check_v3(&self) -> Result<(), SnmpConfigError> {
        if self.community.is_some() {
            return Err(self.err("community", "only with version = \"2c\""));
        }
        if self.user.as_deref().unwrap_or("").is_empty() {
            return Err(self.err("user", "version \"3\" needs a user"));
        }
        let password = |key, p: &Option<String>| match p {
            Some(p) if p.len() >= 8 => Ok(()),
            Some(_) => Err(self.err(key, "at least 8 characters (RFC 3414)")),
            None => Err(self.err(key, "missing")),
        };
        match (&self.auth, &self.privacy) {
            (None, None) => {
                if self.auth_password.is_some() || self.privacy_password.is_some() {
                    return Err(self.err("auth", "a password is given but no protocol"));
                }
            }
            (None, Some(_)) => return Err(self.err("privacy", "privacy needs auth too")),
            (Some(a), p) => {
                if !AUTH_PROTOCOLS.contains(&a.as_str()) {
                    return Err(self.err(
                        "auth",
                        format!("'{a}' is not one of {}", AUTH_PROTOCOLS.join(", ")),
                    ));
                }
                password("auth_password", &self.auth_password)?;
                match p {
                    Some(p) => {
                        if !PRIVACY_PROTOCOLS.contains(&p.as_str()) {
                            return Err(self.err(
                                "privacy",
                                format!("'{p}' is not one of {}", PRIVACY_PROTOCOLS.join(", ")),
                            ));
                        }
                        password("privacy_password", &self.privacy_password)?;
                    }
                    None if self.privacy_password.is_some() => {
                        return Err(self.err("privacy", "a password is given but no protocol"));
                    }
                    None => {}
                }
            }
        }
        Ok(())
    }
}

/// Checks every target, and that no two share a name.
pub fn validate_all(targets: &[SnmpTarget]) -> Result<(), SnmpConfigError> {
    let mut names = std::collections::BTreeSet::new();
    for t in targets {
        t.validate()?;
        if !names.insert(t.name.as_str()) {
            return Err(t.err("name", "two [[snmp]] targets have this name"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> SnmpTarget {
        toml::from_str(text).expect("parses")
    }

    const V2: &str = "name = \"r1\"\naddress = \"[2001:db8::1]:161\"\ncommunity = \"public\"\n";

    #[test]
    fn defaults_and_a_v2c_target() {
        let t = parse(V2);
        t.validate().unwrap();
        assert_eq!(t.every, Duration::from_secs(30));
        assert_eq!(t.width(), Width::Bits64);
        assert!(!format!("{t:?}").contains("public"), "{t:?}");
    }

    #[test]
    fn each_bad_key_is_named() {
        let cases = [
            ("name = \"r 1\"\naddress = \"h\"\ncommunity = \"c\"", "name"),
            ("name = \"r\"\naddress = \"h\"", "community"),
            (
                "name = \"r\"\naddress = \"h\"\ncommunity = \"c\"\ncounters = 16",
                "counters",
            ),
            (
                "name = \"r\"\naddress = \"h\"\ncommunity = \"c\"\nevery = \"0.5s\"",
                "every",
            ),
            (
                "name = \"r\"\naddress = \"h\"\ncommunity = \"c\"\nuser = \"u\"",
                "user",
            ),
            ("name = \"r\"\naddress = \"h\"\nversion = \"1\"", "version"),
            ("name = \"r\"\naddress = \"h\"\nversion = \"3\"", "user"),
            (
                "name = \"r\"\naddress = \"h\"\nversion = \"3\"\nuser = \"u\"\nauth = \"sha\"\nauth_password = \"12345678\"",
                "auth",
            ),
            (
                "name = \"r\"\naddress = \"h\"\nversion = \"3\"\nuser = \"u\"\nauth = \"sha256\"\nauth_password = \"short\"",
                "auth_password",
            ),
            (
                "name = \"r\"\naddress = \"h\"\nversion = \"3\"\nuser = \"u\"\nprivacy = \"aes128\"\nprivacy_password = \"12345678\"",
                "privacy",
            ),
            (
                "name = \"r\"\naddress = \"[::1\"\ncommunity = \"c\"",
                "address",
            ),
        ];
        for (text, key) in cases {
            let e = parse(text).validate().expect_err(text);
            assert_eq!(e.key, key, "{text}: {e}");
        }
    }

    #[test]
    fn a_v3_target_with_auth_and_privacy() {
        let t = parse(
            "name = \"r1\"\naddress = \"10.0.0.1\"\nversion = \"3\"\nuser = \"sonde\"\n\
             auth = \"sha256\"\nauth_password = \"authpass1\"\nprivacy = \"aes128\"\n\
             privacy_password = \"privpass1\"\ncounters = 32\n",
        );
        t.validate().unwrap();
        assert_eq!(t.width(), Width::Bits32);
        let shown = format!("{t:?}");
        assert!(!shown.contains("authpass1") && !shown.contains("privpass1"));
    }

    #[test]
    fn two_targets_may_not_share_a_name() {
        let t = parse(V2);
        let e = validate_all(&[t.clone(), t]).unwrap_err();
        assert_eq!(e.key, "name");
    }
}
