//! The load of `bench/mesh-scale`: many simulated agents deliver a day of
//! hourly batteries to a central agent through the real forwarding path:
//! each agent's own SQLite archive queues its results (the outbox), and
//! they go to the central agent's `POST /api/v1/ingest` as the forwarder
//! sends them (`crate::destination`), with the agent's own token.
//! A simulated agent is not a process: a few worker threads take turns
//! at the agents' archives, so a thousand fit on two cores. Each archive
//! is opened once and kept open, as a running agent keeps its own, as
//! far as the file descriptors allow (three an archive, `--keep-open`);
//! the others are opened for each use.
//!
//!     mesh_scale tokens N                 # the central's [http] tokens for N agents
//!     mesh_scale run --central URL --dir DIR [--agents N] [--hours H] [--workers W] [--keep-open N] TEMPLATE.json…
//!
//! The templates are real results (`sonde tcp|udp|ping -J`); an hourly
//! battery is the GEANT/sTESTA one (000 §3): three TCP, three UDP and two
//! ping results per agent and hour, each labelled with its pair and step
//! as a campaign labels them. The day is one of last month's (it ends
//! a day before this month began): what a central archive keeps by month
//! then holds a month whole, which `bench/mesh-scale` drops by retention.
//!
//! After each timed phase it prints the CPU time each party spent on a
//! result: the central agents (every process named `sonde`), PostgreSQL
//! (every `postgres` process) and these simulated agents, and the rate
//! their sum allows on this machine's cores, were each core theirs.

use sonde_archive::{Placement, Store};
use sonde_mesh::ForwardConfig;
use sonde_model::{ResultId, TestResult, Timestamp};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

fn token(i: usize) -> String {
    format!("agent-{i:05}-bench-token-0123456789")
}

fn name(i: usize) -> String {
    format!("agent-{i:05}")
}

/// CPU time so far (user and system, in clock ticks) of every process
/// named `sonde` and `postgres`, by pid, and of this one.
struct CpuSnapshot {
    by_pid: HashMap<u32, (&'static str, u64)>,
    own: u64,
}

/// The kernel's clock tick for /proc's times (USER_HZ): 100 on every
/// Linux ABI sonde builds for.
const TICKS_PER_S: f64 = 100.0;

/// A process's `comm` and its user + system ticks, from its `stat`.
fn proc_ticks(stat: &str) -> Option<(&str, u64)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?;
    // After the comm: state is field 3; utime and stime are 14 and 15.
    let mut rest = stat.get(close + 2..)?.split(' ');
    let utime: u64 = rest.nth(11)?.parse().ok()?;
    let stime: u64 = rest.next()?.parse().ok()?;
    Some((comm, utime + stime))
}

impl CpuSnapshot {
    fn now() -> Self {
        let mut by_pid = HashMap::new();
        if let Ok(dir) = std::fs::read_dir("/proc") {
            for e in dir.flatten() {
                let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                    continue;
                };
                let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
                    continue;
                };
                match proc_ticks(&stat) {
                    Some(("sonde", t)) => by_pid.insert(pid, ("central", t)),
                    Some(("postgres", t)) => by_pid.insert(pid, ("PostgreSQL", t)),
                    _ => None,
                };
            }
        }
        let own = std::fs::read_to_string("/proc/self/stat")
            .ok()
            .and_then(|s| proc_ticks(&s).map(|(_, t)| t))
            .unwrap_or(0);
        CpuSnapshot { by_pid, own }
    }

    /// Each party's CPU per result since `self`, over `results`, and the
    /// rate their sum allows on this machine's cores. A process that
    /// started since counts from zero; one that ended is not counted.
    fn report(&self, results: usize) -> String {
        let later = CpuSnapshot::now();
        let mut parties: BTreeMap<&str, u64> = BTreeMap::new();
        for (pid, (party, t)) in &later.by_pid {
            let before = self.by_pid.get(pid).map_or(0, |(_, b)| *b);
            *parties.entry(party).or_default() += t.saturating_sub(before);
        }
        parties.insert("simulated agents", later.own.saturating_sub(self.own));
        let per = |ticks: u64| ticks as f64 / TICKS_PER_S / results.max(1) as f64 * 1e6;
        let sum: f64 = parties.values().map(|&t| per(t)).sum();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let shares: Vec<String> = parties
            .iter()
            .map(|(p, &t)| format!("{p} {:.0} µs", per(t)))
            .collect();
        format!(
            "CPU per result: {} (sum {sum:.0} µs: {cores} cores allow {:.0} results/s)",
            shares.join(", "),
            cores as f64 * 1e6 / sum.max(1.0)
        )
    }
}

struct Args {
    central: String,
    dir: PathBuf,
    agents: usize,
    hours: usize,
    workers: usize,
    /// Archives kept open at most (the others opened for each use).
    keep_open: usize,
    templates: Vec<PathBuf>,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut a = Args {
        central: String::new(),
        dir: PathBuf::new(),
        agents: 1000,
        hours: 24,
        workers: 8,
        keep_open: usize::MAX,
        templates: Vec::new(),
    };
    while let Some(arg) = args.next() {
        let mut value = |what: &str| args.next().ok_or(format!("{what} needs a value"));
        match arg.as_str() {
            "--central" => a.central = value("--central")?,
            "--dir" => a.dir = PathBuf::from(value("--dir")?),
            "--agents" => {
                a.agents = value("--agents")?
                    .parse()
                    .map_err(|e| format!("--agents: {e}"))?
            }
            "--hours" => {
                a.hours = value("--hours")?
                    .parse()
                    .map_err(|e| format!("--hours: {e}"))?
            }
            "--workers" => {
                a.workers = value("--workers")?
                    .parse()
                    .map_err(|e| format!("--workers: {e}"))?
            }
            "--keep-open" => {
                a.keep_open = value("--keep-open")?
                    .parse()
                    .map_err(|e| format!("--keep-open: {e}"))?
            }
            other if other.starts_with("--") => return Err(format!("unknown flag {other}")),
            file => a.templates.push(PathBuf::from(file)),
        }
    }
    if a.central.is_empty() || a.dir.as_os_str().is_empty() || a.templates.len() != 3 {
        return Err("run needs --central URL --dir DIR and three templates: tcp udp ping".into());
    }
    if a.agents < 2 || a.hours == 0 || a.workers == 0 {
        return Err("--agents at least 2, --hours and --workers at least 1".into());
    }
    Ok(a)
}

/// Agent `i`'s battery for hour `hour` of the day that began at `day`:
/// (template index, step, direction of the pair) for each of its tests.
fn battery(
    templates: &[TestResult],
    i: usize,
    agents: usize,
    hour: usize,
    day: SystemTime,
) -> Vec<(TestResult, Placement)> {
    const STEPS: [(usize, &str); 8] = [
        (0, "TCP A to B"),
        (0, "TCP B to A"),
        (0, "TCP both ways"),
        (1, "UDP 1M A to B"),
        (1, "UDP 1M B to A"),
        (1, "UDP 1M both ways"),
        (2, "ping A to B"),
        (2, "ping B to A"),
    ];
    let peer = name((i + 1) % agents);
    STEPS
        .iter()
        .enumerate()
        .map(|(k, (t, step))| {
            let mut r = templates[*t].clone();
            r.id = ResultId::random();
            r.start = Timestamp(day + Duration::from_secs((hour * 3600 + k * 300) as u64));
            r.env.client.hostname = name(i);
            let placement = Placement {
                campaign: Some(format!("mesh-day-{}", name(i))),
                run_id: Some(format!("{}-{hour}", name(i))),
                method_id: None,
                labels: BTreeMap::from([
                    ("from".to_string(), name(i)),
                    ("to".to_string(), peer.clone()),
                    ("step".to_string(), (*step).to_string()),
                ]),
            };
            (r, placement)
        })
        .collect()
}

/// Runs `work(i)` for every agent on `workers` threads.
fn each_agent(agents: usize, workers: usize, work: &(dyn Fn(usize) -> Result<(), String> + Sync)) {
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= agents {
                    return;
                }
                if let Err(e) = work(i) {
                    eprintln!("mesh_scale: {}: {e}", name(i));
                    std::process::exit(1);
                }
            });
        }
    });
}

fn archive(dir: &Path, i: usize) -> String {
    dir.join(format!("{}.db", name(i))).display().to_string()
}

/// Every agent's archive, opened on first use and kept open for the
/// first `keep_open` agents.
struct Archives {
    dir: PathBuf,
    open: Vec<Mutex<Option<Store>>>,
    keep_open: usize,
}

impl Archives {
    fn new(dir: &Path, agents: usize, keep_open: usize) -> Self {
        Self {
            dir: dir.to_path_buf(),
            open: (0..agents).map(|_| Mutex::new(None)).collect(),
            keep_open,
        }
    }

    /// `work` with agent `i`'s archive.
    fn with<T>(
        &self,
        i: usize,
        work: impl FnOnce(&mut Store) -> Result<T, String>,
    ) -> Result<T, String> {
        let mut slot = self.open[i].lock().map_err(|e| e.to_string())?;
        if slot.is_none() {
            *slot = Some(Store::open(&archive(&self.dir, i)).map_err(|e| e.to_string())?);
        }
        let done = match slot.as_mut() {
            Some(store) => work(store),
            None => Err("no archive".into()),
        };
        if i >= self.keep_open {
            *slot = None;
        }
        done
    }
}

/// Delivers every agent's whole backlog through the forwarding path;
/// the results delivered.
fn drain(a: &Args, archives: &Archives) -> usize {
    let delivered = AtomicUsize::new(0);
    each_agent(a.agents, a.workers, &|i| {
        let config = ForwardConfig {
            name: "central".into(),
            to: a.central.clone(),
            token_file: Some(a.dir.join(format!("{}.token", name(i)))),
            ca_file: None,
            batch: 200,
            retry_max: Duration::from_secs(30),
        };
        let mut destination = sonde_mesh::destination::open(&config).map_err(|e| e.to_string())?;
        archives.with(i, |store| loop {
            let queued = store
                .outbox("central", config.batch)
                .map_err(|e| e.to_string())?;
            if queued.items.is_empty() {
                return Ok(());
            }
            let ids: Vec<String> = queued.items.iter().map(|x| x.id().to_string()).collect();
            let d = destination
                .deliver(&queued.items)
                .map_err(|e| e.to_string())?;
            store
                .forward_done("central", &ids, true)
                .map_err(|e| e.to_string())?;
            delivered.fetch_add(d.received, Ordering::Relaxed);
        })
    });
    delivered.into_inner()
}

/// Queues hours `hours` of every agent's day in its archive.
fn queue(
    a: &Args,
    archives: &Archives,
    templates: &[TestResult],
    day: SystemTime,
    hours: std::ops::Range<usize>,
) {
    each_agent(a.agents, a.workers, &|i| {
        let results: Vec<(TestResult, Placement)> = hours
            .clone()
            .flat_map(|h| battery(templates, i, a.agents, h, day))
            .collect();
        archives.with(i, |store| {
            store.forward_to("central").map_err(|e| e.to_string())?;
            store.put_results(&results).map_err(|e| e.to_string())
        })?;
        std::fs::write(a.dir.join(format!("{}.token", name(i))), token(i))
            .map_err(|e| e.to_string())
    });
}

fn run(a: &Args) -> Result<(), String> {
    std::fs::create_dir_all(&a.dir).map_err(|e| e.to_string())?;
    let templates: Vec<TestResult> = a
        .templates
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
            sonde_model::load_result(&text).map_err(|e| format!("{}: {e}", p.display()))
        })
        .collect::<Result<_, _>>()?;
    let this_month = sonde_archive::Month::now().start_ns();
    let day = SystemTime::UNIX_EPOCH + Duration::from_nanos(this_month.max(0) as u64)
        - Duration::from_secs(2 * 24 * 3600);
    let archives = Archives::new(&a.dir, a.agents, a.keep_open);
    let per_hour = a.agents * 8;
    println!(
        "{} agents, {} workers, batteries of 8 results an hour, {} hours",
        a.agents, a.workers, a.hours
    );

    let t = Instant::now();
    queue(a, &archives, &templates, day, 0..1);
    println!(
        "queued the first hour ({per_hour} results) in {:.1} s (not timed below)",
        t.elapsed().as_secs_f64()
    );
    let cpu = CpuSnapshot::now();
    let t = Instant::now();
    let n = drain(a, &archives);
    let s = t.elapsed().as_secs_f64();
    println!(
        "one-hour backlog: {n} results drained in {s:.1} s ({:.0} results/s)",
        n as f64 / s
    );
    println!("  {}", cpu.report(n));

    if a.hours > 1 {
        let t = Instant::now();
        queue(a, &archives, &templates, day, 1..a.hours);
        println!(
            "queued hours 2..{} in {:.1} s (not timed below)",
            a.hours,
            t.elapsed().as_secs_f64()
        );
        let cpu = CpuSnapshot::now();
        let t = Instant::now();
        let n = drain(a, &archives);
        let s = t.elapsed().as_secs_f64();
        let rate = n as f64 / s;
        println!(
            "the rest of the day: {n} results ingested in {s:.1} s ({rate:.0} results/s; \
             a whole day of this mesh in {:.0} s)",
            (a.agents * 8 * 24) as f64 / rate
        );
        println!("  {}", cpu.report(n));
    }

    // The grid is timed by bench/mesh-scale/run (its answer for 10,000
    // agents is more than this client takes from a central).
    Ok(())
}

fn main() {
    let mut args = std::env::args().skip(1);
    let outcome = match args.next().as_deref() {
        Some("tokens") => match args.next().and_then(|n| n.parse::<usize>().ok()) {
            Some(n) => {
                let list: Vec<String> = (0..n)
                    .map(|i| {
                        format!(
                            "{{ name = \"{}\", token = \"{}\", may = [\"ingest\", \"mesh\"] }}",
                            name(i),
                            token(i)
                        )
                    })
                    .collect();
                println!("tokens = [\n{}\n]", list.join(",\n"));
                Ok(())
            }
            None => Err("tokens N".to_string()),
        },
        Some("run") => parse(args).and_then(|a| run(&a)),
        _ => Err("usage: mesh_scale tokens N | mesh_scale run --central URL --dir DIR …".into()),
    };
    if let Err(e) = outcome {
        eprintln!("mesh_scale: {e}");
        std::process::exit(2);
    }
}
