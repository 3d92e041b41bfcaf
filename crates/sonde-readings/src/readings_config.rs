//! `[readings]` of the agent's configuration: readings from probes
//! (docs/readings.md).
//!
//! ```toml
//! [readings]
//! mqtt = "127.0.0.1:1883"        # the broker; absent: no MQTT (the API still takes readings)
//! topic = "sonde/readings/#"     # the filter subscribed to; topics end in /<probe>/<metric>
//! client_id = "sonde-agent-1"    # default: sonde-<hostname>-<pid>
//! mqtt_user = "sonde"            # log in to the broker; absent: anonymous
//! mqtt_password = "…"            # with mqtt_user (keep the file 0600)
//! mqtt_tls = true                # TLS to the broker (default false)
//! mqtt_ca = "/etc/sonde/mqtt-ca.pem" # with mqtt_tls; absent: the system's roots
//! ```

use serde::Deserialize;
use std::fmt;
use std::path::PathBuf;

#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReadingsConfig {
    /// The MQTT broker, `host:port` (`[::1]:1883`) or `host` (port 1883).
    pub mqtt: Option<String>,
    /// The topic filter subscribed to.
    pub topic: String,
    /// The MQTT client id; default `sonde-<hostname>-<pid>` (two
    /// agents with one id would take the broker's session from each
    /// other in turn).
    pub client_id: Option<String>,
    /// The user name to log in to the broker with; absent: anonymous.
    pub mqtt_user: Option<String>,
    /// Its password (with `mqtt_user`); never logged nor shown by
    /// `Debug`.
    pub mqtt_password: Option<String>,
    /// TLS to the broker (rustls).
    pub mqtt_tls: bool,
    /// A PEM file of the CA certificate(s) the broker's certificate must
    /// chain to (with `mqtt_tls`); absent: the system's roots.
    pub mqtt_ca: Option<PathBuf>,
}

impl Default for ReadingsConfig {
    fn default() -> Self {
        Self {
            mqtt: None,
            topic: "sonde/readings/#".into(),
            client_id: None,
            mqtt_user: None,
            mqtt_password: None,
            mqtt_tls: false,
            mqtt_ca: None,
        }
    }
}

impl fmt::Debug for ReadingsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadingsConfig")
            .field("mqtt", &self.mqtt)
            .field("topic", &self.topic)
            .field("client_id", &self.client_id)
            .field("mqtt_user", &self.mqtt_user)
            .field(
                "mqtt_password",
                &self.mqtt_password.as_ref().map(|_| "<redacted>"),
            )
            .field("mqtt_tls", &self.mqtt_tls)
            .field("mqtt_ca", &self.mqtt_ca)
            .finish()
    }
}

/// A `[readings]` key that cannot be used, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("readings.{key}: {reason}")]
pub struct ReadingsConfigError {
    pub key: &'static str,
    pub reason: String,
}

impl ReadingsConfig {
    /// The broker's host and port, if MQTT is on.
    pub fn broker(&self) -> Result<Option<(String, u16)>, ReadingsConfigError> {
        let Some(m) = &self.mqtt else {
            return Ok(None);
        };
        let bad = || ReadingsConfigError {
            key: "mqtt",
            reason: format!("{m:?}: host:port, [IPv6]:port or host"),
        };
        let (host, port) = if let Some(rest) = m.strip_prefix('[') {
            let (h, after) = rest.split_once(']').ok_or_else(bad)?;
            let port = match after.strip_prefix(':') {
                Some(p) => p.parse().map_err(|_| bad())?,
                None if after.is_empty() => 1883,
                None => return Err(bad()),
            };
            (h.to_string(), port)
        } else {
            match m.rsplit_once(':') {
                Some((h, p)) if !h.contains(':') => (h.to_string(), p.parse().map_err(|_| bad())?),
                _ if m.contains(':') => return Err(bad()),
                _ => (m.clone(), 1883),
            }
        };
        if host.is_empty() || port == 0 || host.chars().any(char::is_whitespace) {
            return Err(bad());
        }
        Ok(Some((host, port)))
    }

    /// Checks every key.
    pub fn validate(&self) -> Result<(), ReadingsConfigError> {
        self.broker()?;
        let t = &self.topic;
        if t.is_empty() || t.len() > 200 || t.contains('\0') || t.chars().any(char::is_whitespace) {
            return Err(ReadingsConfigError {
                key: "topic",
                reason: format!("{t:?}: an MQTT topic filter such as sonde/readings/#"),
            });
        }
        if let Some(c) = &self.client_id {
            if c.is_empty() || c.len() > 64 {
                return Err(ReadingsConfigError {
                    key: "client_id",
                    reason: "1 to 64 characters".into(),
                });
            }
        }
        // MQTT strings: UTF-8 of up to 65535 bytes; control characters
        // would only be a mistake (a pasted newline).
        let mqtt_string =
            |s: &str| !s.is_empty() && s.len() <= 65_535 && !s.chars().any(char::is_control);
        if let Some(u) = &self.mqtt_user {
            if !mqtt_string(u) {
                return Err(ReadingsConfigError {
                    key: "mqtt_user",
                    reason: "1 to 65535 bytes, no control characters".into(),
                });
            }
        }
        if let Some(p) = &self.mqtt_password {
            // Never the password itself in the message.
            let reason = if self.mqtt_user.is_none() {
                "needs readings.mqtt_user (MQTT sends no password without a user name)"
            } else if !mqtt_string(p) {
                "1 to 65535 bytes, no control characters (leave it out for none)"
            } else {
                ""
            };
            if !reason.is_empty() {
                return Err(ReadingsConfigError {
                    key: "mqtt_password",
                    reason: reason.into(),
                });
            }
        }
        if let Some(ca) = &self.mqtt_ca {
            let reason = if !self.mqtt_tls {
                "needs mqtt_tls = true"
            } else if ca.as_os_str().is_empty() {
                "a path to a PEM file of CA certificates"
            } else {
                ""
            };
            if !reason.is_empty() {
                return Err(ReadingsConfigError {
                    key: "mqtt_ca",
                    reason: reason.into(),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(mqtt: &str) -> ReadingsConfig {
        ReadingsConfig {
            mqtt: Some(mqtt.into()),
            ..ReadingsConfig::default()
        }
    }

    #[test]
    fn brokers_are_read_with_their_port() {
        assert_eq!(ReadingsConfig::default().broker(), Ok(None));
        for (m, host, port) in [
            ("127.0.0.1:1883", "127.0.0.1", 1883),
            ("broker.example", "broker.example", 1883),
            ("[::1]:8883", "::1", 8883),
            ("[::1]", "::1", 1883),
        ] {
            assert_eq!(with(m).broker(), Ok(Some((host.to_string(), port))), "{m}");
        }
        for m in ["", "::1", "host:", "host:99999", "[::1", "a b:1", "[::1]x"] {
            let e = with(m).validate().unwrap_err().to_string();
            assert!(e.starts_with("readings.mqtt:"), "{m}: {e}");
        }
    }

    #[test]
    fn the_section_is_read_from_toml() {
        let c: ReadingsConfig =
            toml::from_str("mqtt = \"127.0.0.1:1883\"\nclient_id = \"a\"").unwrap();
        assert_eq!(c.topic, "sonde/readings/#");
        assert!(c.validate().is_ok());
        assert!(toml::from_str::<ReadingsConfig>("broker = \"x\"").is_err());
        let bad = ReadingsConfig {
            topic: "a b".into(),
            ..c
        };
        assert!(bad
            .validate()
            .unwrap_err()
            .to_string()
            .starts_with("readings.topic"));
    }

    #[test]
    fn the_login_and_tls_keys_are_read_and_checked() {
        let c: ReadingsConfig = toml::from_str(
            "mqtt = \"broker.example:8883\"\nmqtt_user = \"sonde\"\n\
             mqtt_password = \"hunter2-secret\"\nmqtt_tls = true\n\
             mqtt_ca = \"/etc/sonde/mqtt-ca.pem\"",
        )
        .unwrap();
        assert!(c.validate().is_ok());
        assert_eq!(
            (
                c.mqtt_user.as_deref(),
                c.mqtt_password.as_deref(),
                c.mqtt_tls
            ),
            (Some("sonde"), Some("hunter2-secret"), true)
        );
        assert_eq!(c.mqtt_ca, Some(PathBuf::from("/etc/sonde/mqtt-ca.pem")));
        // The password is not in Debug output.
        let shown = format!("{c:?}");
        assert!(
            !shown.contains("hunter2") && shown.contains("<redacted>"),
            "{shown}"
        );
        // Off by default; TLS without a CA file: the system's roots.
        let d = ReadingsConfig::default();
        assert!(!d.mqtt_tls && d.mqtt_user.is_none() && d.mqtt_ca.is_none());
        let roots: ReadingsConfig = toml::from_str("mqtt = \"b\"\nmqtt_tls = true").unwrap();
        assert!(roots.validate().is_ok());
        for (bad, key) in [
            (
                ReadingsConfig {
                    mqtt_user: None,
                    ..c.clone()
                },
                "mqtt_password",
            ),
            (
                ReadingsConfig {
                    mqtt_password: Some(String::new()),
                    ..c.clone()
                },
                "mqtt_password",
            ),
            (
                ReadingsConfig {
                    mqtt_password: Some("hunter2-secret\n".into()),
                    ..c.clone()
                },
                "mqtt_password",
            ),
            (
                ReadingsConfig {
                    mqtt_user: Some(String::new()),
                    ..c.clone()
                },
                "mqtt_user",
            ),
            (
                ReadingsConfig {
                    mqtt_tls: false,
                    ..c.clone()
                },
                "mqtt_ca",
            ),
            (
                ReadingsConfig {
                    mqtt_ca: Some(PathBuf::new()),
                    ..c.clone()
                },
                "mqtt_ca",
            ),
        ] {
            let e = bad.validate().unwrap_err().to_string();
            assert!(e.starts_with(&format!("readings.{key}:")), "{e}");
            assert!(!e.contains("hunter2"), "{e}");
        }
        assert!(toml::from_str::<ReadingsConfig>("mqtt_tls = \"yes\"").is_err());
        assert!(toml::from_str::<ReadingsConfig>("mqtt_pass = \"x\"").is_err());
    }
}
