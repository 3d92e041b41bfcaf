//! The data loops: one thread per TCP stream, writing or reading as fast
//! as the path (or the pacer) allows, counting bytes into shared atomics.

use crate::budget::Budget;
use crate::pacer::Pacer;
use socket2::SockRef;
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

/// An unpaced reader lets this much time's worth of data (at the rate it
/// is receiving) queue before the kernel wakes it (SO_RCVLOWAT), instead
/// of waking for every segment. On loopback the sender's own CPU runs
/// the receiving socket's input path, and waking a sleeping reader there
/// (an inter-processor interrupt, a VM exit in a guest) took 10-13 % of
/// the sender's time: at 25-35 Gbit/s a reader that waits for any data
/// sleeps and is woken 30-40 thousand times a second. iperf3's reader
/// wakes about half as often only because its select() and failing
/// non-blocking read() keep it busy while the next segment arrives.
/// 250 µs is short against any report interval (100 ms at least).
const BATCH_TIME: Duration = Duration::from_micros(250);

/// Largest wake batch. At 30-40 Gbit/s 512 KiB is 100-140 µs of data:
/// measured on loopback, reader wake-ups fell from ~35k/s to ~5k/s.
const MAX_BATCH: usize = 512 * 1024;

/// Smallest wake batch worth setting (one loopback segment is 64 KiB);
/// slower streams (below about 2 Gbit/s) wake for any data, as before.
const MIN_BATCH: usize = 64 * 1024;

/// How often a batching reader re-sizes its batch from the rate it saw.
const BATCH_REVIEW: Duration = Duration::from_millis(10);

/// Read timeout while batching: when the sender slows down, or stops
/// without closing (an iperf3 peer keeps its connections open until the
/// test is over), the queued bytes are read and counted at most this
/// late (rounded up to the kernel's tick), and batching stops.
const BATCH_POLL: Duration = Duration::from_millis(5);

/// Batching stops this long before the sender's nominal end, so that the
/// last bytes of a test are read as they come even if the peer's clock
/// started a little later than ours.
const BATCH_END_MARGIN: Duration = Duration::from_millis(100);

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

/// Wake batching of one unpaced reader (see [`BATCH_TIME`]): every
/// [`BATCH_REVIEW`] it sizes SO_RCVLOWAT from the rate it received at,
/// and it drops the batch as soon as a read comes back short (the read
/// timed out or the peer closed: the sender slowed down or stopped).
struct WakeBatching {
    /// The low-water mark in force; 0 is the kernel default (wake for
    /// any data).
    lowat: usize,
    /// Bytes read since `since`.
    bytes: u64,
    since: Instant,
    /// No batching from then on (the end of the test is near).
    until: Instant,
    /// False once the socket refused an option: plain reads from then on.
    enabled: bool,
}

impl WakeBatching {
    fn new(now: Instant, until: Instant) -> Self {
        Self {
            lowat: 0,
            bytes: 0,
            since: now,
            until,
            enabled: true,
        }
    }

    /// Accounts for one read of up to `buf_len` bytes and adjusts the
    /// low-water mark.
    fn after_read(&mut self, stream: &TcpStream, got: &io::Result<usize>, buf_len: usize) {
        if !self.enabled {
            return;
        }
        match got {
            Ok(n) => {
                self.bytes += *n as u64;
                // With a mark in force a read returns at least
                // min(mark, buffer) bytes unless it timed out or the
                // stream ended.
                if self.lowat > 0 && *n < self.lowat.min(buf_len) {
                    self.set(stream, 0);
                }
            }
            Err(_) => {
                if self.lowat > 0 {
                    self.set(stream, 0);
                }
            }
        }
        let now = Instant::now();
        let elapsed = now.saturating_duration_since(self.since);
        if elapsed < BATCH_REVIEW {
            return;
        }
        let want = if now >= self.until {
            0
        } else {
            let rcvbuf = SockRef::from(stream).recv_buffer_size().unwrap_or(0);
            batch_size(self.bytes, elapsed, rcvbuf)
        };
        if want != self.lowat {
            self.set(stream, want);
        }
        self.bytes = 0;
        self.since = now;
    }

    fn set(&mut self, stream: &TcpStream, lowat: usize) {
        // A short timeout goes with a batch (see BATCH_POLL): set it
        // before the mark when batching starts, after it when it stops.
        let applied = if lowat > 0 {
            stream
                .set_read_timeout(Some(BATCH_POLL))
                .and_then(|()| crate::sys::set_recv_lowat(stream, lowat))
        } else {
            crate::sys::set_recv_lowat(stream, 1).and_then(|()| stream.set_read_timeout(Some(POLL)))
        };
        match applied {
            Ok(()) => self.lowat = lowat,
            Err(e) => {
                tracing::debug!(error = %e, "receive wake batching off");
                self.enabled = false;
                self.lowat = 0;
                let _ = crate::sys::set_recv_lowat(stream, 1);
                let _ = stream.set_read_timeout(Some(POLL));
            }
        }
    }
}

/// The wake batch for a stream that received `bytes` in `elapsed` and
/// has a `rcvbuf`-byte receive buffer: [`BATCH_TIME`] of data, at most
/// [`MAX_BATCH`] and a quarter of the buffer (so the kernel never has to
/// grow the buffer, and clamp the window, to fit it, and the window stays
/// mostly open), rounded down to a power of two so that small swings in
/// rate do not re-set it; 0 (no batching) below [`MIN_BATCH`].
fn batch_size(bytes: u64, elapsed: Duration, rcvbuf: usize) -> usize {
    if elapsed.is_zero() {
        return 0;
    }
    let per_batch = bytes as f64 * BATCH_TIME.as_secs_f64() / elapsed.as_secs_f64();
    // Saturating float-to-int conversion.
    let want = (per_batch as usize).min(MAX_BATCH).min(rcvbuf / 4);
    if want < MIN_BATCH {
        return 0;
    }
    1 << (usize::BITS - 1 - want.leading_zeros())
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

/// How a sender writes.
#[derive(Debug, Clone, Copy)]
pub struct SendIo<'a> {
    /// Bytes per write.
    pub length: usize,
    pub pacer: Option<Pacer>,
    /// The direction's shared byte budget (`-n`, `-k`), if bounded.
    pub budget: Option<&'a Budget>,
    /// Each write a `sendfile` from a memory-backed file (`-Z`).
    pub zerocopy: bool,
}

/// Writes until `send_end`, `stop`, or the budget is spent, then closes
/// its half and waits for the receiver to close (at most the grace
/// between `send_end` and `hard_end`), so that the final TCP_INFO covers
/// every byte.
pub fn send_loop(
    mut stream: TcpStream,
    counters: &StreamCounters,
    t: LoopTiming,
    io: SendIo<'_>,
    stop: &AtomicBool,
) -> io::Result<()> {
    let SendIo {
        length,
        pacer,
        budget,
        zerocopy,
    } = io;
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
    let file = if zerocopy {
        Some(crate::sys::SendFile::new(buf.as_slice())?)
    } else {
        None
    };
    pump(counters, t.start, t.send_end, pacer, stop, || {
        let now = Instant::now();
        let want = buf.as_slice().len() as u64;
        let grant = budget.map_or(want, |b| b.take(want, now));
        if grant == 0 {
            return Ok(0);
        }
        let len = usize::try_from(grant).unwrap_or(usize::MAX);
        let wrote = match &file {
            Some(f) => f.send_to(&stream, len),
            None => stream.write(&buf.as_slice()[..len]),
        };
        if let Some(b) = budget {
            let used = wrote.as_ref().map_or(0, |&n| n as u64);
            b.give_back(grant.saturating_sub(used), now);
        }
        wrote
    })?;
    if budget.is_some_and(Budget::spent) {
        // The budget's last bytes may still sit in the socket (paced by
        // the kernel): the test ends when they have arrived, not when
        // they were written (an iperf3 peer stops counting at the end).
        wait_acked(&stream, Instant::now() + DRAIN_WAIT, stop);
    }
    stream.shutdown(Shutdown::Write)?;
    // A sender that stopped early (its budget spent) waits no longer for
    // the close than one that ran its time.
    let grace = t.hard_end.saturating_duration_since(t.send_end);
    let close_by = t.hard_end.min(Instant::now() + grace);
    // Wait for the receiver's close; what it sends is discarded.
    stream.set_read_timeout(Some(POLL))?;
    let mut scratch = [0u8; 512];
    let ignore = StreamCounters::default();
    match pump(&ignore, t.start, close_by, None, stop, || {
        stream.read(&mut scratch)
    }) {
        Err(e) if e.kind() == io::ErrorKind::ConnectionReset => Ok(()),
        other => other,
    }
}

/// Longest wait for a volume-bounded sender's last bytes to be acked.
const DRAIN_WAIT: Duration = Duration::from_secs(10);

/// Waits until the peer has acknowledged every byte written, `until`, or
/// `stop`.
fn wait_acked(stream: &TcpStream, until: Instant, stop: &AtomicBool) {
    while Instant::now() < until && !stop.load(Ordering::Relaxed) {
        match crate::sys::unacked_bytes(stream) {
            Ok(0) | Err(_) => return,
            Ok(_) => std::thread::sleep(Duration::from_millis(1)),
        }
    }
}

/// Reads until the sender closes, `hard_end`, `stop`, or the receive
/// budget is spent. With a pacer, reads no faster than its rate (a
/// server's rate limit, enforced by TCP flow control whatever the sender
/// does).
pub fn receive_loop(
    mut stream: TcpStream,
    counters: &StreamCounters,
    t: LoopTiming,
    length: usize,
    pacer: Option<Pacer>,
    budget: Option<&Budget>,
    stop: &AtomicBool,
) -> io::Result<()> {
    stream.set_read_timeout(Some(POLL))?;
    let size = pacer.map_or(length.max(RECEIVE_BUFFER), |p| p.chunk(length));
    let mut buf = AlignedBuf::zeroed(size);
    if pacer.is_some() {
        // A paced reader reads small chunks on its own schedule.
        return pump(counters, t.start, t.hard_end, pacer, stop, || {
            if budget.is_some_and(Budget::spent) {
                return Ok(0);
            }
            counted(budget, stream.read(buf.as_mut_slice()))
        });
    }
    let until = t.send_end.checked_sub(BATCH_END_MARGIN).unwrap_or(t.start);
    let mut batching = WakeBatching::new(Instant::now(), until);
    pump(counters, t.start, t.hard_end, None, stop, || {
        if budget.is_some_and(Budget::spent) {
            // Bounded: the budget has arrived, as at the sender's close.
            return Ok(0);
        }
        let got = (&stream).read(buf.as_mut_slice());
        batching.after_read(&stream, &got, size);
        counted(budget, got)
    })
}

/// Counts a read into the receivers' budget, if bounded.
fn counted(budget: Option<&Budget>, got: io::Result<usize>) -> io::Result<usize> {
    if let (Some(b), Ok(n)) = (budget, &got) {
        b.count(*n as u64);
    }
    got
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

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

    #[test]
    fn batch_is_a_quarter_millisecond_of_data_within_bounds() {
        let sec = Duration::from_secs(1);
        let big = 64 << 20;
        // 1 GB/s: 250 kB per batch, rounded down to 128 KiB.
        assert_eq!(batch_size(1_000_000_000, sec, big), 128 * 1024);
        // 4 GB/s (32 Gbit/s): 1 MB, capped.
        assert_eq!(batch_size(4_000_000_000, sec, big), MAX_BATCH);
        // Slow streams are not batched.
        assert_eq!(batch_size(100_000_000, sec, big), 0);
        assert_eq!(batch_size(0, sec, big), 0);
        assert_eq!(batch_size(1 << 30, Duration::ZERO, big), 0);
        // A small receive buffer bounds the batch, or rules it out.
        assert_eq!(batch_size(4_000_000_000, sec, 300 * 1024), 64 * 1024);
        assert_eq!(batch_size(4_000_000_000, sec, 128 * 1024), 0);
    }

    /// A sender that stops without closing (as an iperf3 peer does) while
    /// the reader batches: every byte is still read and counted.
    #[test]
    fn batching_reader_counts_every_byte_of_a_sender_that_stops() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let start = Instant::now();
        let timing = LoopTiming {
            start,
            send_end: start + Duration::from_secs(3),
            hard_end: start + Duration::from_millis(1500),
        };
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let sender = std::thread::spawn(move || {
            let mut s = TcpStream::connect(addr).unwrap();
            let buf = vec![7u8; 256 * 1024];
            let mut sent = 0u64;
            while start.elapsed() < Duration::from_millis(500) {
                s.write_all(&buf).unwrap();
                sent += buf.len() as u64;
            }
            // Keep the connection open until the reader is done.
            let _ = done_rx.recv();
            sent
        });
        let (conn, _) = listener.accept().unwrap();
        let counters = StreamCounters::default();
        let stop = AtomicBool::new(false);
        receive_loop(conn, &counters, timing, 128 * 1024, None, None, &stop).unwrap();
        done_tx.send(()).unwrap();
        let sent = sender.join().unwrap();
        assert!(sent > 0);
        assert_eq!(counters.bytes.load(Ordering::Relaxed), sent);
    }

    /// `-Z`: a bounded zero-copy sender's bytes are the pattern from its
    /// memory-backed file, every one of them, and exactly the budget.
    #[test]
    fn a_zerocopy_sender_sends_its_block_exactly_to_the_budget() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let reader = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            let mut got = Vec::new();
            conn.read_to_end(&mut got).unwrap();
            got
        });
        let stream = TcpStream::connect(addr).unwrap();
        let start = Instant::now();
        let timing = LoopTiming {
            start,
            send_end: start + Duration::from_secs(20),
            hard_end: start + Duration::from_secs(21),
        };
        let budget = Budget::new(1_000_000, start);
        let counters = StreamCounters::default();
        let io = SendIo {
            length: 64 * 1024,
            pacer: None,
            budget: Some(&budget),
            zerocopy: true,
        };
        send_loop(stream, &counters, timing, io, &AtomicBool::new(false)).unwrap();
        let got = reader.join().unwrap();
        let mut block = vec![0u8; 64 * 1024];
        fill_pattern(&mut block);
        assert_eq!(got.len(), 1_000_000);
        assert_eq!(counters.bytes.load(Ordering::Relaxed), 1_000_000);
        for chunk in got.chunks(64 * 1024) {
            assert_eq!(chunk, &block[..chunk.len()]);
        }
    }
}
