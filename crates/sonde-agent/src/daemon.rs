//! Starting the daemon: the test endpoint and its STAMP reflector, and
//! around them what the configuration turns on: the HTTP API, portal and
//! `/metrics` with the interface sampler, the campaigns of a directory,
//! forwarding to central archives, alerts, MQTT readings, SNMP link
//! load and the mesh share. Every request that does not come through the control port
//! passes one gate, which shares the control port's test slots. Runs
//! until the server stops (`--one-off`, idle, or `stop`), then stops the
//! rest and waits for it.

use crate::config::Checked;
use crate::AgentConfig;
use sonde_engine::stamp_reflector::ReflectorStats;
use sonde_server::{Reflector, ReflectorError, Server, Stopped, Until};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What the command line adds to the configuration.
#[derive(Clone)]
pub struct Options {
    /// Serve the HTTP API here (over `[http] listen`).
    pub http: Option<SocketAddr>,
    /// Run every campaign plan in this directory.
    pub campaigns: Option<PathBuf>,
    /// The archive campaigns, the API, alerts and readings use.
    pub archive: String,
    /// Serve one test, then stop.
    pub one_off: bool,
    /// Stop after this long with no test running.
    pub idle_timeout: Option<Duration>,
    /// Set to stop (a signal); the daemon sets it too when the server
    /// stops for another reason, so that everything else stops.
    pub stop: Arc<AtomicBool>,
    /// Set (by SIGHUP) to reload the configuration with `reread`
    /// ([`crate::reload`]); without `reread` nothing is reloaded.
    pub hup: Arc<AtomicBool>,
    pub reread: Option<crate::reload::Reread>,
}

/// Why the daemon could not start.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// What the configuration asks cannot work (a usage error).
    #[error("invalid configuration: {0}")]
    Config(String),
    /// A flag that cannot work as given (`--http` on an address that
    /// cannot be served), a usage error in the flag's own words.
    #[error("{0}")]
    Flag(String),
    /// The configuration is fine but a part could not start.
    #[error("{0}")]
    Start(String),
}

/// A bound daemon: the endpoint listens, nothing runs yet.
#[derive(Debug)]
pub struct Daemon {
    config: AgentConfig,
    checked: Checked,
    server: Server,
    reflector: Option<Reflector>,
}

impl Daemon {
    /// Binds the endpoint and its reflector, for `config` as its check
    /// left it. A reflector port that cannot be bound (862 needs root, or
    /// is taken) leaves the rest running.
    pub fn bind(config: AgentConfig, checked: Checked) -> Result<Daemon, DaemonError> {
        let reflector = match Reflector::bind(&config.reflector, &config.bind) {
            Ok(r) => r,
            Err(e @ ReflectorError::Bind { .. }) => {
                tracing::warn!(error = %e, "no STAMP reflector");
                None
            }
            Err(e) => return Err(DaemonError::Config(e.to_string())),
        };
        let server = Server::bind(config.server())
            .map_err(|e| DaemonError::Start(e.to_string()))?
            .third_party(Arc::new(crate::RunnerRelay));
        Ok(Daemon {
            config,
            checked,
            server,
            reflector,
        })
    }

    /// The endpoint's addresses.
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.server.local_addrs()
    }

    /// Starts everything and serves until the server stops.
    pub fn run(self, opts: &Options) -> Result<Stopped, DaemonError> {
        let Daemon {
            config,
            checked: Checked { rules, mailer },
            server,
            reflector,
        } = self;
        let config_error = |e: &dyn std::fmt::Display| DaemonError::Config(e.to_string());
        let start_error = |what: &str, e: &dyn std::fmt::Display| {
            DaemonError::Start(format!("cannot {what}: {e}"))
        };
        let gate = sonde_gate::Gate::of_server(
            server.slots(),
            config.targets.clone(),
            config.mesh.targets.clone(),
            config.keys.clone(),
        );
        let counters = server.counters();
        let live = sonde_web::LiveBus::new();
        for addr in server.local_addrs() {
            tracing::info!(name: "listening", %addr, "listening");
        }
        log_limits(&config.limits);
        match reflector {
            Some(r) => {
                for addr in r.local_addrs() {
                    tracing::info!(name: "reflector_listening", reflector = %addr, "STAMP reflector listening");
                }
                log_reflector_stats(Arc::clone(&r.stats));
                r.spawn();
            }
            None => tracing::info!("STAMP reflector off"),
        }
        let stop = &opts.stop;
        let archive = &opts.archive;
        let mut threads = Vec::new();
        // What MQTT readings come in, for /metrics (the ingest starts below).
        let readings_stats = sonde_web::readings_ingest::IngestStats::for_config(&config.readings);
        let http = &config.http;
        if let Some(addr) = opts.http.or(http.listen) {
            let web = sonde_web::WebConfig {
                addr,
                archive: archive.clone(),
                http: http.clone(),
                gate: Arc::clone(&gate),
                campaigns_dir: opts.campaigns.clone(),
                live: Arc::clone(&live),
                counters: Arc::clone(&counters),
                mesh: config.mesh.clone(),
                audit: Some(server.api_audit()),
                mailer: mailer.clone(),
                readings: readings_stats.clone(),
            };
            let (bound, handle) = sonde_web::spawn(web, Arc::clone(stop))
                .map_err(|e| DaemonError::Flag(format!("--http {addr}: {e}")))?;
            tracing::info!(name: "http_listening", http = %bound, "HTTP API, portal and /metrics listening");
            threads.push(handle);
            if !http.interface_interval.is_zero() {
                let sampler = sonde_web::interfaces::spawn_sampler(
                    archive.clone(),
                    http.interfaces.clone(),
                    http.interface_interval,
                    Arc::clone(stop),
                )
                .map_err(|e| start_error("sample the interfaces", &e))?;
                threads.push(sampler);
            }
        }
        if let Some(dir) = &opts.campaigns {
            let token = config
                .client
                .token()
                .map_err(|(key, reason)| DaemonError::Config(format!("{key}: {reason}")))?;
            let handle = crate::campaign_watch::spawn(
                dir.clone(),
                archive.clone(),
                Arc::clone(&live),
                token,
                Arc::clone(&gate),
                Arc::clone(stop),
            )
            .map_err(|e| start_error("start the campaigns", &e))?;
            threads.push(handle);
        }
        if !config.forward.is_empty() {
            let started =
                sonde_mesh::start(archive, &config.forward, stop).map_err(|e| match e {
                    sonde_mesh::ForwardError::Config(_) => config_error(&e),
                    e => start_error("start forwarding", &e),
                })?;
            threads.extend(started);
        }
        let deliverer =
            sonde_alerts::Deliverer::new(&rules, mailer).map_err(|e| config_error(&e))?;
        let alerts = sonde_alerts::start(archive, rules, deliverer, stop)
            .map_err(|e| start_error("start the alerts", &e))?;
        threads.extend(alerts);
        let ingest = sonde_web::readings_ingest::spawn(
            archive.clone(),
            &config.readings,
            Arc::clone(stop),
            readings_stats.unwrap_or_default(),
        )
        .map_err(|e| config_error(&e))?;
        threads.extend(ingest);
        // SQLite has no months to make: its upkeep is retention only.
        if config.archive.keep_months > 0 || archive.starts_with("postgres") {
            let upkeep = crate::archive_upkeep::spawn(
                archive.clone(),
                config.archive.clone(),
                Arc::clone(stop),
            )
            .map_err(|e| start_error("start the archive's upkeep", &e))?;
            threads.push(upkeep);
        }
        let snmp = sonde_snmp::spawn(archive, &config.snmp, stop).map_err(|e| config_error(&e))?;
        threads.extend(snmp);
        let member =
            sonde_mesh::member::start(&config.mesh, opts.campaigns.as_deref(), &gate, stop)
                .map_err(|e| config_error(&e))?;
        threads.extend(member);
        if let Some(reread) = &opts.reread {
            let watcher = crate::reload::spawn(
                config.clone(),
                Arc::clone(reread),
                server.reloader(),
                Arc::clone(&opts.hup),
                Arc::clone(stop),
            )
            .map_err(|e| start_error("watch for SIGHUP", &e))?;
            threads.push(watcher);
        }
        let until = Until {
            one_off: opts.one_off,
            idle_timeout: opts.idle_timeout,
            stop: Some(Arc::clone(stop)),
        };
        let addrs: Vec<String> = server
            .local_addrs()
            .iter()
            .map(ToString::to_string)
            .collect();
        crate::readiness::ready(&format!("serving on {}", addrs.join(", ")));
        let why = server.run_until(&until);
        crate::readiness::stopping(&format!("stopping: {why:?}"));
        tracing::info!(name: "server_stopped", reason = ?why, "server stopped");
        // The server may stop for another reason than a signal.
        stop.store(true, Ordering::Relaxed);
        for h in threads {
            let _ = h.join();
        }
        Ok(why)
    }
}

fn log_limits(limits: &sonde_server::Limits) {
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
