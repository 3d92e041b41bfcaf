//! What runs a third-party test for the control port (docs/protocol.md):
//! the endpoint admits the request and relays what happens; the daemon
//! that starts the server gives it the runner ([`crate::Server::third_party`]).
//! A server without one refuses third-party requests as unavailable, so
//! the endpoint alone needs no runner (nor the HTTP load generator and
//! its async stack that the runner brings).

use sonde_model::{Event, TestResult, TestSpec};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Why a third-party test gave no result, as the client hears it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThirdPartyFailure {
    /// The failure's kind (a runner error's `kind()`: `refused`,
    /// `unreachable`, …).
    pub kind: String,
    pub message: String,
}

/// Runs a TCP or UDP test from this host toward another sonde server.
pub trait ThirdPartyRunner: Send + Sync + std::fmt::Debug {
    /// Runs `spec` until it ends or `stop` is set, handing each event to
    /// `relay` as it happens.
    fn run(
        &self,
        spec: &TestSpec,
        stop: &Arc<AtomicBool>,
        relay: &mut dyn FnMut(&Event),
    ) -> Result<TestResult, ThirdPartyFailure>;
}
