//! Readiness probes: the tests wait for what they need (a listener, an
//! accepted connection, a log line) instead of sleeping a guessed time.
//! Each probe gives up after a bound and panics saying what never came.
//!
//! Listeners are found in the kernel's socket tables (`/proc/net/tcp`,
//! `/proc/net/tcp6`) rather than by connecting: a probe connection is a
//! client to the server (iperf3 serves one at a time, and counts it).

use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

/// Polls `ready` every 20 ms until it holds; panics naming `what` after
/// `within`.
pub fn wait_until(what: &str, within: Duration, mut ready: impl FnMut() -> bool) {
    let end = Instant::now() + within;
    while !ready() {
        assert!(Instant::now() < end, "{what}: not within {within:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A TCP socket in the LISTEN state on `port`, from the text of
/// `/proc/net/tcp` or `/proc/net/tcp6` (or both, one after the other;
/// their header lines match no port): its accept queue's length (the
/// `rx_queue` column), or None if nothing listens there.
pub fn listen_queue(tables: &str, port: u16) -> Option<u64> {
    let queues: Vec<u64> = tables
        .lines()
        .filter_map(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let local_port = cols.get(1)?.rsplit(':').next()?;
            let listening =
                *cols.get(3)? == "0A" && u16::from_str_radix(local_port, 16).ok()? == port;
            let rx_queue = cols.get(4)?.split(':').nth(1)?;
            listening.then(|| u64::from_str_radix(rx_queue, 16).ok())?
        })
        .collect();
    (!queues.is_empty()).then(|| queues.iter().sum())
}

/// The accept queues of the listeners on `port` of this network
/// namespace (both families, every address), summed, if any listens.
pub fn local_listen_queue(port: u16) -> Option<u64> {
    let tables: String = ["/proc/net/tcp6", "/proc/net/tcp"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect();
    listen_queue(&tables, port)
}

/// Waits until something listens on TCP `port` here (10 s at most).
pub fn wait_listening(port: u16) {
    wait_until(
        &format!("a listener on TCP port {port}"),
        Duration::from_secs(10),
        || local_listen_queue(port).is_some(),
    );
}

/// Waits until the listener on `port` has accepted every connection
/// that completed its handshake (its accept queue is empty): the server
/// has taken, and counted, the clients that connected before this call.
pub fn wait_accepted(port: u16) {
    wait_until(
        &format!("the listener on TCP port {port} accepting its queue"),
        Duration::from_secs(10),
        || local_listen_queue(port) == Some(0),
    );
}

/// Waits until something listens on TCP `port` in the network namespace
/// `netns` (10 s at most).
pub fn wait_listening_in(netns: &str, port: u16) {
    wait_until(
        &format!("a listener on TCP port {port} in {netns}"),
        Duration::from_secs(10),
        || {
            Command::new("ip")
                .args([
                    "netns",
                    "exec",
                    netns,
                    "cat",
                    "/proc/net/tcp6",
                    "/proc/net/tcp",
                ])
                .output()
                .is_ok_and(|o| listen_queue(&String::from_utf8_lossy(&o.stdout), port).is_some())
        },
    );
}

/// The first connection to `listener`, within 10 s; the caller keeps it
/// open as long as the client must stay connected.
pub fn accept_within(listener: &TcpListener) -> TcpStream {
    listener
        .set_nonblocking(true)
        .expect("a non-blocking listener");
    let mut accepted = None;
    wait_until("a client connecting", Duration::from_secs(10), || {
        accepted = listener.accept().ok().map(|(s, _)| s);
        accepted.is_some()
    });
    let stream = accepted.expect("accepted");
    stream.set_nonblocking(false).expect("a blocking stream");
    stream
}
