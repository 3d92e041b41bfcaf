//! sonde's methods: many tests run through the [`Runner`] and read
//! together.
//!
//! - [`ndr`]: RFC 2544 §26.1 throughput, the highest rate a trial passes
//!   without loss (or under a loss bound), per frame size, found with a
//!   loss-informed search.
//! - [`sweep`]: one variable (rate, payload, streams, window) stepped,
//!   each direction measured on its own; a rate sweep names its
//!   [`limiter`].
//! - [`repeat`]: one test repeated (a number of times, or until
//!   stable), over one family or IPv6 and IPv4 in turn.
//! - [`step`]: how every step runs: repeated a number of times or until
//!   stable, over IPv6 and IPv4 in turn, with its statistics.
//!
//! This crate opens no socket: every test goes through a
//! [`Runner`](sonde_run::Runner), the real one on the command line and a
//! scripted path in the unit tests. Each method returns one
//! [`MethodResult`](sonde_model::MethodResult) holding every trial.

mod error;
pub mod limiter;
pub mod ndr;
pub mod overhead;
pub mod qos;
pub mod repeat;
pub mod step;
pub mod sweep;
pub mod tune;

#[cfg(test)]
mod limiter_tests;
#[cfg(test)]
mod sweep_tests;

#[cfg(test)]
pub(crate) mod scripted;

pub use error::MethodError;
