//! SIGTERM, SIGINT and SIGHUP for `sonde serve`: each sets a flag the
//! server's loop reads, so it stops in order (a pidfile is removed, the
//! log says why). The only unsafe code in this crate: two `sigaction`
//! calls' worth of `libc::signal`.
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicBool, Ordering};

/// Set by the handler; read by the server loop.
pub static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    // An atomic store is async-signal-safe.
    STOP.store(true, Ordering::Relaxed);
}

/// Installs the handler for SIGTERM, SIGINT and SIGHUP.
pub fn install() {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        // SAFETY: `on_signal` only stores to an atomic, which is
        // async-signal-safe; `signal` has no other preconditions.
        unsafe {
            libc::signal(sig, handler);
        }
    }
}
