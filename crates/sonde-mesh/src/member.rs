//! An agent as a member of a mesh (`[mesh] central = …`): every
//! `mesh.every` it registers with the central agent (its name, addresses
//! and location: its heartbeat) and takes its share of the mesh plans,
//! which it writes into its campaigns directory for its own scheduler to
//! run. While the central agent is away, the agent goes on running the
//! share it has.

use crate::api_client::ApiClient;
use crate::plan::Share;
use sonde_agent::MeshConfig;
use sonde_archive::AgentInfo;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The central agent's registration endpoint.
pub const REGISTER_PATH: &str = "/api/v1/mesh/register";
/// Where an agent takes its share.
pub const SHARE_PATH: &str = "/api/v1/mesh/share";

/// The first line of every share file this agent writes: only files that
/// start with it are ever replaced or removed by the member.
const MARK: &str = "# mesh-share ";

/// The central agent's answer to `GET /api/v1/mesh/share`.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct ShareReply {
    pub agent: String,
    pub shares: Vec<Share>,
}

/// Why the member cannot start.
#[derive(Debug, thiserror::Error)]
pub enum MemberError {
    #[error("[mesh]: {0}")]
    Config(String),
}

/// Starts the member's thread, if `[mesh] central` is set; `campaigns`
/// is the directory the agent's scheduler runs plans from.
pub fn start(
    config: &MeshConfig,
    campaigns: Option<&Path>,
    stop: &Arc<AtomicBool>,
) -> Result<Option<JoinHandle<()>>, MemberError> {
    let Some(central) = &config.central else {
        return Ok(None);
    };
    let campaigns = campaigns
        .ok_or_else(|| {
            MemberError::Config(
                "a member of a mesh runs its share as campaigns: give --campaigns DIR".into(),
            )
        })?
        .to_path_buf();
    let token_file = config
        .token_file
        .as_deref()
        .ok_or_else(|| MemberError::Config("token_file is missing".into()))?;
    let token = std::fs::read_to_string(token_file)
        .map_err(|e| MemberError::Config(format!("cannot read {}: {e}", token_file.display())))?
        .trim()
        .to_string();
    if token.is_empty() {
        return Err(MemberError::Config(format!(
            "{} is empty",
            token_file.display()
        )));
    }
    let client = ApiClient::new(central, token, config.ca_file.as_deref())
        .map_err(|e| MemberError::Config(e.to_string()))?;
    let info = AgentInfo {
        name: config.name.clone().unwrap_or_default(),
        addresses: config.addresses.clone(),
        location: config.location.clone(),
        version: Some(sonde_model::SONDE_VERSION.to_string()),
    };
    let member = Member {
        client,
        info,
        targets: config.targets.clone(),
        campaigns,
        every: config.every,
        stop: Arc::clone(stop),
    };
    std::thread::Builder::new()
        .name("sonde-mesh-member".into())
        .spawn(move || member.run())
        .map(Some)
        .map_err(|e| MemberError::Config(format!("cannot start a thread: {e}")))
}

struct Member {
    client: ApiClient,
    info: AgentInfo,
    targets: Vec<ipnet::IpNet>,
    campaigns: PathBuf,
    every: Duration,
    stop: Arc<AtomicBool>,
}

impl Member {
    fn run(self) {
        tracing::info!(agent = %self.info.name, "mesh member");
        let mut failing = false;
        while !self.stop.load(Ordering::Relaxed) {
            match self.round() {
                Ok(n) => {
                    if failing {
                        tracing::info!(shares = n, "the central agent answers again");
                    }
                    failing = false;
                }
                Err(e) => {
                    // Said once per outage, not every round.
                    if !failing {
                        tracing::warn!(error = %e, "the central agent: running the share we have");
                    }
                    failing = true;
                }
            }
            let end = Instant::now() + self.every;
            while !self.stop.load(Ordering::Relaxed) && Instant::now() < end {
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }

    /// Registers, then takes the share: how many plans it has.
    fn round(&self) -> Result<usize, String> {
        let body = serde_json::to_vec(&self.info).map_err(|e| e.to_string())?;
        let (status, answer) = self
            .client
            .post_json(REGISTER_PATH, body)
            .map_err(|e| e.to_string())?;
        if !status.is_success() {
            return Err(format!(
                "register: {status}: {}",
                String::from_utf8_lossy(&answer)
            ));
        }
        let (status, answer) = self.client.get(SHARE_PATH).map_err(|e| e.to_string())?;
        if !status.is_success() {
            return Err(format!(
                "share: {status}: {}",
                String::from_utf8_lossy(&answer)
            ));
        }
        let reply: ShareReply =
            serde_json::from_slice(&answer).map_err(|e| format!("share: {e}"))?;
        write_shares(&self.campaigns, &reply.shares, &self.targets).map_err(|e| e.to_string())?;
        Ok(reply.shares.len())
    }
}

/// Why a share may not run here: a peer outside `targets` (when there
/// are any), or an address that is not one.
pub fn outside(share: &Share, targets: &[ipnet::IpNet]) -> Option<String> {
    if targets.is_empty() {
        return None;
    }
    let plan: toml::Table = match toml::from_str(&share.text) {
        Ok(t) => t,
        Err(e) => return Some(format!("it does not read: {}", e.message())),
    };
    let endpoints = plan
        .get("endpoint")
        .and_then(toml::Value::as_array)
        .cloned()
        .unwrap_or_default();
    // The first endpoint is this agent; the others are its peers.
    for e in endpoints.iter().skip(1) {
        let address = e.get("address").and_then(toml::Value::as_str).unwrap_or("");
        match address.parse::<std::net::IpAddr>() {
            Ok(ip) if targets.iter().any(|t| t.contains(&ip.to_canonical())) => {}
            Ok(ip) => return Some(format!("peer {ip} is outside mesh.targets")),
            Err(_) => {
                return Some(format!(
                    "peer '{address}' is not an address in mesh.targets"
                ))
            }
        }
    }
    None
}

/// Makes the share files in `dir` be `shares`: each written (through a
/// temporary file, so the scheduler never reads half of one) where it
/// changed, and share files no longer in it removed. Files this member
/// did not write are never touched; a share aimed outside `targets` is
/// refused.
pub fn write_shares(dir: &Path, shares: &[Share], targets: &[ipnet::IpNet]) -> std::io::Result<()> {
    let mut wanted = BTreeSet::new();
    for share in shares {
        if !sonde_agent::mesh_config::valid_name(&share.name) {
            tracing::warn!(name = %share.name, "a share with a name that is not one: left out");
            continue;
        }
        if let Some(why) = outside(share, targets) {
            tracing::warn!(plan = %share.name, "share refused: {why}");
            continue;
        }
        let file = dir.join(format!("{}.toml", share.name));
        wanted.insert(file.clone());
        let text = format!("{MARK}{}\n{}", share.name, share.text);
        if std::fs::read_to_string(&file).is_ok_and(|t| t == text) {
            continue;
        }
        if file.exists() && !is_share(&file) {
            tracing::warn!(file = %file.display(), "a plan of the same name is there: the share left out");
            continue;
        }
        let part = dir.join(format!(".{}.part", share.name));
        std::fs::write(&part, &text)?;
        std::fs::rename(&part, &file)?;
        tracing::info!(plan = %share.name, "mesh share written");
    }
    for entry in std::fs::read_dir(dir)?.filter_map(Result::ok) {
        let path = entry.path();
        if path.extension().is_some_and(|x| x == "toml")
            && !wanted.contains(&path)
            && is_share(&path)
        {
            std::fs::remove_file(&path)?;
            tracing::info!(file = %path.display(), "mesh share withdrawn");
        }
    }
    Ok(())
}

fn is_share(path: &Path) -> bool {
    std::fs::read_to_string(path).is_ok_and(|t| t.starts_with(MARK))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_written_replaced_and_withdrawn_and_other_plans_left_alone() {
        let dir = std::env::temp_dir().join(format!("sonde-mesh-member-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("own.toml"), "name = \"own\"\n").unwrap();
        std::fs::write(dir.join("mesh-x-a.toml"), "name = \"mine, by hand\"\n").unwrap();
        let share = |name: &str, text: &str| Share {
            name: name.into(),
            text: text.into(),
        };
        write_shares(
            &dir,
            &[share("mesh-backbone-a", "one"), share("mesh-x-a", "two")],
            &[],
        )
        .unwrap();
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
        assert!(read("mesh-backbone-a.toml").ends_with("\none"));
        assert_eq!(
            read("mesh-x-a.toml"),
            "name = \"mine, by hand\"\n",
            "not ours"
        );
        write_shares(&dir, &[share("mesh-backbone-a", "three")], &[]).unwrap();
        assert!(read("mesh-backbone-a.toml").ends_with("\nthree"));
        write_shares(&dir, &[], &[]).unwrap();
        assert!(!dir.join("mesh-backbone-a.toml").exists());
        assert!(dir.join("own.toml").exists());
        assert!(dir.join("mesh-x-a.toml").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_share_aimed_outside_the_targets_is_refused() {
        let text = "name = \"mesh-x-a\"\n[[endpoint]]\nname = \"a\"\naddress = \"2001:db8:1::1\"\n\
                    [[endpoint]]\nname = \"b\"\naddress = \"{peer}\"\n";
        let share = |peer: &str| Share {
            name: "mesh-x-a".into(),
            text: text.replace("{peer}", peer),
        };
        let targets: Vec<ipnet::IpNet> = vec![
            "2001:db8::/32".parse().unwrap(),
            "192.0.2.0/24".parse().unwrap(),
        ];
        assert_eq!(outside(&share("2001:db8:2::1"), &targets), None);
        assert_eq!(outside(&share("::ffff:192.0.2.7"), &targets), None);
        let why = outside(&share("2001:4860::8888"), &targets).unwrap();
        assert!(why.contains("outside mesh.targets"), "{why}");
        let why = outside(&share("victim.example"), &targets).unwrap();
        assert!(why.contains("not an address"), "{why}");
        assert_eq!(
            outside(&share("2001:4860::8888"), &[]),
            None,
            "no targets: anywhere"
        );
    }
}
