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

pub mod compare;
mod error;
pub mod limiter;
pub mod ndr;
pub mod overhead;
pub mod qos;
pub mod repeat;
pub mod step;
pub mod sweep;
pub mod tune;
pub mod work;

#[cfg(test)]
mod events_tests;
#[cfg(test)]
mod limiter_tests;
#[cfg(test)]
mod sweep_tests;

#[cfg(test)]
pub(crate) mod scripted;

pub use error::MethodError;
pub use work::method_work;

use sonde_model::{MethodResult, MethodSpec};
use sonde_run::{Events, Runner, Stop};

/// Runs any method but `tune_lab` (which needs a lab to change) with
/// `runner`: the one dispatcher of a command, a campaign's step and the
/// web's. Its trials' events and its own progress
/// ([`Event::Method`](sonde_model::Event::Method)) go on `events`.
pub fn run_method(
    runner: &dyn Runner,
    spec: &MethodSpec,
    stop: &Stop,
    events: &Events,
) -> Result<MethodResult, MethodError> {
    let senders = qos::Senders {
        local: runner,
        agent: None,
    };
    match spec {
        MethodSpec::Ndr(s) => ndr::run_ndr(runner, s, stop, events),
        MethodSpec::Sweep(s) => sweep::run_sweep(runner, s, stop, events),
        MethodSpec::Repeat(s) => repeat::run_repeat(runner, s, stop, events),
        MethodSpec::QosCheck(s) => qos::run_qos_checks(&senders, s, stop, events),
        MethodSpec::QosScenario(s) => qos::run_qos_scenario(&senders, s, stop, events),
        MethodSpec::Overhead(s) => overhead::run_overhead(runner, s, stop, events),
        MethodSpec::Tune(s) => tune::run_tune(runner, s, stop, events),
        MethodSpec::TuneLab(_) => Err(MethodError::Invalid {
            field: "method",
            detail: "tune_lab changes a lab's links: run it with `sonde tune --lab`".into(),
        }),
    }
}
