//! `[readings]` of the agent's configuration: readings from probes
//! (docs/readings.md).
//!
//! ```toml
//! [readings]
//! mqtt = "127.0.0.1:1883"        # the broker; absent: no MQTT (the API still takes readings)
//! topic = "sonde/readings/#"     # the filter subscribed to; topics end in /<probe>/<metric>
//! client_id = "sonde-agent-1"    # default: sonde-<hostname>-<pid>
//! ```

use serde::Deserialize;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
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
}

impl Default for ReadingsConfig {
    fn default() -> Self {
        Self {
            mqtt: None,
            topic: "sonde/readings/#".into(),
            client_id: None,
        }
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
}
