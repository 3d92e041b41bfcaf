//! What this host is, for the `env` part of a result.

use sonde_model::{HostEnv, TcpBuffers, SONDE_VERSION};

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
        tcp_buffers: tcp_buffers(),
    }
}

/// This host's (this network namespace's) TCP buffer sysctls, if
/// readable.
pub fn tcp_buffers() -> Option<TcpBuffers> {
    let num = |name: &str| {
        proc_line(&format!("/proc/sys/net/{name}"))?
            .parse::<u64>()
            .ok()
    };
    let three = |name: &str| -> Option<[u64; 3]> {
        let line = proc_line(&format!("/proc/sys/net/{name}"))?;
        let v: Vec<u64> = line
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect();
        Some([*v.first()?, *v.get(1)?, *v.get(2)?])
    };
    Some(TcpBuffers {
        rmem_max: num("core/rmem_max")?,
        wmem_max: num("core/wmem_max")?,
        tcp_rmem: three("ipv4/tcp_rmem")?,
        tcp_wmem: three("ipv4/tcp_wmem")?,
        window_scaling: num("ipv4/tcp_window_scaling").is_none_or(|v| v != 0),
        available_congestion: available_congestion(),
    })
}

/// Congestion control algorithms this kernel offers.
pub fn available_congestion() -> Vec<String> {
    proc_line("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .map(|s| s.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}
