//! sonde's daemon: what `sonde serve` starts around the test endpoint
//! (`sonde-server`).
//!
//! - [`config`]: the serve file, one typed document ([`AgentConfig`])
//!   whose sections are defined and checked by the crates that use them.
//! - [`client_config`]: `[client]`, how the agent's own tests present
//!   themselves.
//! - [`third_party`]: the runner the endpoint's control port runs
//!   third-party tests with.

pub mod client_config;
pub mod config;
pub mod third_party;

pub use config::AgentConfig;
pub use third_party::RunnerRelay;
