//! An agent as a member of a mesh (`[mesh] central = …`): every
//! `mesh.every` it registers with the central agent (its name, addresses
//! and location: its heartbeat) and takes its share of the mesh plans,
//! which it writes into its campaigns directory for its own scheduler to
//! run. While the central agent is away, the agent goes on running the
//! share it has.

use crate::api_client::ApiClient;
use crate::plan::Share;
use crate::MeshConfig;
use sonde_archive::AgentInfo;
use sonde_gate::{Gate, Origin};
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
pub const MARK: &str = "# mesh-share ";

/// The central agent's answer to `GET /api/v1/mesh/share`.
#[derive(Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
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
    gate: &Arc<Gate>,
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
    if config.targets.is_empty() {
        tracing::warn!(
            "mesh.targets is empty: no share will run here; list the prefixes of the \
             mesh's agents there"
        );
    }
    let member = Member {
        client,
        info,
        check: ShareCheck {
            gate: Arc::clone(gate),
            targets: config.targets.clone(),
            own: config.addresses.clone(),
        },
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
    check: ShareCheck,
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
        write_shares(&self.campaigns, &reply.shares, &self.check).map_err(|e| e.to_string())?;
        Ok(reply.shares.len())
    }
}

/// What a share is checked against before it is written: the agent's
/// gate (for a mesh share, every test's target in `mesh.targets`), the
/// targets themselves, and this agent's own addresses.
pub struct ShareCheck {
    pub gate: Arc<Gate>,
    pub targets: Vec<ipnet::IpNet>,
    /// This agent's addresses (`mesh.addresses`): the one endpoint of a
    /// share that is not a target.
    pub own: Vec<String>,
}

impl ShareCheck {
    /// Why a share may not run here, if it may not: a peer endpoint
    /// outside `mesh.targets` (empty: none is inside), or a step the gate
    /// refuses — its host, its URL, a file it names, its limits.
    pub fn refuses(&self, share: &Share) -> Option<String> {
        let plan = match sonde_campaign::Plan::parse(&share.text, &Default::default()) {
            Ok(p) => p,
            Err(e) => return Some(format!("it does not read: {e}")),
        };
        for e in &plan.endpoints {
            // This agent's own end: its address and its port (5201 where
            // none is written), both. Another port of its own host is a
            // peer like any other, checked against mesh.targets: a share
            // cannot aim this agent at its own other services.
            let port = |p: Option<u16>| p.unwrap_or(5201);
            let own = self.own.iter().any(|a| {
                sonde_model::host_port::split_host_port(a)
                    .is_ok_and(|(host, p)| host == e.address && port(p) == port(e.port))
            });
            if own {
                continue;
            }
            if let Some(out) = sonde_gate::consent::outside(&e.address, &self.targets) {
                return Some(format!(
                    "endpoint {}: {out} is outside mesh.targets (rule: consent)",
                    e.name
                ));
            }
            // An agent that leads the endpoint's steps is one more address
            // this member would connect to.
            if let Some(agent) = &e.agent {
                let host = agent_host(agent);
                if let Some(out) = sonde_gate::consent::outside(host, &self.targets) {
                    return Some(format!(
                        "endpoint {}: its agent {out} is outside mesh.targets (rule: consent)",
                        e.name
                    ));
                }
            }
        }
        for (i, step) in plan.steps.iter().enumerate() {
            if let Err(r) = self.gate.check(&Origin::Mesh, &step.body) {
                return Some(format!("step {} ({}): {r}", i + 1, step.name));
            }
        }
        None
    }
}

/// The host of an agent's `HOST[:PORT]` (`[v6]:port`, `v6`, `name:port`).
fn agent_host(agent: &str) -> &str {
    if let Some(rest) = agent.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match agent.matches(':').count() {
        1 => agent.split(':').next().unwrap_or(agent),
        _ => agent,
    }
}

/// Makes the share files in `dir` be `shares`: each written (through a
/// temporary file, so the scheduler never reads half of one) where it
/// changed, and share files no longer in it removed. Files this member
/// did not write are never touched; a share `check` refuses is left out,
/// and its refusal logged.
pub fn write_shares(dir: &Path, shares: &[Share], check: &ShareCheck) -> std::io::Result<()> {
    let mut wanted = BTreeSet::new();
    for share in shares {
        if !crate::mesh_config::valid_name(&share.name) {
            tracing::warn!(name = %share.name, "a share with a name that is not one: left out");
            continue;
        }
        if let Some(why) = check.refuses(share) {
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

    fn check(targets: &[&str]) -> ShareCheck {
        let targets: Vec<ipnet::IpNet> = targets.iter().map(|t| t.parse().unwrap()).collect();
        ShareCheck {
            gate: Gate::new(
                sonde_server::Limits::default(),
                sonde_gate::TargetsConfig::default(),
                targets.clone(),
            ),
            targets,
            own: vec!["2001:db8:1::1".into()],
        }
    }

    const PLAN: &str = "name = \"mesh-x-a\"\n[schedule]\nrepeat = \"PT1H\"\n[[endpoint]]\nname = \"a\"\naddress = \"2001:db8:1::1\"\n\
                        [[endpoint]]\nname = \"b\"\naddress = \"{peer}\"\n\
                        [[step]]\nfrom = \"a\"\nto = \"b\"\ntest = \"ping\"\ncount = 3\n";

    fn share(name: &str, text: &str) -> Share {
        Share {
            name: name.into(),
            text: text.into(),
        }
    }

    #[test]
    fn shares_are_written_replaced_and_withdrawn_and_other_plans_left_alone() {
        let dir = std::env::temp_dir().join(format!("sonde-mesh-member-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("own.toml"), "name = \"own\"\n").unwrap();
        std::fs::write(dir.join("mesh-x-a.toml"), "name = \"mine, by hand\"\n").unwrap();
        let ok = check(&["2001:db8::/32"]);
        let one = PLAN.replace("{peer}", "2001:db8:2::1");
        let two = one.replace("count = 3", "count = 4");
        write_shares(
            &dir,
            &[share("mesh-backbone-a", &one), share("mesh-x-a", &one)],
            &ok,
        )
        .unwrap();
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
        assert!(read("mesh-backbone-a.toml").ends_with(&one));
        assert_eq!(
            read("mesh-x-a.toml"),
            "name = \"mine, by hand\"\n",
            "not ours"
        );
        write_shares(&dir, &[share("mesh-backbone-a", &two)], &ok).unwrap();
        assert!(read("mesh-backbone-a.toml").ends_with(&two));
        write_shares(&dir, &[], &ok).unwrap();
        assert!(!dir.join("mesh-backbone-a.toml").exists());
        assert!(dir.join("own.toml").exists());
        assert!(dir.join("mesh-x-a.toml").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_agent_on_another_port_is_its_own_end_and_its_peer_is_reached_there() {
        let mut c = check(&["2001:db8:2::/48"]);
        c.own = vec!["[2001:db8:1::1]:25301".into()];
        let text = PLAN
            .replace(
                "address = \"2001:db8:1::1\"",
                "address = \"[2001:db8:1::1]:25301\"",
            )
            .replace("{peer}", "[2001:db8:2::1]:25302");
        assert_eq!(c.refuses(&share("mesh-x-a", &text)), None);
        let plan = sonde_campaign::Plan::parse(&text, &Default::default()).unwrap();
        assert_eq!(plan.endpoints[1].port, Some(25302));
        // Its own host on another port is not its own end: a hostile
        // central aiming it at its own ssh is refused, naming the rule.
        let aimed = text.replace("[2001:db8:2::1]:25302", "[2001:db8:1::1]:22");
        let why = c.refuses(&share("mesh-x-a", &aimed)).unwrap();
        assert!(
            why.contains("endpoint b") && why.contains("consent"),
            "{why}"
        );
        // Nor is its end with the port left out of mesh.addresses (5201).
        c.own = vec!["2001:db8:1::1".into()];
        let why = c.refuses(&share("mesh-x-a", &text)).unwrap();
        assert!(
            why.contains("endpoint a") && why.contains("consent"),
            "{why}"
        );
    }

    #[test]
    fn a_share_aimed_outside_the_targets_is_refused() {
        let c = check(&["2001:db8::/32", "192.0.2.0/24"]);
        let with = |peer: &str| share("mesh-x-a", &PLAN.replace("{peer}", peer));
        assert_eq!(c.refuses(&with("2001:db8:2::1")), None);
        assert_eq!(c.refuses(&with("::ffff:192.0.2.7")), None);
        let why = c.refuses(&with("2001:4860::8888")).unwrap();
        assert!(why.contains("outside mesh.targets"), "{why}");
        let why = c.refuses(&with("victim.invalid")).unwrap();
        assert!(why.contains("victim.invalid"), "{why}");
        // Empty targets: nothing is inside.
        let why = check(&[]).refuses(&with("2001:db8:2::1")).unwrap();
        assert!(why.contains("outside mesh.targets"), "{why}");
        // A step's own host, not its endpoint's.
        let aimed = PLAN
            .replace("{peer}", "2001:db8:2::1")
            .replace("count = 3", "count = 3\nhost = \"127.0.0.1\"");
        let why = c.refuses(&share("mesh-x-a", &aimed)).unwrap();
        assert!(why.contains("step 1") && why.contains("127.0.0.1"), "{why}");
        // A file on the agent.
        let file = PLAN.replace("{peer}", "2001:db8:2::1").replace(
            "test = \"ping\"\ncount = 3",
            "test = \"http\"\nurl = \"http://[2001:db8:2::1]/\"\nbody_file = \"/etc/passwd\"",
        );
        let why = c.refuses(&share("mesh-x-a", &file)).unwrap();
        assert!(why.contains("no_files"), "{why}");
        // An endpoint led by an agent elsewhere.
        let led = PLAN.replace("{peer}", "2001:db8:2::1").replace(
            "address = \"2001:db8:2::1\"\n",
            "address = \"2001:db8:2::1\"\nagent = \"[2001:4860::1]:5201\"\n",
        );
        let why = c.refuses(&share("mesh-x-a", &led)).unwrap();
        assert!(why.contains("its agent 2001:4860::1"), "{why}");
        assert_eq!(agent_host("[::1]:5201"), "::1");
        assert_eq!(agent_host("::1"), "::1");
        assert_eq!(agent_host("agent.example:5201"), "agent.example");
    }
}
