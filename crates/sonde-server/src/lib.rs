//! sonde's daemon: the test endpoint behind `sonde serve`, with the limits
//! and access rules every request is checked against.
//!
//! Handshakes are carried by one event-driven acceptor; connections that
//! finished theirs are handled on their own threads. A client that sends
//! garbage, stalls or vanishes ends only its own connection.
//!
//! How a test gets served, module by module (each uses only those listed
//! before it):
//!
//! - [`limits_config`]: `[limits]`, what clients may ask for ([`Limits`]).
//! - [`config`]: what the server runs with (addresses, the limits,
//!   reflector, and each section of the serve file).
//! - `limits`: the rules — is this address allowed, does what a test
//!   asks fit the limits and this host — pure checks, each failing with a
//!   [`sonde_wire::Refusal`] that names the limit, its value and the ask.
//! - [`auth_config`]: the `[auth]` table — tokens, limit classes, the
//!   audit log.
//! - `access`: `[auth]` in force — secrets, classes folded into the
//!   limits, a client's class by token or prefix.
//! - `cut`: a test cut down to its class's caps (`over_limit = "cut"`).
//! - `audit`: one JSON line per decision, flushed as written.
//! - `state`: everything connections share — the limits in force, test
//!   slots, the connection count, the registry of tests waiting for their
//!   data connections.
//! - `admission`: the one path into a test: class → address → spec →
//!   limits (refused or cut) → slot, each decision audited.
//! - `native`: connections that open with sonde's preamble; its `auth`
//!   proves a token, its `tcp` and `udp` run admitted tests.
//! - `iperf3`: connections that open with an iperf3 cookie; its `tcp`
//!   and `udp` run admitted tests in iperf3's protocol.
//! - `handshake`: a new connection's first bytes judged without
//!   blocking: its protocol, whether its opening is in, its source, and
//!   the refusal when a cap is full.
//! - `acceptor`: one thread that accepts every connection and carries
//!   its handshake (deadline: [`HANDSHAKE_DEADLINE`]) without a thread of
//!   its own, under the caps; then hands it to `native` or `iperf3`.
//! - [`server`]: binds, and runs the acceptor.
//! - [`reflector`]: the STAMP reflector, on its own UDP sockets.
//! - `third_party_runner`: what the daemon gives the control port to run
//!   third-party tests with ([`ThirdPartyRunner`]).

mod acceptor;
mod access;
mod admission;
mod api_audit;
mod audit;
pub mod auth_config;
pub mod config;
pub mod counters;
mod cut;
mod gone;
mod handshake;
mod iperf3;
mod limits;
pub mod limits_config;
mod native;
pub mod reflector;
mod refusal_log;
pub mod server;
mod state;
mod third_party_runner;

pub use admission::{check_tcp_limits, check_udp_limits};
pub use api_audit::ApiAudit;
pub use auth_config::{AuthConfig, ClassConfig, OverLimit, Permission, TokenConfig};
pub use config::{ConfigError, Limits, ReflectorConfig, ServerConfig};
pub use counters::{AgentCounters, CountersNow};
pub use handshake::HANDSHAKE_DEADLINE;
pub use reflector::{Reflector, ReflectorError};
pub(crate) use refusal_log::log_refused;
pub use server::{Reloader, ServeError, Server, Stopped, Until};
pub use sonde_wire::Refusal;
pub use state::{TestSlot, TestSlots};
pub use third_party_runner::{ThirdPartyFailure, ThirdPartyRunner};
