//! sonde's measurement engine: TCP and UDP senders and receivers, pacing,
//! counters and TCP_INFO sampling, what both ends of a native test agree
//! on (`tcp::protocol`, `udp::protocol`), the control channel, and the
//! syscalls (`sys`, shared with the lab).
//!
//! The engine moves bytes and counts them. The client's sessions (ask,
//! run, swap reports; natively or in iperf3's protocol) are sonde-run's;
//! what may run (limits, who may connect) is sonde-server's business, and
//! how results look is the report crate's. The probes of `ping/` and
//! `trace/` are senders and receivers of their own and stay here.

pub mod auth;
pub mod budget;
pub mod connect;
pub mod control;
mod error;
pub mod host_env;
pub mod iperf3;
pub mod pacer;
pub mod ping;
pub mod sampler;
pub mod sockopt;
pub mod stamp_limit;
pub mod stamp_reflector;
pub mod sys;
pub mod tcp;
pub mod trace;
pub mod udp;

pub use error::EngineError;
pub use sys::tight_timer_slack;
pub use tcp::protocol::TestEvent;
