//! `sonde campaign`: run a plan in the foreground with a progress display
//! (`run`), read one without running it (`check`), and show what the
//! archive knows of every campaign (`status`). See docs/campaigns.md.

use crate::archive_args::ArchiveArgs;
use crate::failure::Failure;
use crate::output::interrupt_flag;
use anyhow::anyhow;
use clap::{Args, Subcommand};
use sonde_archive::{RunState, Store};
use sonde_campaign::RunEventKind;
use sonde_campaign::{
    campaign_status, read_plan, rfc3339, which_endpoint, CampaignStatus, Control, HostRunners,
    Overrides, Plan, Progress, Scheduler,
};
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct CampaignArgs {
    #[command(subcommand)]
    pub command: CampaignCommand,
}

#[derive(Debug, Subcommand)]
pub enum CampaignCommand {
    /// Run a plan in the foreground until its schedule ends (Ctrl-C
    /// stops; the run in progress is kept as interrupted).
    Run(PlanArgs),
    /// Read a plan and show its steps, classes and next runs, without
    /// running it.
    Check(PlanArgs),
    /// Every campaign the archive knows: runs by state, the last and next
    /// run, missed runs and why, errors.
    Status {
        #[command(flatten)]
        archive: ArchiveArgs,
        /// Only this campaign.
        name: Option<String>,
        /// One JSON document.
        #[arg(short = 'J', long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The plan (TOML).
    pub plan: PathBuf,
    #[command(flatten)]
    pub archive: ArchiveArgs,
    /// Which endpoint this host is (default: the one whose address is
    /// this host's, else the first).
    #[arg(long = "as", value_name = "NAME")]
    pub me: Option<String>,
    /// Multiply every step's duration and the schedule by this (`1/30`:
    /// 5 min steps hourly become 10 s steps every 2 min).
    #[arg(long, value_parser = scale)]
    pub scale: Option<f64>,
    /// Stop after this many runs (the plan's `max_runs` otherwise).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_runs: Option<u64>,
    /// Repeat every DURATION (PT2M, 90s) instead of the plan's schedule
    /// (after --scale).
    #[arg(long, value_name = "DURATION")]
    pub repeat: Option<String>,
    /// The plan's desk form: its `[quick]` table's scale, repeat and
    /// max_runs where these flags give none.
    #[arg(long)]
    pub quick: bool,
    /// Give endpoint NAME this address instead of the plan's.
    #[arg(long = "endpoint", value_name = "NAME=ADDR", value_parser = endpoint)]
    pub endpoints: Vec<(String, String)>,
    /// A label to keep every result of these runs with, KEY=VALUE
    /// (repeatable), beside the plan's and each step's own (a step's label
    /// of the same key wins). `step`, `from` and `to` are the campaign's.
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = crate::archive_args::label)]
    pub labels: Vec<(String, String)>,
}

fn scale(s: &str) -> Result<f64, String> {
    let v = match s.split_once('/') {
        Some((a, b)) => {
            let (a, b): (f64, f64) = (
                a.trim()
                    .parse()
                    .map_err(|_| format!("'{s}' is not a scale"))?,
                b.trim()
                    .parse()
                    .map_err(|_| format!("'{s}' is not a scale"))?,
            );
            a / b
        }
        None => s
            .parse()
            .map_err(|_| format!("'{s}' is not a scale (0.5, 1/30)"))?,
    };
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(format!("'{s}': a scale is more than 0"))
    }
}

fn endpoint(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .filter(|(n, a)| !n.is_empty() && !a.is_empty())
        .map(|(n, a)| (n.to_string(), a.to_string()))
        .ok_or_else(|| format!("'{s}': write NAME=ADDRESS"))
}

pub fn run(args: CampaignArgs) -> Result<(), Failure> {
    match args.command {
        CampaignCommand::Run(p) => run_plan(p),
        CampaignCommand::Check(p) => check(p),
        CampaignCommand::Status {
            archive,
            name,
            json,
        } => status(&archive, name.as_deref(), json),
    }
}

/// What the command line overrides of the plan, kept beside it in the
/// archive (never written into its text).
fn overrides(p: &PlanArgs) -> Overrides {
    Overrides {
        scale: p.scale,
        repeat: p.repeat.clone(),
        max_runs: p.max_runs,
        endpoints: p.endpoints.iter().cloned().collect(),
        quick: p.quick,
    }
}

fn plan_of(p: &PlanArgs) -> Result<(Plan, String, Overrides, String), Failure> {
    let usage = |e: sonde_campaign::PlanFileError| Failure::Usage(anyhow!(e));
    let over = overrides(p);
    let (plan, text) = read_plan(&p.plan, &over).map_err(usage)?;
    let me = which_endpoint(&plan, p.me.as_deref()).map_err(usage)?;
    Ok((plan, text, over, me))
}

fn cadence(plan: &Plan) -> String {
    let s = &plan.schedule;
    let every = match &s.cadence {
        sonde_campaign::schedule::Cadence::Every(d) => {
            format!("every {}", sonde_model::format_duration(*d))
        }
        sonde_campaign::schedule::Cadence::Cron(c) => format!("at cron '{c}' (UTC)"),
    };
    let mut out = every;
    if let Some(n) = s.max_runs {
        out += &format!(", {n} runs");
    }
    if let Some(u) = s.until_ns {
        out += &format!(", until {}", rfc3339(u));
    }
    out += &format!(", slip {}", sonde_model::format_duration(s.slip));
    if !s.spread.is_zero() {
        out += &format!(", spread {}", sonde_model::format_duration(s.spread));
    }
    out
}

fn check(p: PlanArgs) -> Result<(), Failure> {
    let (plan, _, _, me) = plan_of(&p)?;
    let mut out = std::io::stdout();
    writeln!(out, "campaign {}: {}", plan.name, cadence(&plan))?;
    writeln!(out, "this host is endpoint {me}")?;
    for e in &plan.endpoints {
        let agent = e
            .agent
            .as_deref()
            .map(|a| format!(", agent {a}"))
            .unwrap_or_default();
        writeln!(out, "  endpoint {}: {}{agent}", e.name, e.address)?;
    }
    for (i, s) in plan.steps.iter().enumerate() {
        writeln!(
            out,
            "  step {}: {} ({}, {}, {})",
            i + 1,
            s.name,
            s.resource.name(),
            if s.from == me {
                "runs here".to_string()
            } else {
                format!("led by {}", s.from)
            },
            match &s.body {
                sonde_campaign::StepBody::Method(_) => "as long as the method takes".to_string(),
                body => format!(
                    "at most {}",
                    sonde_model::format_duration(sonde_campaign::plan::step_length(body))
                ),
            },
        )?;
    }
    let now = sonde_campaign::now_ns();
    let mut t = now;
    write!(out, "next runs (if first loaded now):")?;
    for _ in 0..5 {
        let Some(occ) = plan.schedule.next_at_or_after(now, t) else {
            break;
        };
        write!(out, " {}", rfc3339(plan.schedule.due_ns(&plan.name, occ)))?;
        t = occ + 1;
    }
    writeln!(out)?;
    Ok(())
}

fn run_plan(p: PlanArgs) -> Result<(), Failure> {
    let (mut plan, text, over, me) = plan_of(&p)?;
    for (k, v) in &p.labels {
        if ["step", "from", "to"].contains(&k.as_str()) {
            return Err(Failure::Usage(anyhow!(
                "--label {k}={v}: '{k}' is the label the campaign gives each result; use \
                 another key"
            )));
        }
        plan.labels.insert(k.clone(), v.clone());
    }
    let location = p.archive.location();
    let store = Store::open(&location).map_err(|e| Failure::Run(anyhow!(e)))?;
    let control = Control::with_stop(interrupt_flag());
    let steps = plan.steps.len();
    println!(
        "campaign {}: {steps} steps, {}; as endpoint {me}; archive {location}",
        plan.name,
        cadence(&plan)
    );
    let mut scheduler = Scheduler::new(store, plan, &text, &over, &me, &HostRunners, &control)
        .map_err(|e| Failure::Usage(anyhow!(e)))?;
    let mut kept_total = 0usize;
    let mut interrupted = false;
    let mut show = |p: Progress| {
        let line = match p {
            Progress::Recovered {
                run_id,
                scheduled_ns,
            } => format!(
                "run {run_id} (due {}) was left unfinished by a process that is gone: marked \
                 interrupted",
                rfc3339(scheduled_ns)
            ),
            Progress::Next { at_ns } => format!("next run at {}", rfc3339(at_ns)),
            Progress::Missed {
                scheduled_ns,
                reason,
            } => format!("missed the run due {}: {reason}", rfc3339(scheduled_ns)),
            Progress::RunStarted {
                run_id,
                scheduled_ns,
                number,
                joined,
                steps,
            } => {
                let how = if joined { "joined" } else { "started" };
                format!(
                    "run {number} (due {}, id {run_id}): {how}, {steps} step(s) to run here",
                    rfc3339(scheduled_ns)
                )
            }
            Progress::StepStarted { index, total, name } => {
                format!("  [{index}/{total}] {name} …")
            }
            Progress::Waiting { detail } => format!("    {detail}"),
            Progress::StepEnded { kind, detail, .. } => {
                let word = match kind {
                    RunEventKind::StepDone => "kept",
                    RunEventKind::StepFailed => "FAILED",
                    RunEventKind::StepRefused => "REFUSED",
                    _ => "skipped",
                };
                format!("    {word}: {detail}")
            }
            Progress::RunEnded {
                state,
                mine,
                kept,
                pending,
                ..
            } => {
                kept_total += kept;
                if mine == RunState::Interrupted {
                    interrupted = true;
                }
                match state {
                    Some(state) => format!(
                        "run {}: {kept} results kept ({kept_total} so far)",
                        state.name()
                    ),
                    None if pending.is_empty() => format!(
                        "steps here {}: {kept} results kept ({kept_total} so far); another \
                         host settled the run",
                        mine.name()
                    ),
                    None => format!(
                        "steps here {}: {kept} results kept ({kept_total} so far); still going \
                         on other hosts: {}",
                        mine.name(),
                        pending.join(", ")
                    ),
                }
            }
            Progress::Settled {
                scheduled_ns,
                state,
                reason,
                ..
            } => format!(
                "run due {}: {}{}",
                rfc3339(scheduled_ns),
                state.name(),
                reason.map(|r| format!(" ({r})")).unwrap_or_default()
            ),
            Progress::Finished => "the schedule has ended".to_string(),
            // The step's own line says what the method kept.
            Progress::Method { .. } => return,
        };
        println!("{line}");
        let _ = std::io::stdout().flush();
    };
    scheduler
        .run(&mut show)
        .map_err(|e| Failure::Run(anyhow!(e)))?;
    println!(
        "list the results with `sonde results{} list --campaign {}`",
        p.archive.flag(),
        scheduler.plan().name
    );
    if interrupted || control.stop.is_stopped() {
        return Err(Failure::Interrupted);
    }
    Ok(())
}

fn status(archive: &ArchiveArgs, name: Option<&str>, json: bool) -> Result<(), Failure> {
    let mut store = crate::results_cmd::open(archive)?;
    let location = store.location().to_string();
    let names: Vec<String> = match name {
        Some(n) => vec![n.to_string()],
        None => store
            .campaigns()
            .map_err(|e| Failure::Run(anyhow!(e)))?
            .into_iter()
            .map(|c| c.name)
            .collect(),
    };
    let mut all = Vec::new();
    for n in &names {
        match campaign_status(&mut store, n, 200).map_err(|e| Failure::Run(anyhow!(e)))? {
            Some(s) => all.push(s),
            None => return Err(Failure::Run(anyhow!("no campaign {n} in {location}"))),
        }
    }
    let mut out = std::io::stdout();
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&all)?)?;
        return Ok(());
    }
    if all.is_empty() {
        eprintln!("sonde: no campaigns in {location}");
    }
    for s in &all {
        write!(out, "{}", status_text(s))?;
    }
    Ok(())
}

pub(crate) fn status_text(s: &CampaignStatus) -> String {
    let mut out = format!(
        "campaign {}{}\n",
        s.name,
        if s.paused { " (paused)" } else { "" }
    );
    let counts: Vec<String> = s.runs.iter().map(|(k, v)| format!("{v} {k}")).collect();
    out += &format!(
        "  runs: {}\n",
        if counts.is_empty() {
            "none yet".to_string()
        } else {
            counts.join(", ")
        }
    );
    if let Some(l) = &s.last {
        out += &format!(
            "  last: due {}, {}{}\n",
            rfc3339(l.scheduled_ns),
            l.state,
            l.reason
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        );
    }
    match s.next_ns {
        Some(n) => out += &format!("  next: {}\n", rfc3339(n)),
        None => out += "  next: none (the schedule has ended)\n",
    }
    for m in &s.missed {
        out += &format!(
            "  missed: due {}: {}\n",
            rfc3339(m.scheduled_ns),
            m.reason.as_deref().unwrap_or("")
        );
    }
    for p in &s.partial {
        out += &format!(
            "  partial: due {}: {}\n",
            rfc3339(p.scheduled_ns),
            p.reason.as_deref().unwrap_or("")
        );
    }
    for (run, e) in &s.errors {
        out += &format!("  error in run {run}: {e}\n");
    }
    if let Some(o) = &s.overrides {
        out += &format!("  overrides: {o}\n");
    }
    if let Some(e) = &s.plan_error {
        out += &format!("  plan: {e}\n");
    }
    out
}
