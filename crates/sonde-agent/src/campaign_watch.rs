//! `sonde serve --campaigns DIR`: every plan (`*.toml`) in DIR runs on its
//! own scheduler thread, against the daemon's archive. DIR is read again
//! every few seconds: a changed plan is taken by its scheduler between
//! runs, a removed one retires after its run in progress, a new one
//! starts. A plan that does not read is logged with its error and left
//! alone until it changes. On shutdown every scheduler stops; a run in
//! progress is kept as interrupted.

use sonde_archive::Store;
use sonde_campaign::Runners;
use sonde_campaign::{read_plan, which_endpoint, HostRunners};
use sonde_campaign::{Control, Overrides, Progress, Scheduler};
use sonde_gate::{Gate, GatedRunner, Origin};
use sonde_model::Credential;
use sonde_run::{LocalRunner, Runner, TokenRunner};
use sonde_web::{LiveBus, LiveRunner};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often DIR is read again.
const RESCAN: Duration = Duration::from_secs(2);

struct Running {
    text: String,
    retired: bool,
    control: Arc<Control>,
    thread: std::thread::JoinHandle<()>,
}

/// Starts the watcher of `dir`; it stops every scheduler once `shutdown`
/// is set, and its handle joins them. `token` (`[client] token_file`) is
/// proved to the servers the campaigns' tests run against.
pub fn spawn(
    dir: PathBuf,
    archive: String,
    live: Arc<LiveBus>,
    token: Option<Credential>,
    gate: Arc<Gate>,
    shutdown: Arc<AtomicBool>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let runners = AgentRunners {
        live,
        token,
        gate,
        origin: Origin::OperatorPlan,
    };
    std::thread::Builder::new()
        .name("sonde-campaigns".into())
        .spawn(move || watch(&dir, &archive, &runners, &shutdown))
}

/// Where a plan came from, by its first line: written through the API,
/// a mesh share, or the operator's own.
pub fn origin_of(text: &str) -> Origin {
    if text.starts_with(sonde_campaign::API_MARK) {
        Origin::ApiCampaign
    } else if text.starts_with(sonde_mesh::member::MARK) {
        Origin::Mesh
    } else {
        Origin::OperatorPlan
    }
}

/// The command line's runners, with this host's tests shown live and the
/// agent's token proved where it has one; every test passes the agent's
/// gate for the plan's origin.
#[derive(Clone)]
struct AgentRunners {
    live: Arc<LiveBus>,
    token: Option<Credential>,
    gate: Arc<Gate>,
    origin: Origin,
}

impl AgentRunners {
    fn gated(&self, inner: Box<dyn Runner>) -> Box<dyn Runner> {
        Box::new(GatedRunner {
            inner,
            gate: Arc::clone(&self.gate),
            origin: self.origin.clone(),
        })
    }
}

impl Runners for AgentRunners {
    fn admit(
        &self,
        step: &sonde_campaign::StepBody,
    ) -> Result<Box<dyn std::any::Any + Send>, String> {
        match self.gate.admit(&self.origin, step) {
            Ok(admitted) => Ok(Box::new(admitted)),
            Err(r) => {
                tracing::warn!(name: "request_refused", origin = self.origin.name(), reason = %r.rule(), "a step refused: {r}");
                Err(format!("{} (rule: {})", r, r.rule()))
            }
        }
    }

    fn local(&self) -> Box<dyn Runner> {
        self.gated(self.live_local())
    }

    fn agent(&self, agent: &str) -> Result<Box<dyn Runner>, sonde_model::host_port::HostPortError> {
        let inner = HostRunners.agent(agent)?;
        Ok(self.gated(match &self.token {
            Some(token) => Box::new(TokenRunner {
                inner,
                token: token.clone(),
            }),
            None => inner,
        }))
    }
}

impl AgentRunners {
    fn live_local(&self) -> Box<dyn Runner> {
        let inner: Box<dyn Runner> = match &self.token {
            Some(token) => Box::new(TokenRunner {
                inner: Box::new(LocalRunner),
                token: token.clone(),
            }),
            None => HostRunners.local(),
        };
        Box::new(LiveRunner {
            inner,
            bus: Arc::clone(&self.live),
        })
    }
}

fn plans_in(dir: &Path) -> BTreeMap<PathBuf, String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return BTreeMap::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .filter_map(|p| std::fs::read_to_string(&p).ok().map(|t| (p, t)))
        .collect()
}

fn watch(dir: &Path, archive: &str, runners: &AgentRunners, shutdown: &AtomicBool) {
    let mut running: BTreeMap<PathBuf, Running> = BTreeMap::new();
    let mut refused: BTreeMap<PathBuf, String> = BTreeMap::new();
    tracing::info!(dir = %dir.display(), archive = %sonde_archive::redacted(archive), "campaigns");
    while !shutdown.load(Ordering::Relaxed) {
        let found = plans_in(dir);
        // A removed plan retires after its run; its entry goes once its
        // thread has ended.
        running.retain(|path, r| {
            if found.contains_key(path) {
                return true;
            }
            if !r.retired {
                tracing::info!(plan = %path.display(), "plan removed: retiring after its run");
                r.control.retire();
                r.retired = true;
            }
            !r.thread.is_finished()
        });
        for (path, text) in &found {
            if refused.get(path) == Some(text) {
                continue;
            }
            match running.get_mut(path) {
                Some(r) if &r.text == text || r.retired => {}
                // Its schedule ended, and the plan changed: a new scheduler.
                Some(r) if r.thread.is_finished() => match start(path, archive, runners) {
                    Ok(new) => *r = new,
                    Err(e) => {
                        tracing::error!("{e}");
                        refused.insert(path.clone(), text.clone());
                    }
                },
                Some(r) => match read_plan(path, &Overrides::default()) {
                    Ok((plan, text)) => {
                        tracing::info!(plan = %path.display(), "plan changed: taken after the run in progress");
                        r.control.reload(plan, text.clone());
                        r.text = text;
                    }
                    Err(e) => {
                        tracing::error!("{e}");
                        refused.insert(path.clone(), text.clone());
                    }
                },
                None => match start(path, archive, runners) {
                    Ok(r) => {
                        refused.remove(path);
                        running.insert(path.clone(), r);
                    }
                    Err(e) => {
                        tracing::error!("{e}");
                        refused.insert(path.clone(), text.clone());
                    }
                },
            }
        }
        std::thread::sleep(RESCAN);
    }
    for r in running.values() {
        r.control.stop.stop();
    }
    for (_, r) in running {
        let _ = r.thread.join();
    }
}

fn start(path: &Path, archive: &str, runners: &AgentRunners) -> Result<Running, String> {
    let (plan, text) = read_plan(path, &Overrides::default()).map_err(|e| e.to_string())?;
    let me = which_endpoint(&plan, None).map_err(|e| e.to_string())?;
    let runners = &AgentRunners {
        origin: origin_of(&text),
        ..runners.clone()
    };
    let store = Store::open(archive).map_err(|e| e.to_string())?;
    let control = Arc::new(Control::default());
    let ctl = Arc::clone(&control);
    let name = plan.name.clone();
    let plan_text = text.clone();
    let runners = runners.clone();
    let thread = std::thread::Builder::new()
        .name(format!("sonde-campaign-{name}"))
        .spawn(move || {
            let outcome = Scheduler::new(
                store,
                plan,
                &plan_text,
                &Overrides::default(),
                &me,
                &runners,
                &ctl,
            )
            .and_then(|mut s| s.run(&mut |p| log(&name, &p)));
            if let Err(e) = outcome {
                tracing::error!(campaign = %name, "campaign stopped: {e}");
            }
        })
        .map_err(|e| format!("cannot start a scheduler: {e}"))?;
    tracing::info!(plan = %path.display(), "campaign started");
    Ok(Running {
        text,
        retired: false,
        control,
        thread,
    })
}

fn log(campaign: &str, p: &Progress) {
    match p {
        Progress::Missed {
            scheduled_ns,
            reason,
        } => tracing::warn!(
            campaign,
            due = %sonde_campaign::rfc3339(*scheduled_ns),
            "missed run: {reason}"
        ),
        Progress::Recovered { run_id, .. } => {
            tracing::warn!(campaign, run = %run_id, "unfinished run marked interrupted")
        }
        Progress::RunStarted {
            run_id,
            joined,
            steps,
            ..
        } => {
            let how = if *joined { "run joined" } else { "run started" };
            tracing::info!(campaign, run = %run_id, steps, "{how}")
        }
        Progress::StepEnded { kind, detail, .. } if kind.is_failure() => {
            tracing::warn!(campaign, kind = %kind, "step failed: {detail}")
        }
        Progress::RunEnded {
            run_id,
            state,
            mine,
            kept,
            pending,
        } => {
            let state = state.map_or("running", |s| s.name());
            tracing::info!(campaign, run = %run_id, state, here = mine.name(), kept, pending = pending.len(), "steps here ended")
        }
        Progress::Settled {
            run_id,
            state,
            reason,
            ..
        } => {
            let reason = reason.as_deref().unwrap_or("");
            tracing::info!(campaign, run = %run_id, state = state.name(), "run settled {reason}")
        }
        Progress::Finished => tracing::info!(campaign, "schedule ended"),
        _ => tracing::debug!(campaign, "{p:?}"),
    }
}
