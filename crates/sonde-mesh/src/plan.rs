//! Mesh plans (docs/mesh.md): who measures whom, in the campaign format.
//!
//! A mesh plan is a campaign plan without endpoints, whose steps have no
//! `from` or `to`, and a `[mesh]` table that says which agents pair up:
//! every pair (`all-pairs`), each agent with a hub (`star`), or each agent
//! of one side with each of the other (`disjoint`). For each pair one side
//! leads: it runs the steps toward the other, whose server's limits apply.
//! With `lead = "both"` each side leads its own direction, as the
//! GEANT/sTESTA battery ran (000 §3).
//!
//! The central agent cuts a plan into shares: an agent's share is an
//! ordinary campaign plan (`mesh-PLAN-AGENT`) with the agent as its first
//! endpoint and a step per pair it leads and step of the plan. The agent
//! runs it through its own scheduler.

use serde::Deserialize;
use sonde_archive::MeshAgent;
use sonde_campaign::{Endpoint, WrittenPlan};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Why a mesh plan cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{plan}: {why}")]
pub struct PlanError {
    pub plan: String,
    pub why: String,
}

/// How agents pair up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Group {
    /// `all-pairs`; `all_pairs` is read as it too.
    #[serde(alias = "all_pairs")]
    AllPairs,
    Star,
    Disjoint,
}

/// Who leads a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Lead {
    /// One side: in `all-pairs` the agent listed first, in `star` the
    /// spoke, in `disjoint` side A.
    #[default]
    First,
    /// Each side leads its own direction.
    Both,
}

/// The `[mesh]` table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeshSpec {
    /// The agents, by name; empty: every registered agent, by name.
    #[serde(default)]
    pub agents: Vec<String>,
    pub group: Group,
    /// `star`: the hub.
    #[serde(default)]
    pub hub: Option<String>,
    /// `disjoint`: the two sides.
    #[serde(default)]
    pub side_a: Vec<String>,
    #[serde(default)]
    pub side_b: Vec<String>,
    #[serde(default)]
    pub lead: Lead,
}

/// The `[mesh]` table alone, read from the whole text (the rest of the
/// file is a campaign plan's, read by its own reader).
#[derive(Deserialize)]
struct MeshView {
    mesh: Option<MeshSpec>,
}

/// A mesh plan as read.
#[derive(Debug, Clone)]
pub struct MeshPlan {
    pub name: String,
    pub mesh: MeshSpec,
    /// The rest of the file (name, description, labels, scale,
    /// schedule, steps), carried into each share.
    rest: WrittenPlan,
}

impl MeshPlan {
    /// Reads a mesh plan from TOML and checks it by cutting a share for
    /// each of its agents as if all were registered.
    pub fn parse(text: &str) -> Result<Self, PlanError> {
        let mut rest = WrittenPlan::read(text).map_err(|why| PlanError {
            plan: "?".into(),
            why,
        })?;
        let name = rest.name.clone();
        let bad = |why: String| PlanError {
            plan: if name.is_empty() {
                "?".into()
            } else {
                name.clone()
            },
            why,
        };
        if !crate::mesh_config::valid_name(&name) {
            return Err(bad(format!(
                "name '{name}': use 1 to 64 letters, digits, '-', '_' and '.'"
            )));
        }
        // Read from the text, so that a mistake in [mesh] has its line.
        let view: MeshView =
            toml::from_str(text).map_err(|e| bad(e.to_string().trim_end().replace('\n', " ")))?;
        let mesh = view
            .mesh
            .ok_or_else(|| bad("no [mesh] table: who measures whom".into()))?;
        rest.mesh = None;
        if !rest.endpoints.is_empty() {
            return Err(bad(
                "a mesh plan has no [[endpoint]]: the agents are its endpoints".into(),
            ));
        }
        if rest.steps.is_empty() {
            return Err(bad("no [[step]]".into()));
        }
        if rest
            .steps
            .iter()
            .any(|step| step.contains_key("from") || step.contains_key("to"))
        {
            return Err(bad(
                "a mesh plan's steps have no from or to: each pair gets every step".into(),
            ));
        }
        let plan = Self {
            name: name.clone(),
            mesh,
            rest,
        };
        plan.check_group().map_err(|(key, why)| {
            use sonde_model::toml_where::{line_of, Step};
            match line_of(text, &[Step::Key("mesh"), Step::Key(key)]) {
                Some(line) => bad(format!("line {line}: {why}")),
                None => bad(why),
            }
        })?;
        // Every agent the plan names, registered at a documentation
        // address: each share must be a campaign plan that reads.
        let mut named: BTreeSet<String> = plan
            .mesh
            .agents
            .iter()
            .chain(&plan.mesh.side_a)
            .chain(&plan.mesh.side_b)
            .chain(&plan.mesh.hub)
            .cloned()
            .collect();
        if plan.mesh.agents.is_empty() {
            // Every registered agent takes part: two stand for them.
            named.extend(["stand-in-1".to_string(), "stand-in-2".to_string()]);
        }
        let stand_ins: Vec<MeshAgent> = named
            .iter()
            .enumerate()
            .map(|(i, n)| stand_in(n, &format!("2001:db8::{:x}", i + 1)))
            .collect();
        for me in &named {
            if let Some(share) = plan.share(me, &stand_ins) {
                sonde_campaign::Plan::parse(&share.text, &sonde_campaign::Overrides::default())
                    .map_err(|e| bad(format!("the share of {me}: {e}")))?;
            }
        }
        Ok(plan)
    }

    /// Whether the group holds together: the key at fault and why not.
    fn check_group(&self) -> Result<(), (&'static str, String)> {
        let m = &self.mesh;
        for (key, names) in [
            ("agents", &m.agents),
            ("side_a", &m.side_a),
            ("side_b", &m.side_b),
        ] {
            if let Some(n) = names.iter().find(|n| !crate::mesh_config::valid_name(n)) {
                return Err((key, format!("[mesh]: {key}: agent name '{n}' is not one")));
            }
        }
        if let Some(h) = m
            .hub
            .as_ref()
            .filter(|h| !crate::mesh_config::valid_name(h))
        {
            return Err(("hub", format!("[mesh]: hub: agent name '{h}' is not one")));
        }
        match m.group {
            Group::AllPairs => Ok(()),
            Group::Star => match &m.hub {
                None => Err(("group", "[mesh]: a star needs its hub".into())),
                Some(h) if !m.agents.is_empty() && !m.agents.contains(h) => Err((
                    "hub",
                    format!("[mesh]: the hub {h} is not among the agents"),
                )),
                Some(_) => Ok(()),
            },
            Group::Disjoint => {
                if m.side_a.is_empty() || m.side_b.is_empty() {
                    return Err(("group", "[mesh]: disjoint needs side_a and side_b".into()));
                }
                if let Some(both) = m.side_a.iter().find(|a| m.side_b.contains(a)) {
                    return Err(("side_b", format!("[mesh]: {both} is on both sides")));
                }
                Ok(())
            }
        }
    }

    /// The pairs `(leader, peer)` among `registered` agents.
    pub fn pairs(&self, registered: &[String]) -> Vec<(String, String)> {
        let m = &self.mesh;
        let members: Vec<String> = if m.agents.is_empty() {
            let mut all = registered.to_vec();
            all.sort();
            all
        } else {
            m.agents.clone()
        };
        let mut out = Vec::new();
        let mut pair = |a: &String, b: &String| {
            if a != b {
                out.push((a.clone(), b.clone()));
                if m.lead == Lead::Both {
                    out.push((b.clone(), a.clone()));
                }
            }
        };
        match m.group {
            Group::AllPairs => {
                for (i, a) in members.iter().enumerate() {
                    for b in &members[i + 1..] {
                        pair(a, b);
                    }
                }
            }
            Group::Star => {
                if let Some(hub) = &m.hub {
                    for spoke in members.iter().filter(|s| *s != hub) {
                        pair(spoke, hub);
                    }
                }
            }
            Group::Disjoint => {
                for a in &m.side_a {
                    for b in &m.side_b {
                        pair(a, b);
                    }
                }
            }
        }
        out
    }

    /// The share of agent `me`: the campaign plan of the pairs it leads
    /// toward registered peers; `None` if it leads none (or is not
    /// registered itself).
    pub fn share(&self, me: &str, agents: &[MeshAgent]) -> Option<Share> {
        let address = |name: &str| {
            agents
                .iter()
                .find(|a| a.info.name == name)
                .and_then(|a| a.info.addresses.first().cloned())
        };
        let mine = address(me)?;
        let names: Vec<String> = agents.iter().map(|a| a.info.name.clone()).collect();
        let peers: Vec<(String, String)> = self
            .pairs(&names)
            .into_iter()
            .filter(|(lead, _)| lead == me)
            .filter_map(|(_, peer)| address(&peer).map(|a| (peer, a)))
            .collect();
        if peers.is_empty() {
            return None;
        }
        let name = format!("mesh-{}-{me}", self.name);
        let mut plan = self.rest.clone();
        plan.name = name.clone();
        plan.labels.insert("mesh".into(), self.name.clone());
        let endpoint = |n: &str, a: &str| Endpoint {
            name: n.to_string(),
            address: a.to_string(),
            port: None,
            agent: None,
        };
        plan.endpoints = vec![endpoint(me, &mine)];
        plan.endpoints
            .extend(peers.iter().map(|(p, a)| endpoint(p, a)));
        plan.steps = Vec::new();
        for (peer, _) in &peers {
            for (i, step) in self.rest.steps.iter().enumerate() {
                let mut s = step.clone();
                let base = s
                    .get("name")
                    .and_then(toml::Value::as_str)
                    .map_or_else(|| format!("step {}", i + 1), str::to_string);
                s.insert("name".into(), format!("{base}: {me} to {peer}").into());
                s.insert("from".into(), me.into());
                s.insert("to".into(), peer.as_str().into());
                plan.steps.push(s);
            }
        }
        let text = format!(
            "# {name}: {me}'s share of the mesh plan {}, from the central agent.\n{}",
            self.name,
            plan.to_toml()
        );
        Some(Share { name, text })
    }
}

/// One agent's share of a mesh plan: a campaign plan.
#[derive(
    Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct Share {
    /// The campaign's name, `mesh-PLAN-AGENT`.
    pub name: String,
    /// The campaign plan, TOML.
    pub text: String,
}

fn stand_in(name: &str, address: &str) -> MeshAgent {
    MeshAgent {
        info: sonde_archive::AgentInfo {
            name: name.to_string(),
            addresses: vec![address.to_string()],
            location: None,
            version: None,
        },
        first_seen_ns: 0,
        last_seen_ns: 0,
    }
}

/// Every mesh plan (`*.toml`) in `dir`, by file; and the files that do
/// not read, with why.
pub fn load_dir(dir: &Path) -> (Vec<MeshPlan>, Vec<(PathBuf, String)>) {
    let mut plans = Vec::new();
    let mut errors = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        errors.push((dir.to_path_buf(), "cannot be read".to_string()));
        return (plans, errors);
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    for p in paths {
        match std::fs::read_to_string(&p)
            .map_err(|e| e.to_string())
            .and_then(|t| MeshPlan::parse(&t).map_err(|e| e.to_string()))
        {
            Ok(plan) => plans.push(plan),
            Err(e) => errors.push((p, e)),
        }
    }
    (plans, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = r#"
name = "backbone"
labels = { network = "lab" }
[schedule]
repeat = "PT10S"
[mesh]
group = "all-pairs"
[[step]]
name = "rtt"
test = "ping"
count = 3
interval_s = 0.1
"#;

    fn registry(names: &[&str]) -> Vec<MeshAgent> {
        names
            .iter()
            .enumerate()
            .map(|(i, n)| stand_in(n, &format!("2001:db8::{}", i + 1)))
            .collect()
    }

    fn with_mesh(mesh: &str) -> String {
        PLAN.replace("group = \"all-pairs\"", mesh)
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn all_pairs_star_and_disjoint_pair_up_as_named() {
        let all = MeshPlan::parse(PLAN).unwrap();
        let four = names(&["d", "b", "a", "c"]);
        let p = all.pairs(&four);
        assert_eq!(p.len(), 6, "every pair once: {p:?}");
        assert!(p.contains(&("a".into(), "d".into())));
        assert!(!p.contains(&("d".into(), "a".into())));

        let both = MeshPlan::parse(&with_mesh("group = \"all-pairs\"\nlead = \"both\"")).unwrap();
        assert_eq!(both.pairs(&four).len(), 12);

        let star = MeshPlan::parse(&with_mesh("group = \"star\"\nhub = \"a\"")).unwrap();
        let p = star.pairs(&four);
        assert_eq!(p.len(), 3);
        assert!(
            p.iter().all(|(lead, peer)| peer == "a" && lead != "a"),
            "{p:?}"
        );

        let disjoint = MeshPlan::parse(&with_mesh(
            "group = \"disjoint\"\nside_a = [\"a\", \"b\"]\nside_b = [\"c\"]\nlead = \"both\"",
        ))
        .unwrap();
        let p = disjoint.pairs(&four);
        assert_eq!(p.len(), 4, "{p:?}");
        assert!(p.contains(&("c".into(), "b".into())));
    }

    #[test]
    fn a_share_is_a_campaign_of_the_pairs_an_agent_leads() {
        let plan = MeshPlan::parse(PLAN).unwrap();
        let agents = registry(&["a", "b", "c"]);
        let share = plan.share("a", &agents).unwrap();
        assert_eq!(share.name, "mesh-backbone-a");
        let campaign =
            sonde_campaign::Plan::parse(&share.text, &sonde_campaign::Overrides::default())
                .unwrap();
        assert_eq!(campaign.endpoints[0].name, "a");
        assert_eq!(campaign.endpoints[0].address, "2001:db8::1");
        assert_eq!(campaign.steps.len(), 2, "a leads a-b and a-c");
        assert!(campaign.steps.iter().all(|s| s.from == "a"));
        assert_eq!(
            campaign.labels.get("mesh").map(String::as_str),
            Some("backbone")
        );
        assert_eq!(
            campaign.labels.get("network").map(String::as_str),
            Some("lab")
        );
        // c leads nothing in all-pairs (it is listed last); an agent not
        // registered has no share.
        assert!(plan.share("c", &agents).is_none());
        assert!(plan.share("z", &agents).is_none());
        // A peer not registered yet is left out until it is.
        let b = plan.share("b", &registry(&["a", "b"])).is_none();
        assert!(b, "b leads toward c only, and c is not registered");
    }

    #[test]
    fn plans_that_cannot_work_are_refused_by_name() {
        let cases = [
            (
                PLAN.replace("[mesh]\ngroup = \"all-pairs\"\n", ""),
                "no [mesh]",
            ),
            (with_mesh("group = \"ring\""), "ring"),
            (with_mesh("group = \"star\""), "hub"),
            (
                with_mesh("group = \"disjoint\"\nside_a = [\"a\"]\nside_b = [\"a\"]"),
                "both sides",
            ),
            (
                PLAN.replace("test = \"ping\"", "test = \"ping\"\nto = \"b\""),
                "no from or to",
            ),
            (
                PLAN.replace("count = 3", "count = \"x\""),
                "step 1: count: invalid type",
            ),
            (
                with_mesh("group = \"all-pairs\"\nagents = [\"a\", \"b c\"]"),
                "not one",
            ),
        ];
        for (text, expect) in cases {
            let e = match MeshPlan::parse(&text) {
                Ok(_) => panic!("accepted, expected an error with {expect}"),
                Err(e) => e.to_string(),
            };
            assert!(e.contains(expect), "{e} (expected {expect})");
        }
    }

    #[test]
    fn a_mesh_mistake_names_its_line_key_and_what_is_accepted() {
        // The PLAN's [mesh] is on line 6 and its group on line 7.
        let e = MeshPlan::parse(&with_mesh("group = \"allpairs\""))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 7") && e.contains("`all-pairs`, `all_pairs`, `star`, `disjoint`"),
            "{e}"
        );
        assert!(MeshPlan::parse(&with_mesh("group = \"all_pairs\"")).is_ok());
        let e = MeshPlan::parse(&with_mesh("group = \"star\""))
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 7: [mesh]: a star needs its hub"), "{e}");
        let e = MeshPlan::parse(&with_mesh("group = \"all-pairs\"\nlead = \"second\""))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 8") && e.contains("`first` or `both`"),
            "{e}"
        );
    }
}
