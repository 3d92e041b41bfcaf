//! The data loops: one thread per TCP stream, writing or reading as fast
//! as the path (or the pacer) allows, counting bytes into shared atomics.

use crate::pacer::Pacer;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How often a blocked read or write wakes to check the stop flag.
const POLL: Duration = Duration::from_millis(250);

/// Smallest read buffer of an unpaced receiver.
const RECEIVE_BUFFER: usize = 128 * 1024;

/// Counters one stream thread updates and the sampler reads.
#[derive(Debug)]
pub struct StreamCounters {
    pub bytes: AtomicU64,
    /// Nanoseconds from the side's start to the first byte moved
    /// (`u64::MAX` until then).
    pub first_data_ns: AtomicU64,
    /// Nanoseconds from the side's start to the last byte moved.
    pub last_data_ns: AtomicU64,
}

impl Default for StreamCounters {
    fn default() -> Self {
        Self {
            bytes: AtomicU64::new(0),
            first_data_ns: AtomicU64::new(u64::MAX),
            last_data_ns: AtomicU64::new(0),
        }
    }
}

impl StreamCounters {
    fn add(&self, n: usize, start: Instant) {
        let before = self.bytes.fetch_add(n as u64, Ordering::Relaxed);
        let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX - 1);
        if before == 0 {
            self.first_data_ns.store(ns, Ordering::Relaxed);
        }
        self.last_data_ns.store(ns, Ordering::Relaxed);
    }
}

/// When and how a stream moves data.
#[derive(Debug, Clone, Copy)]
pub struct LoopTiming {
    /// The side's start (t = 0).
    pub start: Instant,
    /// When senders stop writing.
    pub send_end: Instant,
    /// When receivers give up waiting for the sender's close.
    pub hard_end: Instant,
}

fn transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

fn fill_pattern(len: usize) -> Vec<u8> {
    // A non-repeating byte pattern, so compression on the path gains nothing.
    let mut x: u32 = 0x9e37_79b9;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x.to_le_bytes()[0]
        })
        .collect()
}

/// Moves data with `op` (one write or read) until `end`, `stop`, or `op`
/// returns 0 (end of stream), never faster than `pacer`.
fn pump(
    counters: &StreamCounters,
    start: Instant,
    end: Instant,
    pacer: Option<Pacer>,
    stop: &AtomicBool,
    mut op: impl FnMut() -> io::Result<usize>,
) -> io::Result<()> {
    let mut moved: u64 = 0;
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now >= end {
            break;
        }
        if let Some(wait) = pacer.and_then(|p| p.wait(moved, now - start)) {
            std::thread::sleep(wait.min(end - now).min(POLL));
            continue;
        }
        match op() {
            Ok(0) => break,
            Ok(n) => {
                moved += n as u64;
                counters.add(n, start);
            }
            Err(e) if transient(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Writes until `send_end` or `stop`, then closes its half and waits for
/// the receiver to close, so that the final TCP_INFO covers every byte.
pub fn send_loop(
    mut stream: TcpStream,
    counters: &StreamCounters,
    t: LoopTiming,
    length: usize,
    pacer: Option<Pacer>,
    stop: &AtomicBool,
) -> io::Result<()> {
    stream.set_write_timeout(Some(POLL))?;
    if let Some(p) = pacer {
        // The kernel smooths packets within each paced write; 10 % above
        // the target so the application pacer stays the one that binds.
        let cap = p
            .rate()
            .bytes_per_sec()
            .saturating_add(p.rate().bytes_per_sec() / 10);
        if let Err(e) = crate::sys::set_max_pacing_rate(&stream, cap) {
            tracing::debug!(error = %e, "SO_MAX_PACING_RATE not set");
        }
    }
    let buf = fill_pattern(pacer.map_or(length, |p| p.chunk(length)));
    pump(counters, t.start, t.send_end, pacer, stop, || {
        stream.write(&buf)
    })?;
    stream.shutdown(Shutdown::Write)?;
    // Wait for the receiver's close; what it sends is discarded.
    stream.set_read_timeout(Some(POLL))?;
    let mut scratch = [0u8; 512];
    let ignore = StreamCounters::default();
    match pump(&ignore, t.start, t.hard_end, None, stop, || {
        stream.read(&mut scratch)
    }) {
        Err(e) if e.kind() == io::ErrorKind::ConnectionReset => Ok(()),
        other => other,
    }
}

/// Reads until the sender closes, `hard_end`, or `stop`. With a pacer,
/// reads no faster than its rate (a server's rate limit, enforced by
/// TCP flow control whatever the sender does).
pub fn receive_loop(
    mut stream: TcpStream,
    counters: &StreamCounters,
    t: LoopTiming,
    length: usize,
    pacer: Option<Pacer>,
    stop: &AtomicBool,
) -> io::Result<()> {
    stream.set_read_timeout(Some(POLL))?;
    let size = pacer.map_or(length.max(RECEIVE_BUFFER), |p| p.chunk(length));
    let mut buf = vec![0u8; size];
    pump(counters, t.start, t.hard_end, pacer, stop, || {
        stream.read(&mut buf)
    })
}
