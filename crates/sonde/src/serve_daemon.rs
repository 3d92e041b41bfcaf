//! `sonde serve -D` and `-I`: the server detached from the terminal, and
//! its pidfile.
//!
//! Detaching starts this same program again with the same arguments, in
//! a process group of its own, standard streams on `/dev/null`, and
//! [`DETACHED_ENV`] set so the new process serves instead of detaching
//! again; the first process exits once the server has started. (No
//! `fork`: a forked multi-threaded process is not safe to go on with.)
//! Without `--logfile` a detached server's log goes nowhere: sonde has no
//! syslog output.

use crate::failure::Failure;
use anyhow::{anyhow, Context};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Set in the detached server's environment.
pub const DETACHED_ENV: &str = "SONDE_SERVE_DETACHED";

/// How long the first process waits to see the server come up.
const START_WAIT: Duration = Duration::from_secs(5);

/// Whether this process is the detached server.
pub fn is_detached() -> bool {
    std::env::var_os(DETACHED_ENV).is_some()
}

/// Starts the detached server and returns once it runs (its pidfile
/// written, if one was asked for) or has failed.
pub fn detach(pidfile: Option<&Path>) -> Result<(), Failure> {
    let exe = std::env::current_exe().context("cannot find this program to detach")?;
    let mut child = {
        use std::os::unix::process::CommandExt;
        Command::new(exe)
            .args(std::env::args_os().skip(1))
            .env(DETACHED_ENV, "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .context("cannot start the detached server")?
    };
    let end = Instant::now() + START_WAIT;
    // Up when its pidfile names it; without one, when it is still
    // running after a second.
    let settle = Instant::now() + Duration::from_secs(1);
    loop {
        if let Some(status) = child
            .try_wait()
            .context("waiting for the detached server")?
        {
            return Err(Failure::Run(anyhow!(
                "the detached server exited at once ({status}); run without -D, or with --logfile, to see why"
            )));
        }
        let up = match pidfile {
            Some(p) => std::fs::read_to_string(p).is_ok_and(|t| t.trim() == child.id().to_string()),
            None => Instant::now() >= settle,
        };
        if up {
            return Ok(());
        }
        if Instant::now() >= end {
            return Err(Failure::Run(anyhow!(
                "the detached server (pid {}) did not write its pidfile in {}s",
                child.id(),
                START_WAIT.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A pidfile holding this process's id, removed when dropped.
#[derive(Debug)]
pub struct PidFile(PathBuf);

impl PidFile {
    pub fn create(path: &Path) -> Result<Self, Failure> {
        std::fs::write(path, format!("{}\n", std::process::id())).map_err(|e| {
            Failure::Usage(anyhow!("cannot write the pidfile {}: {e}", path.display()))
        })?;
        Ok(Self(path.to_path_buf()))
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
