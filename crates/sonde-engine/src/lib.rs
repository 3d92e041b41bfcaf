//! sonde's measurement engine: TCP senders and receivers, pacing,
//! counters and TCP_INFO sampling, and the client end of a test.
//!
//! The engine moves bytes and counts them; what may run (limits, who may
//! connect) is the agent's business, and how results look is the
//! report crate's.

pub mod client;
pub mod connect;
pub mod control;
mod error;
pub mod host_env;
pub mod iperf3;
pub mod pacer;
pub mod ping;
pub mod side;
pub mod sockopt;
pub mod stamp_reflector;
pub mod stream;
mod sys;
pub mod tcp_info;
pub mod udp_client;
pub mod udp_flow;
pub mod udp_recv;
pub mod udp_schedule;
pub mod udp_send;
pub mod udp_side;
pub mod udp_stats;

pub use client::{run_tcp, TestEvent};
pub use error::EngineError;
