//! sonde's daemon: what `sonde serve` starts around the test endpoint
//! (`sonde-server`).
//!
//! - [`archive_upkeep`]: `[archive]`, months made ahead and retention.
//! - [`config`]: the serve file, one typed document ([`AgentConfig`])
//!   whose sections are defined and checked by the crates that use them.
//! - [`client_config`]: `[client]`, how the agent's own tests present
//!   themselves.
//! - [`third_party`]: the runner the endpoint's control port runs
//!   third-party tests with.
//! - [`campaign_watch`]: `--campaigns DIR`, every plan in DIR on its own
//!   scheduler, reloaded on change.
//! - [`daemon`]: binds the endpoint, then starts and stops the rest.
//! - [`privilege`]: `--user`: root becomes the daemon's user, keeping
//!   only the capabilities it needs.
//! - [`readiness`]: ready and stopping, told to systemd (`Type=notify`).
//! - [`reload`]: SIGHUP: `[limits]` and `[auth]` read again and put in
//!   force for new tests.

pub mod archive_upkeep;
pub mod campaign_watch;
pub mod client_config;
pub mod config;
pub mod daemon;
pub mod privilege;
pub mod readiness;
pub mod reload;
pub mod third_party;

pub use config::AgentConfig;
pub use third_party::RunnerRelay;
