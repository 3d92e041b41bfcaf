//! The host a measurement ran on, as each end reports it.

use serde::{Deserialize, Serialize};

/// What one end of a test ran on, so that a figure can be explained later.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
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
