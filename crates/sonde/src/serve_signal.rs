//! SIGTERM, SIGINT and SIGHUP for `sonde serve`: each sets a flag the
//! server's loop reads, so it stops in order (a pidfile is removed, the
//! log says why). signal-hook installs the handlers (no unsafe here).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// A flag that SIGTERM, SIGINT or SIGHUP sets.
pub fn install() -> std::io::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(sig, Arc::clone(&flag))?;
    }
    Ok(flag)
}
