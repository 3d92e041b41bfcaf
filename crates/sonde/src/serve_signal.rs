//! The signals of `sonde serve`: SIGTERM and SIGINT set the stop flag
//! the server's loop reads, so it stops in order (a pidfile is removed,
//! the log says why); SIGHUP sets the reload flag (the configuration read
//! again, sonde_agent::reload). signal-hook installs the handlers (no
//! unsafe here).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// The flags signals set.
pub struct Flags {
    /// SIGTERM or SIGINT.
    pub stop: Arc<AtomicBool>,
    /// SIGHUP.
    pub hup: Arc<AtomicBool>,
}

pub fn install() -> std::io::Result<Flags> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
    }
    let hup = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGHUP, Arc::clone(&hup))?;
    Ok(Flags { stop, hup })
}
