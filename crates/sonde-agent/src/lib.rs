//! sonde's daemon: the test endpoint behind `sonde serve`, with the limits
//! and access rules every request is checked against.
//!
//! Connections are handled on their own threads; a client that sends
//! garbage, stalls or vanishes ends only its own connection.

pub mod config;
mod iperf3_session;
mod iperf3_udp_session;
pub mod limits;
pub mod reflector;
mod registry;
pub mod server;
mod session;
mod udp_session;

pub use config::{ConfigError, Limits, ReflectorConfig, ServerConfig};
pub use reflector::Reflector;
pub use server::{ServeError, Server};
