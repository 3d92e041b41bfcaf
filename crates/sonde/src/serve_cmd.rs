//! `sonde serve`: the measurement endpoint in the foreground.

use crate::failure::Failure;
use crate::run_args::duration;
use crate::serve_daemon::{self, PidFile};
use crate::serve_signal;
use anyhow::anyhow;
use clap::Args;
use ipnet::IpNet;
use sonde_agent::AgentConfig;
use sonde_engine::stamp_reflector::ReflectorStats;
use sonde_model::Rate;
use sonde_server::{Reflector, ReflectorError, Server, Until};
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (repeatable). Default: every address, IPv6 and IPv4.
    #[arg(long = "bind", value_name = "ADDR")]
    pub bind: Vec<IpAddr>,
    /// Port for control and data connections (0: any free port).
    #[arg(short = 'p', long)]
    pub port: Option<u16>,
    /// TOML configuration file (see docs/serve.md); flags override it.
    #[arg(long, value_name = "FILE", env = "SONDE_SERVE_CONFIG")]
    pub config: Option<PathBuf>,
    /// Longest test allowed, warm-up included (default 5m).
    #[arg(long, value_parser = duration)]
    pub max_duration: Option<Duration>,
    /// Most data connections in one test (default 256).
    #[arg(long)]
    pub max_streams: Option<u16>,
    /// Most tests at once (default 4).
    #[arg(long)]
    pub max_concurrent_tests: Option<u32>,
    /// Highest total rate of one test; tests must then be paced with -b.
    #[arg(long)]
    pub max_rate: Option<Rate>,
    /// Most connections at once, handshakes included (default 1024).
    #[arg(long)]
    pub max_connections: Option<u32>,
    /// Most handshakes under way from one IPv4 address or IPv6 /64 (default 32).
    #[arg(long)]
    pub max_handshakes_per_source: Option<u32>,
    /// Client prefix allowed to test (repeatable; replaces the default of all).
    #[arg(long = "allow", value_name = "CIDR")]
    pub allow: Vec<IpNet>,
    /// Client prefix that may ask this server to run third-party tests
    /// toward other sonde servers (repeatable; none by default).
    #[arg(long = "third-party-allow", value_name = "CIDR")]
    pub third_party_allow: Vec<IpNet>,
    /// UDP port of the STAMP reflector (default 862; 0: any free port).
    #[arg(long)]
    pub reflector_port: Option<u16>,
    /// No STAMP reflector.
    #[arg(long, conflicts_with = "reflector_port")]
    pub no_reflector: bool,
    /// Most STAMP packets per second answered for one source (default 1000).
    #[arg(long)]
    pub reflector_rate: Option<u32>,
    /// File with the reflector's key in hex: authenticated STAMP (HMAC-SHA-256).
    #[arg(long, value_name = "FILE")]
    pub reflector_key_file: Option<PathBuf>,
    /// Serve one test, then exit (iperf3's -1; a refused test does not count).
    #[arg(short = '1', long)]
    pub one_off: bool,
    /// Run in the background, detached from the terminal (logs: --logfile, else none).
    #[arg(short = 'D', long)]
    pub daemon: bool,
    /// Write the server's process id to FILE; removed when it exits.
    #[arg(short = 'I', long, value_name = "FILE")]
    pub pidfile: Option<PathBuf>,
    /// Exit after this long with no test running (e.g. 30s, 10m).
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    pub idle_timeout: Option<Duration>,
    /// Append the log to FILE instead of standard error.
    #[arg(long, value_name = "FILE")]
    pub logfile: Option<PathBuf>,
    /// Serve the HTTP API, the web portal and /metrics on ADDR
    /// ([::1]:8080; off by default; [http] in the config file), reading
    /// the archive (--archive).
    #[arg(long, value_name = "ADDR")]
    pub http: Option<std::net::SocketAddr>,
    /// Run every campaign plan (*.toml) in DIR, reloading on change.
    #[arg(long, value_name = "DIR")]
    pub campaigns: Option<PathBuf>,
    /// The archive campaigns keep their results and state in (default: the
    /// one every sonde command of this user reads: $SONDE_ARCHIVE, else
    /// $XDG_DATA_HOME/sonde/sonde.db, else /var/lib/sonde/sonde.db as root,
    /// else ~/.local/share/sonde/sonde.db).
    #[arg(long, value_name = "PATH|URL")]
    pub archive: Option<String>,
}

impl ServeArgs {
    /// The config file (if any) with the flags laid over it.
    pub fn to_config(&self) -> Result<AgentConfig, Failure> {
        let mut c = match &self.config {
            Some(p) => AgentConfig::from_file(p).map_err(|e| Failure::Usage(e.into()))?,
            None => AgentConfig::default(),
        };
        if !self.bind.is_empty() {
            c.bind.clone_from(&self.bind);
        }
        if let Some(p) = self.port {
            c.port = p;
        }
        let l = &mut c.limits;
        if let Some(v) = self.max_duration {
            l.max_duration = v;
        }
        if let Some(v) = self.max_streams {
            l.max_streams = v;
        }
        if let Some(v) = self.max_concurrent_tests {
            l.max_concurrent_tests = v;
        }
        if let Some(v) = self.max_rate {
            l.max_rate = Some(v);
        }
        if let Some(v) = self.max_connections {
            l.max_connections = v;
        }
        if let Some(v) = self.max_handshakes_per_source {
            l.max_handshakes_per_source = v;
        }
        if !self.allow.is_empty() {
            l.allow.clone_from(&self.allow);
        }
        if !self.third_party_allow.is_empty() {
            l.third_party_allow.clone_from(&self.third_party_allow);
        }
        let r = &mut c.reflector;
        if let Some(p) = self.reflector_port {
            r.port = p;
        }
        if self.no_reflector {
            r.enabled = false;
        }
        if let Some(v) = self.reflector_rate {
            r.rate_limit = v;
        }
        if let Some(f) = &self.reflector_key_file {
            r.key_file = Some(f.clone());
        }
        c.validate().map_err(|e| {
            let e = match &self.config {
                Some(path) => e.located(path),
                None => e,
            };
            Failure::Usage(anyhow!("invalid configuration: {e}"))
        })?;
        Ok(c)
    }
}

pub fn run(args: ServeArgs) -> Result<(), Failure> {
    let config = args.to_config()?;
    if let Some(path) = &args.logfile {
        crate::sink::append(path).map_err(|e| {
            Failure::Usage(anyhow!("cannot open the log file {}: {e}", path.display()))
        })?;
    }
    if args.daemon && !serve_daemon::is_detached() {
        return serve_daemon::detach(args.pidfile.as_deref());
    }
    let limits = config.limits.clone();
    let http_config = config.http.clone();
    let forward = config.forward.clone();
    let mesh = config.mesh.clone();
    let client = config.client.clone();
    let alert_rules = sonde_alerts::rules(&config.alert)
        .map_err(|e| Failure::Usage(anyhow!("invalid configuration: {e}")))?;
    let smtp = config.smtp.clone();
    let readings = config.readings.clone();
    let (targets, mesh_targets) = (config.targets.clone(), config.mesh.targets.clone());
    let keys = config.keys.clone();
    let reflector = Reflector::bind(&config.reflector, &config.bind);
    let server = Server::bind(config.server())?.third_party(Arc::new(sonde_agent::RunnerRelay));
    // The one gate every request from elsewhere than the command line
    // passes (the API's, the campaigns' and the mesh shares'), sharing
    // the control port's test slots.
    let gate = sonde_gate::Gate::of_server(server.slots(), targets, mesh_targets, keys);
    let counters = server.counters();
    let live = sonde_web::LiveBus::new();
    for addr in server.local_addrs() {
        tracing::info!(%addr, "listening");
    }
    tracing::info!(
        max_duration = %humantime::format_duration(limits.max_duration),
        max_streams = limits.max_streams,
        max_concurrent_tests = limits.max_concurrent_tests,
        max_rate = %limits.max_rate.map_or_else(|| "none".to_string(), |r| r.to_string()),
        max_connections = limits.max_connections,
        max_handshakes_per_source = limits.max_handshakes_per_source,
        allow = ?limits.allow.iter().map(ToString::to_string).collect::<Vec<_>>(),
        third_party_allow = ?limits.third_party_allow.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "limits"
    );
    match reflector {
        Ok(Some(r)) => {
            for addr in r.local_addrs() {
                tracing::info!(reflector = %addr, "STAMP reflector listening");
            }
            log_reflector_stats(Arc::clone(&r.stats));
            r.spawn();
        }
        Ok(None) => tracing::info!("STAMP reflector off"),
        // A port that cannot be bound (862 needs root, or is taken)
        // leaves the rest of the server running; a bad key is a usage
        // error.
        Err(e @ ReflectorError::Bind { .. }) => tracing::warn!(error = %e, "no STAMP reflector"),
        Err(e) => return Err(Failure::Usage(anyhow!("invalid configuration: {e}"))),
    }
    let stop = serve_signal::install()
        .map_err(|e| Failure::Run(anyhow!("cannot install the signal handlers: {e}")))?;
    let _pidfile = args.pidfile.as_deref().map(PidFile::create).transpose()?;
    let archive = args
        .archive
        .clone()
        .unwrap_or_else(crate::archive_args::default_location);
    let mut threads = Vec::new();
    // What MQTT readings come in, for /metrics (the ingest starts below).
    let readings_stats = sonde_web::readings_ingest::IngestStats::for_config(&readings);
    if let Some(addr) = args.http.or(http_config.listen) {
        let every = http_config.interface_interval;
        let web = sonde_web::WebConfig {
            addr,
            archive: archive.clone(),
            http: http_config.clone(),
            limits: limits.clone(),
            gate: Arc::clone(&gate),
            campaigns_dir: args.campaigns.clone(),
            live: Arc::clone(&live),
            counters: Arc::clone(&counters),
            mesh: mesh.clone(),
            audit: Some(server.api_audit()),
            smtp: smtp.clone(),
            readings: readings_stats.clone(),
        };
        let (bound, handle) = sonde_web::spawn(web, Arc::clone(&stop))
            .map_err(|e| Failure::Usage(anyhow!("--http {addr}: {e}")))?;
        tracing::info!(http = %bound, "HTTP API, portal and /metrics listening");
        threads.push(handle);
        if !every.is_zero() {
            let sampler = sonde_web::interfaces::spawn_sampler(
                archive.clone(),
                http_config.interfaces.clone(),
                every,
                Arc::clone(&stop),
            )
            .map_err(|e| Failure::Run(anyhow!("cannot sample the interfaces: {e}")))?;
            threads.push(sampler);
        }
    }
    if let Some(dir) = &args.campaigns {
        let token = client.token().map_err(|(key, reason)| {
            Failure::Usage(anyhow!("invalid configuration: {key}: {reason}"))
        })?;
        let handle = crate::campaign_watch::spawn(
            dir.clone(),
            archive.clone(),
            Arc::clone(&live),
            token,
            Arc::clone(&gate),
            Arc::clone(&stop),
        )
        .map_err(|e| Failure::Run(anyhow!("cannot start the campaigns: {e}")))?;
        threads.push(handle);
    }
    if !forward.is_empty() {
        let started = sonde_mesh::start(&archive, &forward, &stop).map_err(|e| match e {
            sonde_mesh::ForwardError::Config(_) => {
                Failure::Usage(anyhow!("invalid configuration: {e}"))
            }
            e => Failure::Run(anyhow!("cannot start forwarding: {e}")),
        })?;
        threads.extend(started);
    }
    let deliverer = sonde_alerts::Deliverer::new(&alert_rules, smtp.as_ref())
        .map_err(|e| Failure::Usage(anyhow!("invalid configuration: {e}")))?;
    let alerts = sonde_alerts::start(&archive, alert_rules, deliverer, &stop)
        .map_err(|e| Failure::Run(anyhow!("cannot start the alerts: {e}")))?;
    threads.extend(alerts);
    let ingest = sonde_web::readings_ingest::spawn(
        archive.clone(),
        &readings,
        Arc::clone(&stop),
        readings_stats.unwrap_or_default(),
    )
    .map_err(|e| Failure::Usage(anyhow!("invalid configuration: {e}")))?;
    threads.extend(ingest);
    let member = sonde_mesh::member::start(&mesh, args.campaigns.as_deref(), &gate, &stop)
        .map_err(|e| Failure::Usage(anyhow!("invalid configuration: {e}")))?;
    threads.extend(member);
    let until = Until {
        one_off: args.one_off,
        idle_timeout: args.idle_timeout,
        stop: Some(Arc::clone(&stop)),
    };
    let why = server.run_until(&until);
    tracing::info!(reason = ?why, "server stopped");
    // The server may stop for another reason than a signal.
    stop.store(true, Ordering::Relaxed);
    for h in threads {
        let _ = h.join();
    }
    Ok(())
}

/// Logs the reflector's counters once a second while they change, and
/// warns when its overall rate cap drops answers.
fn log_reflector_stats(stats: Arc<ReflectorStats>) {
    let _ = std::thread::Builder::new()
        .name("sonde-reflector-stats".into())
        .spawn(move || {
            let mut last = [0u64; 5];
            loop {
                std::thread::sleep(Duration::from_secs(1));
                let now = [
                    stats.answered.load(Ordering::Relaxed),
                    stats.malformed.load(Ordering::Relaxed),
                    stats.bad_hmac.load(Ordering::Relaxed),
                    stats.rate_limited.load(Ordering::Relaxed),
                    stats.over_total.load(Ordering::Relaxed),
                ];
                if now[4] > last[4] {
                    tracing::warn!(
                        dropped = now[4] - last[4],
                        "reflector over its overall rate cap (reflector.total_rate_limit)"
                    );
                }
                if now != last {
                    tracing::info!(
                        answered = now[0],
                        malformed = now[1],
                        bad_hmac = now[2],
                        rate_limited = now[3],
                        over_total = now[4],
                        "reflector"
                    );
                    last = now;
                }
            }
        });
}
