//! `[limits]`: what clients may ask of this server. Each key has a
//! default that keeps a server on a shared network from being
//! monopolised; `docs/serve.md` documents them.

use ipnet::IpNet;
use serde::Deserialize;
use sonde_model::Rate;
use std::net::{IpAddr, Ipv6Addr};
use std::time::Duration;

/// Limits on what clients may ask for. Each has a default that keeps a
/// server on a shared network from being monopolised.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Longest test, warm-up (`-O`) included.
    #[serde(with = "sonde_model::serde_secs")]
    pub max_duration: Duration,
    /// Most data connections in one test (`-P` × directions).
    pub max_streams: u16,
    /// Most tests running at once, from all clients.
    pub max_concurrent_tests: u32,
    /// Highest total rate one test may ask for; `None`: no cap. With a
    /// cap, tests must be paced (`-b`), and the server paces its own
    /// sending and reading to the rate asked.
    pub max_rate: Option<Rate>,
    /// Client prefixes allowed to run tests.
    pub allow: Vec<IpNet>,
    /// Most connections the server holds at once: handshakes under way
    /// and tests' control connections (a data connection counts until it
    /// is handed to its test). A client over it is refused in its own
    /// protocol ("server full").
    pub max_connections: u32,
    /// Most handshakes under way at once from one source: an IPv4
    /// address, or an IPv6 /64 (v4-mapped addresses count as IPv4). A
    /// client over it is refused in its own protocol, so one host
    /// cannot fill the server with connections that never finish.
    pub max_handshakes_per_source: u32,
    /// Client prefixes that may ask this server to run third-party tests
    /// (a test from this host toward another sonde server). Empty, the
    /// default: none may. The client must also be in `allow`, and the
    /// test must fit these limits.
    pub third_party_allow: Vec<IpNet>,
    /// Longest a whole request from elsewhere than the command line may
    /// run: a method's every trial and gap, a ping's every series. Each
    /// test (each trial) must also fit `max_duration`.
    #[serde(with = "sonde_model::serde_secs")]
    pub max_work: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_duration: Duration::from_secs(300),
            max_streams: 256,
            max_concurrent_tests: 4,
            max_rate: None,
            allow: vec![
                IpNet::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0).unwrap_or_default(),
                IpNet::new(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), 0).unwrap_or_default(),
            ],
            max_connections: 1024,
            max_handshakes_per_source: 32,
            third_party_allow: Vec::new(),
            max_work: Duration::from_secs(3600),
        }
    }
}
