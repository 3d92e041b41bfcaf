//! A link's `cpu` share: its emulator runs in a cgroup of its own whose
//! CPU bandwidth is that share of one core (the scheduler's quota per
//! period), as a router's or an encryption box's CPU bounds what it
//! forwards and encrypts. The cgroup is named after the emulator's
//! namespace and removed with it. cgroup v2's `cpu.max` where the unified
//! hierarchy has the cpu controller, else v1's `cpu.cfs_quota_us`.

use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The least share: a quota of 1 ms (the kernel's least) per 100 ms.
pub const MIN_SHARE: f64 = 0.01;

const ROOT: &str = "/sys/fs/cgroup";

/// The period and quota (µs) that give `share` of a core: periods of
/// 10 ms, longer where the quota would be under the kernel's 1 ms.
pub fn period_quota(share: f64) -> (u64, u64) {
    let period = (1000.0 / share).ceil().max(10_000.0) as u64;
    let quota = ((period as f64) * share).round().max(1000.0) as u64;
    (period, quota)
}

/// Where the cgroup of namespace `ns` lives, and whether it is v2's.
fn place(ns: &str) -> Option<(PathBuf, bool)> {
    let root = Path::new(ROOT);
    let v2 = std::fs::read_to_string(root.join("cgroup.controllers"))
        .is_ok_and(|c| c.split_whitespace().any(|c| c == "cpu"));
    if v2 {
        return Some((root.join(ns), true));
    }
    let v1 = root.join("cpu");
    v1.join("cpu.cfs_quota_us")
        .exists()
        .then(|| (v1.join(ns), false))
}

/// Puts process `pid` (the emulator of namespace `ns`) in a cgroup that
/// gets `share` of one core.
pub fn confine(ns: &str, pid: u32, share: f64) -> io::Result<()> {
    let (dir, v2) = place(ns).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::Unsupported,
            "this host has no cgroup cpu controller under /sys/fs/cgroup",
        )
    })?;
    std::fs::create_dir_all(&dir)?;
    let (period, quota) = period_quota(share);
    if v2 {
        // The root's children get the cpu controller (already on, mostly).
        let _ = std::fs::write(Path::new(ROOT).join("cgroup.subtree_control"), "+cpu");
        std::fs::write(dir.join("cpu.max"), format!("{quota} {period}"))?;
    } else {
        std::fs::write(dir.join("cpu.cfs_period_us"), period.to_string())?;
        std::fs::write(dir.join("cpu.cfs_quota_us"), quota.to_string())?;
    }
    std::fs::write(dir.join("cgroup.procs"), pid.to_string())
}

/// Moves a restarted emulator `pid` into namespace `ns`'s cgroup, if it
/// has one; whether it had.
pub fn rejoin(ns: &str, pid: u32) -> io::Result<bool> {
    match place(ns) {
        Some((dir, _)) if dir.is_dir() => {
            std::fs::write(dir.join("cgroup.procs"), pid.to_string()).map(|()| true)
        }
        _ => Ok(false),
    }
}

/// Removes namespace `ns`'s cgroup once its processes are gone (they
/// were just killed: up to a second).
pub fn remove(ns: &str) {
    let Some((dir, _)) = place(ns) else { return };
    if !dir.is_dir() {
        return;
    }
    let until = Instant::now() + Duration::from_secs(1);
    while std::fs::remove_dir(&dir).is_err() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_is_a_quota_of_a_period_never_under_a_millisecond() {
        assert_eq!(period_quota(0.5), (10_000, 5_000));
        assert_eq!(period_quota(1.0), (10_000, 10_000));
        assert_eq!(period_quota(0.1), (10_000, 1_000));
        // 3 %: 1 ms of every 34.
        let (p, q) = period_quota(0.03);
        assert_eq!(q, 1000);
        assert!((q as f64 / p as f64 - 0.03).abs() < 0.001, "{p} {q}");
        assert_eq!(period_quota(MIN_SHARE), (100_000, 1_000));
    }
}
