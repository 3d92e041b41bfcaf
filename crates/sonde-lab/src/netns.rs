//! A network namespace that exists as long as its [`Netns`] value.

use crate::topology::TopologyError;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

/// Where `ip netns exec` finds namespace `ns`'s own files.
pub(crate) fn etc_dir(ns: &str) -> PathBuf {
    PathBuf::from("/etc/netns").join(ns)
}

/// Why a lab, a pair or a chain could not be built or read back.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error("the lab needs root (CAP_NET_ADMIN); run as root")]
    NotRoot,
    /// The topology is not one that can be built.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// A program could not be started at all.
    #[error("cannot run {program}: {source} (is it installed?)")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    /// A program ran and failed: the command line, its exit code (`None`
    /// when a signal ended it) and what it said on stderr.
    #[error("`{command}` failed: {stderr}")]
    Failed {
        command: String,
        code: Option<i32>,
        stderr: String,
    },
    /// Link `link` needs sonde's emulator, and no sonde binary was given
    /// to run it.
    #[error("link {link} needs the sonde binary to run its emulator")]
    NoEmulator { link: usize },
    /// The emulator of link `link` could not be started.
    #[error("cannot start the emulator of link {link} ({}): {source}", .program.display())]
    StartEmulator {
        link: usize,
        program: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Link `link`'s `cpu` share could not be given to its emulator.
    #[error("link {link}: cannot give its emulator its cpu share: {source}")]
    CpuShare {
        link: usize,
        #[source]
        source: std::io::Error,
    },
    /// The emulator of link `link` started but did not take its
    /// interfaces (it died, or another still held them).
    #[error("the emulator of link {link} did not take its interfaces within 5 s")]
    EmulatorNotReady { link: usize },
    /// A file of the lab's could not be written (`/etc/netns/NS/hosts`).
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("no lab named '{lab}' (see `sonde lab list`)")]
    NoSuchLab { lab: String },
    /// A change of emulator settings on a link that has no emulator.
    #[error(
        "link {link} has no emulator to change: only links given a delay, jitter, loss \
         pattern, policer or line rate in their topology have one"
    )]
    NotEmulated { link: usize },
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|e| e == "0"))
        })
        .unwrap_or(false)
}

/// Runs a program to completion; an error carries its stderr.
pub fn run_cmd(program: &str, args: &[&str]) -> Result<Output, LabError> {
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|source| LabError::Spawn {
            program: program.to_string(),
            source,
        })?;
    if !out.status.success() {
        return Err(LabError::Failed {
            command: format!("{program} {}", args.join(" ")),
            code: out.status.code(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(out)
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A named network namespace, deleted on drop unless it belongs to a
/// lab that outlives the process (`sonde lab up`).
#[derive(Debug)]
pub struct Netns {
    name: String,
    keep: bool,
}

impl Netns {
    /// Creates `sonde-<pid>-<n>-<role>`, unique per process and call.
    pub fn create(role: &str) -> Result<Self, LabError> {
        if !is_root() {
            return Err(LabError::NotRoot);
        }
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = format!("sonde-{}-{n}-{role}", std::process::id());
        run_cmd("ip", &["netns", "add", &name])?;
        let ns = Self { name, keep: false };
        ns.ip(&["link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// Creates the namespace `name` and keeps it after this value is
    /// dropped (a lab's node).
    pub fn create_kept(name: &str) -> Result<Self, LabError> {
        if !is_root() {
            return Err(LabError::NotRoot);
        }
        run_cmd("ip", &["netns", "add", name])?;
        let ns = Self {
            name: name.to_string(),
            keep: true,
        };
        ns.ip(&["link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// An existing namespace, left alone on drop.
    pub fn adopt(name: &str) -> Self {
        Self {
            name: name.to_string(),
            keep: true,
        }
    }

    /// Kills what runs inside the namespace `name` and deletes it.
    pub fn delete(name: &str) {
        if let Ok(out) = Command::new("ip").args(["netns", "pids", name]).output() {
            for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                let _ = Command::new("kill").args(["-9", pid]).output();
            }
        }
        let _ = Command::new("ip").args(["netns", "del", name]).output();
        crate::cpu_share::remove(name);
        // Its own files (a lab node's hosts), which `ip netns del` leaves.
        let _ = std::fs::remove_dir_all(etc_dir(name));
    }

    /// Names of every network namespace on this host.
    pub fn list_all() -> Vec<String> {
        Command::new("ip")
            .args(["netns", "list"])
            .output()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .filter_map(|l| l.split_whitespace().next().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// `ip ARGS` inside the namespace.
    pub fn ip(&self, args: &[&str]) -> Result<Output, LabError> {
        let mut all = vec!["-n", self.name.as_str()];
        all.extend_from_slice(args);
        run_cmd("ip", &all)
    }

    /// Any program run to completion inside the namespace.
    pub fn run(&self, program: &str, args: &[&str]) -> Result<Output, LabError> {
        let mut all = vec!["netns", "exec", self.name.as_str(), program];
        all.extend_from_slice(args);
        run_cmd("ip", &all)
    }

    /// A command that will run inside the namespace (spawn it yourself).
    pub fn command(&self, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", self.name.as_str(), program]);
        c
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        if !self.keep {
            Netns::delete(&self.name);
        }
    }
}
