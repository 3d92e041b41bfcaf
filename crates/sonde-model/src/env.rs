//! The host a measurement ran on, as each end reports it.

use serde::{Deserialize, Serialize};

/// What one end of a test ran on, so that a figure can be explained later.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema)]
pub struct HostEnv {
    pub sonde_version: String,
    /// Operating system family, e.g. `linux`.
    pub os: String,
    /// Kernel release, e.g. `6.1.0-18-amd64`.
    pub kernel: String,
    pub hostname: String,
    pub cpus: u32,
    /// The system-wide default congestion control.
    pub default_congestion: Option<String>,
    /// The TCP buffer settings in force (Linux sysctls), for `sonde tune`
    /// and to explain a TCP figure; absent when not known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_buffers: Option<TcpBuffers>,
}

/// A host's TCP buffer settings: the four sysctls seed 003 tuned, window
/// scaling, and the congestion controls on offer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema)]
pub struct TcpBuffers {
    /// `net.core.rmem_max`: the most a socket may ask for (SO_RCVBUF).
    pub rmem_max: u64,
    /// `net.core.wmem_max`: the most a socket may ask for (SO_SNDBUF).
    pub wmem_max: u64,
    /// `net.ipv4.tcp_rmem`: min, default and autotuning max.
    pub tcp_rmem: [u64; 3],
    /// `net.ipv4.tcp_wmem`: min, default and autotuning max.
    pub tcp_wmem: [u64; 3],
    /// `net.ipv4.tcp_window_scaling` (RFC 7323).
    pub window_scaling: bool,
    /// `net.ipv4.tcp_available_congestion_control`.
    pub available_congestion: Vec<String>,
}

impl HostEnv {
    /// A peer known only by the software it runs (an iperf3 server or
    /// client does not describe its host): `software` stands where the
    /// sonde version would, the rest is empty.
    pub fn unknown(software: &str) -> Self {
        Self {
            sonde_version: software.to_string(),
            ..Self::default()
        }
    }
}
