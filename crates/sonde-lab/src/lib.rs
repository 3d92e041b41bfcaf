//! sonde's laboratory: Linux network namespaces joined by veth links,
//! shaped with the kernel's queueing disciplines, so that a measurement
//! can be checked against a path whose properties are known.
//!
//! Everything built here is removed on drop, also when a test panics.
//! Addresses come from the benchmarking ranges 2001:2::/48 (RFC 5180) and
//! 198.18.0.0/15 (RFC 2544), which no real network routes.
//!
//! Needs root (CAP_NET_ADMIN), `ip` and `tc` from iproute2, and `ethtool`.

mod chain;
mod cpu_share;
pub mod emulator;
mod hosts;
mod ingress;
pub mod lab;
mod names;
mod netns;
mod pair;
pub mod profile;
pub mod set;
mod shaper;
mod silent;
mod sys;
pub mod topology;

pub use chain::Chain;
pub use netns::{is_root, run_cmd, LabError, Netns};
pub use pair::{Link, Pair};
pub use profile::ProfileError;
pub use topology::{LinkDirection, Topology, TopologyError};
