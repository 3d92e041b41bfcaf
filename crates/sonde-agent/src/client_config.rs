//! `[client]` of the agent's configuration: how the agent's own tests
//! (its campaigns, its share of a mesh) present themselves to the servers
//! they run against.

use serde::Deserialize;
use sonde_model::Credential;
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClientConfig {
    /// A token file (one line `NAME:SECRET`, as `--token-file`) proved to
    /// every sonde server the agent's campaigns test against: peers that
    /// require a token, or give a class by token.
    pub token_file: Option<PathBuf>,
}

impl ClientConfig {
    /// The token, read from its file; `(key, reason)` if it cannot be.
    pub fn token(&self) -> Result<Option<Credential>, (&'static str, String)> {
        let Some(path) = &self.token_file else {
            return Ok(None);
        };
        let text = std::fs::read_to_string(path).map_err(|e| {
            (
                "client.token_file",
                format!("cannot read {}: {e}", path.display()),
            )
        })?;
        Credential::parse(&text)
            .map(Some)
            .map_err(|e| ("client.token_file", format!("{}: {e}", path.display())))
    }
}
