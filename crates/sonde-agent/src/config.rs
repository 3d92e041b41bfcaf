//! The daemon's configuration: the whole serve file (`sonde serve --config
//! FILE`), one typed document whose sections are each defined, with their
//! checks, by the crate that uses them: the endpoint's (`bind`, `port`,
//! `[limits]`, `[reflector]`, `[auth]`) by sonde-server, `[http]` by
//! sonde-web, `[mesh]` and `[[forward]]` by sonde-mesh, `[readings]` by
//! sonde-readings, `[[snmp]]` by sonde-snmp, `[[alert]]` by sonde-alerts, `[smtp]` by
//! sonde-incidents, `[targets]` by sonde-gate, `[client]` and `[archive]`
//! here. Read once,
//! overridden by flags, checked once by [`AgentConfig::validate`]. Every
//! key is documented in `docs/serve.md`.

use crate::client_config::ClientConfig;
use serde::Deserialize;
use sonde_server::auth_config::AuthConfig;
use sonde_server::{ConfigError, Limits, ReflectorConfig, ServerConfig};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// What checking a configuration built, for the daemon to use as is.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The `[[alert]]` rules.
    pub rules: Vec<sonde_alerts::Rule>,
    /// `[smtp]`'s mailer, if there is one.
    pub mailer: Option<sonde_incidents::Mailer>,
}

/// Everything `sonde serve` runs with.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentConfig {
    /// Addresses to listen on; empty: every address, IPv6 and IPv4.
    pub bind: Vec<IpAddr>,
    pub port: u16,
    pub limits: Limits,
    pub reflector: ReflectorConfig,
    /// Tokens, limit classes and the audit log (`[auth]`).
    pub auth: AuthConfig,
    /// The HTTP API and portal (`[http]`).
    pub http: sonde_web::HttpConfig,
    /// Central archives this agent forwards its results to (`[[forward]]`).
    pub forward: Vec<sonde_mesh::ForwardConfig>,
    /// The mesh: as a member or as the central agent (`[mesh]`).
    pub mesh: sonde_mesh::MeshConfig,
    /// How the agent's own tests present themselves (`[client]`).
    pub client: ClientConfig,
    /// Alert rules on archived metrics (`[[alert]]`, docs/alerts.md).
    pub alert: Vec<sonde_alerts::RuleConfig>,
    /// Readings from probes: the MQTT broker and topics (`[readings]`).
    pub readings: sonde_readings::ReadingsConfig,
    /// Routers whose interface counters are polled over SNMP (`[[snmp]]`,
    /// docs/snmp.md).
    pub snmp: Vec<sonde_snmp::SnmpTarget>,
    /// The mail server alert notices and incident mail go through
    /// (`[smtp]`).
    pub smtp: Option<sonde_incidents::SmtpConfig>,
    /// Where requests from elsewhere than the command line may aim pings
    /// and HTTP loads (`[targets]`; empty: nowhere).
    pub targets: sonde_gate::TargetsConfig,
    /// Keys such requests may name (`[keys]`, `name = "/path/to/key"`):
    /// authenticated STAMP without naming a file.
    pub keys: BTreeMap<String, PathBuf>,
    /// The archive's upkeep: retention by whole months (`[archive]`).
    pub archive: crate::archive_upkeep::ArchiveConfig,
}

impl Default for AgentConfig {
    fn default() -> Self {
        let server = ServerConfig::default();
        Self {
            bind: server.bind,
            port: server.port,
            limits: server.limits,
            reflector: server.reflector,
            auth: server.auth,
            http: sonde_web::HttpConfig::default(),
            forward: Vec::new(),
            mesh: sonde_mesh::MeshConfig::default(),
            client: ClientConfig::default(),
            alert: Vec::new(),
            readings: sonde_readings::ReadingsConfig::default(),
            snmp: Vec::new(),
            smtp: None,
            targets: sonde_gate::TargetsConfig::default(),
            keys: BTreeMap::new(),
            archive: crate::archive_upkeep::ArchiveConfig::default(),
        }
    }
}

impl AgentConfig {
    /// Parses a TOML document; `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<Self, ConfigError> {
        sonde_server::config::from_toml(text, origin)
    }

    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        sonde_server::config::from_file(path)
    }

    /// The test endpoint's part.
    pub fn server(&self) -> ServerConfig {
        ServerConfig {
            bind: self.bind.clone(),
            port: self.port,
            limits: self.limits.clone(),
            reflector: self.reflector.clone(),
            auth: self.auth.clone(),
        }
    }

    /// The one place the whole configuration is checked: the endpoint's
    /// part by sonde-server, each other section by its own crate's check.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.check().map(drop)
    }

    /// [`AgentConfig::validate`], keeping what checking built: the alert
    /// rules and the mailer, so that the daemon parses and builds each
    /// once.
    pub fn check(&self) -> Result<Checked, ConfigError> {
        self.server().validate()?;
        let invalid = |key, reason: String| Err(ConfigError::Invalid { key, reason });
        for (name, path) in &self.keys {
            let probe = sonde_model::PingSpec {
                host: "::1".into(),
                proto: sonde_model::PingProto::Udp,
                key: Some(name.clone()),
                ..sonde_model::PingSpec::default()
            };
            if let Err(e) = probe.validate() {
                return invalid("keys", format!("'{name}': {}", e.reason));
            }
            if let Err(e) = std::fs::metadata(path) {
                return invalid("keys", format!("'{name}': {}: {e}", path.display()));
            }
        }
        let pair = |(key, reason)| ConfigError::Invalid { key, reason };
        self.targets
            .validate()
            .map_err(|reason| ConfigError::Invalid {
                key: "targets.http",
                reason,
            })?;
        self.mesh.check().map_err(pair)?;
        self.archive.check().map_err(pair)?;
        self.client.token().map_err(pair)?;
        let mut names = std::collections::BTreeSet::new();
        for f in &self.forward {
            f.check().map_err(pair)?;
            if !names.insert(f.name.as_str()) {
                return invalid("forward.name", format!("{} is named twice", f.name));
            }
        }
        let rules = sonde_alerts::rules(&self.alert).map_err(|e| ConfigError::Entry {
            table: "alert",
            name: e.rule,
            key: e.key,
            why: e.why,
        })?;
        let mails = rules.iter().any(|r| {
            r.deliveries
                .iter()
                .any(|d| matches!(d, sonde_alerts::Delivery::Email { .. }))
        });
        if mails && self.smtp.is_none() {
            return invalid(
                "smtp",
                "an alert sends email: give [smtp] server and from".into(),
            );
        }
        let mailer = self
            .smtp
            .as_ref()
            .map(sonde_incidents::Mailer::new)
            .transpose()
            .map_err(|e| ConfigError::Invalid {
                key: "smtp",
                reason: e.to_string(),
            })?;
        self.http.check().map_err(pair)?;
        sonde_snmp::validate_all(&self.snmp).map_err(|e| ConfigError::Entry {
            table: "snmp",
            name: e.target,
            key: e.key,
            why: e.reason,
        })?;
        Ok(Checked { rules, mailer })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alerts_with_mail_need_smtp_and_take_it() {
        let text = "[[alert]]\nname = \"lossy\"\nmetric = \"loss_pct\"\nabove = 1.0\nfor = 3\n\
                    clear = 0.5\nnotify = [\"log\", \"email\", \"incident\"]\n\
                    email = [\"noc@example.net\"]\n";
        let c = AgentConfig::from_toml(text, "t").unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert!(e.starts_with("smtp:"), "{e}");
        let c = AgentConfig::from_toml(
            &format!(
                "{text}[smtp]\nserver = \"mail.example.net:25\"\nfrom = \"sonde <sonde@example.net>\"\n"
            ),
            "t",
        )
        .unwrap();
        c.validate().unwrap();
        assert_eq!(c.alert.len(), 1);
        let c = AgentConfig::from_toml("[[alert]]\nname = \"x\"\nmetric = \"loss_pct\"\n", "t")
            .unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("alert 'x'"), "{e}");
    }

    #[test]
    fn an_snmp_target_is_checked_by_its_crate_and_named() {
        let text = "[[snmp]]\nname = \"r1\"\naddress = \"10.0.0.1\"\nversion = \"3\"\n";
        let e = AgentConfig::from_toml(text, "t")
            .unwrap()
            .validate()
            .unwrap_err();
        assert_eq!(e.to_string(), "snmp 'r1': user: version \"3\" needs a user");
        let ok = "[[snmp]]\nname = \"r1\"\naddress = \"10.0.0.1\"\ncommunity = \"c\"\n";
        let c = AgentConfig::from_toml(ok, "t").unwrap();
        c.validate().unwrap();
        assert_eq!(c.snmp[0].name, "r1");
    }

    #[test]
    fn the_endpoints_keys_are_checked_by_the_endpoint() {
        let c = AgentConfig::from_toml("[limits]\nallow = []\n", "t.toml").unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("limits.allow"), "{e}");
        let e = AgentConfig::from_toml("[limits]\nmax_streems = 3\n", "t.toml").unwrap_err();
        assert!(e.to_string().contains("max_streems"), "{e}");
    }
}
