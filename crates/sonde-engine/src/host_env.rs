//! What this host is, for the `env` part of a result.

use sonde_model::{HostEnv, SONDE_VERSION};

fn proc_line(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// This host's kernel, name, CPU count and default congestion control.
pub fn host_env() -> HostEnv {
    HostEnv {
        sonde_version: SONDE_VERSION.to_string(),
        os: std::env::consts::OS.to_string(),
        kernel: proc_line("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into()),
        hostname: proc_line("/proc/sys/kernel/hostname").unwrap_or_default(),
        cpus: std::thread::available_parallelism()
            .map(|n| u32::try_from(n.get()).unwrap_or(u32::MAX))
            .unwrap_or(1),
        default_congestion: proc_line("/proc/sys/net/ipv4/tcp_congestion_control"),
    }
}

/// Congestion control algorithms this kernel offers.
pub fn available_congestion() -> Vec<String> {
    proc_line("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .map(|s| s.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}
