//! `[mesh]` of the agent's configuration (docs/mesh.md): as a member, the
//! central agent it registers with and takes its share of the mesh plans
//! from; as the central agent, where the mesh plans are and when a silent
//! agent counts as unknown.

use serde::Deserialize;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MeshConfig {
    /// This agent's name in the mesh: the name its token has at the
    /// central agent.
    pub name: Option<String>,
    /// The central agent's API (`https://central:8443`): register there
    /// and run this agent's share of its mesh plans.
    pub central: Option<String>,
    /// A file holding the bearer token the central agent knows this agent by.
    pub token_file: Option<PathBuf>,
    /// PEM certificates to trust for the central agent, instead of the system's.
    pub ca_file: Option<PathBuf>,
    /// Where this agent's sonde server answers, best first (the others
    /// measure toward the first): `HOST`, `HOST:PORT`, `[V6]:PORT` where
    /// it listens on another port than 5201.
    pub addresses: Vec<String>,
    /// Where the agent is, in words (a site, a city).
    pub location: Option<String>,
    /// The prefixes a share may send this agent's tests toward (IPv6
    /// and IPv4); empty: anywhere the central agent says. A share with
    /// a peer outside them is refused, so a central agent that goes bad
    /// cannot aim the mesh at others' networks.
    pub targets: Vec<ipnet::IpNet>,
    /// How often the agent registers again (its heartbeat) and takes its
    /// share anew.
    #[serde(with = "sonde_model::serde_secs")]
    pub every: Duration,
    /// As the central agent: the directory of mesh plans (`*.toml`).
    pub plans: Option<PathBuf>,
    /// As the central agent: an agent not heard for this long is unknown
    /// (its cells in the grid too), not green.
    #[serde(with = "sonde_model::serde_secs")]
    pub unknown_after: Duration,
}

impl Default for MeshConfig {
    fn default() -> Self {
        Self {
            name: None,
            central: None,
            token_file: None,
            ca_file: None,
            addresses: Vec::new(),
            location: None,
            targets: Vec::new(),
            every: Duration::from_secs(10),
            plans: None,
            unknown_after: Duration::from_secs(30),
        }
    }
}

/// Whether `name` may name an agent (it becomes part of campaign names).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

impl MeshConfig {
    /// The one place `[mesh]` is checked: `(key, reason)`.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if self.every < Duration::from_secs(1) {
            return Err(("mesh.every", "must be at least 1s".into()));
        }
        if self.unknown_after < self.every {
            return Err(("mesh.unknown_after", "must be at least mesh.every".into()));
        }
        if let Some(n) = &self.name {
            if !valid_name(n) {
                return Err((
                    "mesh.name",
                    format!("'{n}': use 1 to 64 letters, digits, '-', '_' and '.'"),
                ));
            }
        }
        let Some(central) = &self.central else {
            return Ok(());
        };
        if !(central.starts_with("https://") || central.starts_with("http://")) {
            return Err((
                "mesh.central",
                format!("'{central}': must be an http:// or https:// URL"),
            ));
        }
        if self.name.is_none() {
            return Err(("mesh.name", "a member of a mesh needs a name".into()));
        }
        if self.token_file.is_none() {
            return Err(("mesh.token_file", "a member of a mesh needs a token".into()));
        }
        if self.addresses.is_empty() {
            return Err((
                "mesh.addresses",
                "a member of a mesh needs the address the others measure toward".into(),
            ));
        }
        for a in &self.addresses {
            sonde_model::host_port::split_host_port(a)
                .map_err(|why| ("mesh.addresses", why.to_string()))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(address: &str) -> MeshConfig {
        MeshConfig {
            name: Some("a".into()),
            central: Some("https://central.example:8443".into()),
            token_file: Some("/etc/sonde/mesh.token".into()),
            addresses: vec![address.into()],
            ..MeshConfig::default()
        }
    }

    #[test]
    fn a_members_address_may_name_its_port_and_a_port_that_is_none_is_refused() {
        for ok in [
            "2001:db8::1",
            "[2001:db8::1]:25301",
            "a.example:25301",
            "192.0.2.1",
        ] {
            assert_eq!(member(ok).check(), Ok(()), "{ok}");
        }
        let (key, why) = member("[2001:db8::1]:99999").check().unwrap_err();
        assert_eq!(key, "mesh.addresses");
        assert!(why.contains("'99999' is not a port"), "{why}");
    }
}
