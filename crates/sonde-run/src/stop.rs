//! [`Stop`]: the flag that ends a run early (Ctrl-C, a scheduler's
//! deadline, an API call). What was measured until then is still the
//! result, marked `interrupted`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A shared stop flag; clones set and read the same flag.
#[derive(Debug, Clone, Default)]
pub struct Stop(Arc<AtomicBool>);

impl Stop {
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks every run watching this flag to stop.
    pub fn stop(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    pub fn is_stopped(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// The flag as the engine's loops read it.
    pub fn flag(&self) -> &Arc<AtomicBool> {
        &self.0
    }
}
