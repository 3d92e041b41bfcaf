//! Whether a test's client is still there while the server waits for it
//! (its data connections, its UDP hellos): a client that closed its
//! control connection frees its test slot at once, not at the end of
//! the wait.

use std::net::TcpStream;
use std::time::Duration;

/// How often a test waiting for its client checks that it is still there.
pub(crate) const GONE_POLL: Duration = Duration::from_millis(100);

/// Whether the peer closed (or reset) `control`; a peer that is there,
/// or sent something early, is not gone.
pub(crate) fn client_gone(control: &TcpStream) -> bool {
    if control.set_nonblocking(true).is_err() {
        return false;
    }
    let mut b = [0u8; 1];
    let gone = match control.peek(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
    };
    let _ = control.set_nonblocking(false);
    gone
}
