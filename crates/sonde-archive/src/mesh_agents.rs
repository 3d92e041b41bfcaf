//! The mesh's agents as a central agent knows them: each registers (and
//! registers again, as its heartbeat) with its name, addresses and
//! location; the central archive keeps when it was first and last heard.

use crate::sql::Value;
use crate::{ArchiveError, Store};
use serde::{Deserialize, Serialize};

/// What an agent says of itself when it registers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentInfo {
    /// Its name in the mesh (the name its token has).
    pub name: String,
    /// Where its sonde server answers, best first (IPv6 first).
    pub addresses: Vec<String>,
    /// Where it stands, for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// Its sonde version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// A registered agent, and when it was first and last heard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct MeshAgent {
    #[serde(flatten)]
    pub info: AgentInfo,
    /// When it first registered (ns since the Unix epoch).
    pub first_seen_ns: i64,
    /// When it last registered.
    pub last_seen_ns: i64,
}

impl Store {
    /// Registers `agent` (or refreshes it) as heard at `now_ns`.
    pub fn register_agent(&mut self, agent: &AgentInfo, now_ns: i64) -> Result<(), ArchiveError> {
        let addresses = serde_json::to_string(&agent.addresses).unwrap_or_else(|_| "[]".into());
        self.backend.transaction(&mut |tx| {
            tx.execute(
                "INSERT INTO mesh_agents (name, addresses, location, version, first_seen_ns, \
                 last_seen_ns) VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT (name) DO UPDATE SET \
                 addresses = excluded.addresses, location = excluded.location, \
                 version = excluded.version, last_seen_ns = excluded.last_seen_ns",
                &[
                    Value::Text(Some(agent.name.clone())),
                    Value::Text(Some(addresses.clone())),
                    Value::Text(agent.location.clone()),
                    Value::Text(agent.version.clone()),
                    Value::Int(Some(now_ns)),
                ],
            )?;
            Ok(())
        })
    }

    /// Every registered agent, by name.
    pub fn mesh_agents(&mut self) -> Result<Vec<MeshAgent>, ArchiveError> {
        let rows = self.backend.sql().rows(
            "SELECT name, addresses, location, version, first_seen_ns, last_seen_ns \
             FROM mesh_agents ORDER BY name",
            &[],
        )?;
        Ok(rows
            .iter()
            .map(|r| {
                let text = |i: usize| r.get(i).and_then(Value::text).map(str::to_string);
                let int = |i: usize| r.get(i).and_then(Value::int).unwrap_or(0);
                MeshAgent {
                    info: AgentInfo {
                        name: text(0).unwrap_or_default(),
                        addresses: text(1)
                            .and_then(|a| serde_json::from_str(&a).ok())
                            .unwrap_or_default(),
                        location: text(2),
                        version: text(3),
                    },
                    first_seen_ns: int(4),
                    last_seen_ns: int(5),
                }
            })
            .collect())
    }
}
