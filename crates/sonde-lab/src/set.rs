//! `sonde lab set`: a running link's emulator settings changed in place.
//!
//! The emulator of link N runs in its own namespace (`…-_eN`) with each
//! direction's settings on its command line. A change reads them back,
//! stops that emulator and starts a new one with the settings changed, in
//! the same namespace on the same interfaces: the link pauses for the few
//! milliseconds between the two, and keeps its addresses, routes, queues
//! and every connection across it. Only what the emulator does (delay,
//! jitter, line rate, random loss, an MPLS hop) can change this way; a
//! link without an emulator has none to change.

use crate::emulator::{Impairment, Lsr};
use crate::netns::{run_cmd, LabError, Netns};
use std::time::{Duration, Instant};

/// Which directions of a link a change applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ends {
    Both,
    AToB,
    BToA,
}

/// What to change; `None` keeps the setting as it is.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EmulatorChange {
    /// One-way delay of each direction changed.
    pub delay: Option<Duration>,
    pub jitter: Option<Duration>,
    /// Line rate in bits/s (0: none).
    pub line_rate_bps: Option<u64>,
    /// Random loss, a probability per packet (0: none), in place of any
    /// loss model.
    pub loss: Option<f64>,
    /// An MPLS hop put in (or taken out: `Some(None)`).
    pub mpls: Option<Option<Lsr>>,
}

/// The settings of link `link`'s running emulator: its program, its pid
/// and each direction's settings (a → b, b → a).
struct Running {
    pid: u32,
    program: String,
    l2r: Impairment,
    r2l: Impairment,
}

fn running(ns: &str) -> Option<Running> {
    let pids = run_cmd("ip", &["netns", "pids", ns]).ok()?;
    for pid in String::from_utf8_lossy(&pids.stdout).split_whitespace() {
        let Ok(raw) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let args: Vec<String> = raw
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let of = |flag: &str| {
            args.iter()
                .position(|a| a == flag)
                .and_then(|i| args.get(i + 1))
                .and_then(|j| serde_json::from_str::<Impairment>(j).ok())
        };
        if let (Some(l2r), Some(r2l), Ok(pid)) = (of("--l2r"), of("--r2l"), pid.parse()) {
            return Some(Running {
                pid,
                program: args.first().cloned().unwrap_or_default(),
                l2r,
                r2l,
            });
        }
    }
    None
}

fn apply(imp: &mut Impairment, c: &EmulatorChange) {
    if let Some(d) = c.delay {
        imp.delay_ns = d.as_nanos() as u64;
    }
    if let Some(j) = c.jitter {
        imp.jitter_ns = j.as_nanos() as u64;
    }
    if let Some(r) = c.line_rate_bps {
        imp.line_rate_bps = r;
    }
    if let Some(m) = &c.mpls {
        imp.mpls = m.clone();
    }
    if let Some(p) = c.loss {
        // Random loss is a Gilbert-Elliott chain that never leaves its
        // good state.
        imp.gilbert = (p > 0.0).then_some(crate::emulator::Gilbert {
            p: 0.0,
            r: 1.0,
            loss_good: p,
            loss_bad: 1.0,
        });
    }
}

/// Changes link `link` (1-based) of `lab` as `change` says, on `ends`;
/// returns the settings now in force (a → b, b → a).
pub fn set_emulator(
    lab: &str,
    link: usize,
    ends: Ends,
    change: &EmulatorChange,
) -> Result<(Impairment, Impairment), LabError> {
    if !crate::names::list().contains_key(lab) {
        return Err(LabError::NoSuchLab {
            lab: lab.to_string(),
        });
    }
    let ns = crate::names::ns_name(lab, &format!("_e{link}"));
    let Some(mut now) = running(&ns) else {
        return Err(LabError::NotEmulated { link });
    };
    if matches!(ends, Ends::Both | Ends::AToB) {
        apply(&mut now.l2r, change);
    }
    if matches!(ends, Ends::Both | Ends::BToA) {
        apply(&mut now.r2l, change);
    }
    // The interfaces are free once the old emulator is gone: asked to
    // stop, then killed after 2 s.
    let alive = || process_runs(now.pid);
    for (signal, wait) in [("-TERM", 2), ("-KILL", 2)] {
        run_cmd("kill", &[signal, &now.pid.to_string()])?;
        let gone_by = Instant::now() + Duration::from_secs(wait);
        while alive() && Instant::now() < gone_by {
            std::thread::sleep(Duration::from_millis(2));
        }
        if !alive() {
            break;
        }
    }
    let json = |i: &Impairment| serde_json::to_string(i).unwrap_or_default();
    let child = Netns::adopt(&ns)
        .command(&now.program)
        .args(["lab", "emulate", "--left", "la", "--right", "lb"])
        .args(["--l2r", &json(&now.l2r), "--r2l", &json(&now.r2l)])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|source| LabError::StartEmulator {
            link,
            program: now.program.clone().into(),
            source,
        })?;
    // A `cpu` share stays with the link.
    crate::cpu_share::rejoin(&ns, child.id())
        .map_err(|source| LabError::CpuShare { link, source })?;
    if !wait_ready(&ns) {
        return Err(LabError::EmulatorNotReady { link });
    }
    Ok((now.l2r, now.r2l))
}

/// Waits (up to 5 s) until the emulator's two packet sockets are
/// bound to their interfaces (false: they were not), so the link carries frames again when `set`
/// returns. The namespace's packet socket table (`/proc/<pid>/net/packet`)
/// says so: a socket that exists but is not bound yet has interface 0,
/// and counting open socket descriptors (as this did first) let `set`
/// return in that gap. Only the emulator holds packet sockets there.
pub(crate) fn wait_ready(ns: &str) -> bool {
    let bound = |pid: &str| {
        std::fs::read_to_string(format!("/proc/{pid}/net/packet"))
            .map(|table| bound_packet_sockets(&table))
            .unwrap_or(0)
    };
    let end = Instant::now() + Duration::from_secs(5);
    while Instant::now() < end {
        let pids = run_cmd("ip", &["netns", "pids", ns])
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        if pids.split_whitespace().any(|p| bound(p) >= 2) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

/// Whether process `pid` still runs: a zombie (state Z or X in
/// `/proc/PID/stat`, after the command in parentheses) has let go of its
/// sockets.
fn process_runs(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

/// How many sockets of a `/proc/net/packet` table are bound to an
/// interface and running (columns `Iface` and `R`).
fn bound_packet_sockets(table: &str) -> usize {
    table
        .lines()
        .skip(1)
        .filter(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            cols.get(4).is_some_and(|iface| *iface != "0") && cols.get(5) == Some(&"1")
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::bound_packet_sockets;

    #[test]
    fn only_bound_running_sockets_count() {
        let table = "sk               RefCnt Type Proto  Iface R Rmem   User   Inode\n\
                     ffff8881 3      3    0003   2     1 0      0      4001\n\
                     ffff8882 3      3    0003   0     1 0      0      4002\n\
                     ffff8883 3      3    0003   3     1 0      0      4003\n\
                     ffff8884 3      3    0003   4     0 0      0      4004\n";
        assert_eq!(bound_packet_sockets(table), 2);
        assert_eq!(bound_packet_sockets("sk RefCnt Type Proto Iface R\n"), 0);
    }

    #[test]
    fn this_process_runs_and_a_pid_that_is_not_there_does_not() {
        assert!(super::process_runs(std::process::id()));
        assert!(!super::process_runs(u32::MAX));
    }
}
