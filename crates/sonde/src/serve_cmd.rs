//! `sonde serve`: the daemon (sonde-agent) in the foreground, or detached
//! (`-D`): its configuration from the file and the flags, its signals and
//! pid file.

use crate::failure::Failure;
use crate::run_args::duration;
use crate::serve_daemon::{self, PidFile};
use crate::serve_signal;
use anyhow::anyhow;
use clap::Args;
use ipnet::IpNet;
use sonde_agent::config::Checked;
use sonde_agent::daemon::{Daemon, DaemonError, Options};
use sonde_agent::privilege::{self, PrivilegeError};
use sonde_agent::AgentConfig;
use sonde_model::Rate;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Clone, Args)]
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
    /// Serve the API's and portal's reads from this PostgreSQL URL, a
    /// streaming replica of the archive's database; writes still go to
    /// --archive ([http] archive_read).
    #[arg(long, value_name = "URL")]
    pub archive_read: Option<String>,
    /// Started as root: become this user before binding anything, keeping
    /// only CAP_NET_RAW (and CAP_NET_BIND_SERVICE for a port below 1024).
    #[arg(long, value_name = "NAME")]
    pub user: Option<String>,
}

impl ServeArgs {
    /// The config file (if any) with the flags laid over it.
    pub fn to_config(&self) -> Result<(AgentConfig, Checked), Failure> {
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
        if let Some(url) = &self.archive_read {
            c.http.archive_read = Some(url.clone());
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
        let checked = c.check().map_err(|e| {
            let e = match &self.config {
                Some(path) => e.located(path),
                None => e,
            };
            Failure::Usage(anyhow!("invalid configuration: {e}"))
        })?;
        Ok((c, checked))
    }
}

pub fn run(args: ServeArgs) -> Result<(), Failure> {
    let (config, checked) = args.to_config()?;
    if let Some(path) = &args.logfile {
        crate::sink::append(path).map_err(|e| {
            Failure::Usage(anyhow!("cannot open the log file {}: {e}", path.display()))
        })?;
    }
    if args.daemon && !serve_daemon::is_detached() {
        return serve_daemon::detach(args.pidfile.as_deref());
    }
    // Where campaigns keep their results: root's default (/var/lib/sonde)
    // also when the daemon becomes another user.
    let archive = args
        .archive
        .clone()
        .unwrap_or_else(crate::archive_args::default_location);
    if let Some(user) = &args.user {
        let reflector = config.reflector.enabled.then_some(config.reflector.port);
        let http = args.http.or(config.http.listen).map(|a| a.port());
        let keep = privilege::needed([Some(config.port), reflector, http].into_iter().flatten());
        privilege::become_user(user, &keep).map_err(|e| match e {
            PrivilegeError::Switch { .. } => Failure::Run(e.into()),
            _ => Failure::Usage(e.into()),
        })?;
    }
    let daemon = Daemon::bind(config, checked).map_err(failure)?;
    let signals = serve_signal::install()
        .map_err(|e| Failure::Run(anyhow!("cannot install the signal handlers: {e}")))?;
    // SIGHUP reads the file again with the same flags over it.
    let again = args.clone();
    let reread: sonde_agent::reload::Reread =
        Arc::new(move || again.to_config().map(|(c, _)| c).map_err(|e| e.message()));
    let _pidfile = args.pidfile.as_deref().map(PidFile::create).transpose()?;
    let options = Options {
        http: args.http,
        campaigns: args.campaigns.clone(),
        archive,
        one_off: args.one_off,
        idle_timeout: args.idle_timeout,
        stop: signals.stop,
        hup: signals.hup,
        reread: Some(reread),
    };
    daemon.run(&options).map_err(failure)?;
    Ok(())
}

fn failure(e: DaemonError) -> Failure {
    match e {
        DaemonError::Config(_) | DaemonError::Flag(_) => Failure::Usage(e.into()),
        DaemonError::Start(_) => Failure::Run(e.into()),
    }
}
