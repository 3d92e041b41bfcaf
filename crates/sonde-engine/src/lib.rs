//! sonde's measurement engine: TCP senders and receivers, pacing,
//! counters and TCP_INFO sampling, and the client end of a test.
//!
//! The engine moves bytes and counts them; what may run (limits, who may
//! connect) is the agent's business, and how results look is the
//! report crate's.

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
pub use tcp::client::{run_tcp, TestEvent};
