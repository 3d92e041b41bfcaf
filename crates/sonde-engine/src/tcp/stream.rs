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

/// Data buffers start on a page boundary, as iperf3's (mmap'd) ones do.
/// The kernel copies between them and socket memory with `rep movsb`,
/// whose speed depends on the destination's alignment: on the 2-core AMD
/// EPYC VM this was measured on, receiving into a buffer 16 bytes past a
/// page boundary (where glibc put the `Vec`s of 256 KiB and 1 MiB, which
/// it maps on their own) cost the reader about 3x the CPU per byte of a
/// page-aligned buffer (a C test: 330-390 against about 115 ns/KiB), and
/// one-stream loopback tests at `-l 256K` and `-l 1M` became bound by
/// the reader and ran at about half speed (18 against 31 Gbit/s at 1M).
/// Offsets of 32 or more within a cache line did not hurt, and the send
/// side showed no such effect; a page boundary for both is the simple,
/// safe choice.
const BUFFER_ALIGN: usize = 4096;

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

/// A zeroed byte buffer that starts at a [`BUFFER_ALIGN`] boundary.
struct AlignedBuf {
    storage: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    fn zeroed(len: usize) -> Self {
        let storage = vec![0u8; len + BUFFER_ALIGN - 1];
        // align_offset may in principle decline (usize::MAX); an
        // unaligned buffer is only slower, never wrong.
        let start = match storage.as_ptr().align_offset(BUFFER_ALIGN) {
            offset if offset < BUFFER_ALIGN => offset,
            _ => 0,
        };
        Self {
            storage,
            start,
            len,
        }
    }

    fn as_slice(&self) -> &[u8] {
        &self.storage[self.start..self.start + self.len]
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.storage[self.start..self.start + self.len]
    }
}

fn fill_pattern(buf: &mut [u8]) {
    // A non-repeating byte pattern, so compression on the path gains nothing.
    let mut x: u32 = 0x9e37_79b9;
    for b in buf {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        *b = x.to_le_bytes()[0];
    }
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
    let mut buf = AlignedBuf::zeroed(pacer.map_or(length, |p| p.chunk(length)));
    fill_pattern(buf.as_mut_slice());
    pump(counters, t.start, t.send_end, pacer, stop, || {
        stream.write(buf.as_slice())
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
    let mut buf = AlignedBuf::zeroed(size);
    pump(counters, t.start, t.hard_end, pacer, stop, || {
        stream.read(buf.as_mut_slice())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_start_on_a_page_boundary() {
        for len in [1, 1448, 128 * 1024, 256 * 1024, 1 << 20] {
            let mut b = AlignedBuf::zeroed(len);
            assert_eq!(b.as_slice().len(), len);
            assert_eq!(b.as_slice().as_ptr().align_offset(BUFFER_ALIGN), 0);
            assert!(b.as_slice().iter().all(|&x| x == 0));
            fill_pattern(b.as_mut_slice());
            assert_eq!(b.as_mut_slice().len(), len);
        }
    }
}
