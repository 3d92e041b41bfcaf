//! sonde's link emulator: a bump in the wire between two interfaces of a
//! namespace that holds every frame for its direction's delay (plus
//! jitter) and then sends it on, unchanged. This kernel has no netem, so
//! delay and jitter come from here; rate and loss stay with the kernel
//! (TBF, nftables) on the link's ends.

use crate::sys::PacketSocket;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How frames of one direction are delayed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Impairment {
    pub delay: Duration,
    /// Half-width of a uniform jitter around `delay` (0: none). Frames
    /// leave in release order, so jitter larger than the gap between
    /// frames reorders them, as on a real path with parallel queues.
    pub jitter: Duration,
}

/// A frame and when it may leave.
struct Held {
    release: Instant,
    seq: u64,
    frame: Vec<u8>,
}

impl PartialEq for Held {
    fn eq(&self, o: &Self) -> bool {
        (self.release, self.seq) == (o.release, o.seq)
    }
}
impl Eq for Held {}
impl PartialOrd for Held {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Held {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.release, self.seq).cmp(&(o.release, o.seq))
    }
}

type Queue = Arc<(Mutex<BinaryHeap<Reverse<Held>>>, Condvar)>;

/// Waits for a release end this early; the rest is spun.
const SPIN: Duration = Duration::from_micros(300);

/// Most frames one direction holds (beyond: dropped, like a full queue).
const MAX_HELD: usize = 100_000;

fn xorshift(state: &mut u64) -> f64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    (*state >> 11) as f64 / (1u64 << 53) as f64
}

fn reader(rx: PacketSocket, q: Queue, imp: Impairment, seed: u64) {
    let mut buf = vec![0u8; 65_536];
    let mut seq = 0u64;
    let mut rng = seed | 1;
    loop {
        let n = match rx.recv(&mut buf) {
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) =>
            {
                continue
            }
            Err(_) => return,
        };
        let now = Instant::now();
        let jitter_ns = imp.jitter.as_nanos() as f64;
        let offset = (xorshift(&mut rng) * 2.0 - 1.0) * jitter_ns;
        let delay_ns = (imp.delay.as_nanos() as f64 + offset).max(0.0);
        let release = now + Duration::from_nanos(delay_ns as u64);
        let (lock, cv) = &*q;
        let Ok(mut heap) = lock.lock() else { return };
        if heap.len() < MAX_HELD {
            heap.push(Reverse(Held {
                release,
                seq,
                frame: buf[..n].to_vec(),
            }));
            seq += 1;
            cv.notify_one();
        }
    }
}

fn writer(tx: PacketSocket, q: Queue) {
    let (lock, cv) = &*q;
    let Ok(mut heap) = lock.lock() else { return };
    loop {
        let now = Instant::now();
        match heap.peek() {
            Some(Reverse(h)) if h.release <= now => {
                if let Some(Reverse(h)) = heap.pop() {
                    drop(heap);
                    let _ = tx.send(&h.frame);
                    heap = match lock.lock() {
                        Ok(g) => g,
                        Err(_) => return,
                    };
                }
            }
            Some(Reverse(h)) if h.release - now <= SPIN => {
                // The last stretch is spun: a sleeping thread wakes too late
                // on a busy or virtual machine.
                let release = h.release;
                drop(heap);
                while Instant::now() < release {
                    std::hint::spin_loop();
                }
                heap = match lock.lock() {
                    Ok(g) => g,
                    Err(_) => return,
                };
            }
            Some(Reverse(h)) => {
                let wait = h.release - now - SPIN;
                heap = match cv.wait_timeout(heap, wait) {
                    Ok((g, _)) => g,
                    Err(_) => return,
                };
            }
            None => {
                heap = match cv.wait_timeout(heap, Duration::from_millis(100)) {
                    Ok((g, _)) => g,
                    Err(_) => return,
                };
            }
        }
    }
}

/// Runs the emulator between interfaces `left` and `right` until the
/// process is killed (`sonde lab down` kills it with its namespace).
pub fn run(left: &str, right: &str, l2r: Impairment, r2l: Impairment) -> std::io::Result<()> {
    let poll = Duration::from_millis(200);
    let l = PacketSocket::bind(left, poll)?;
    let r = PacketSocket::bind(right, poll)?;
    let mut threads = Vec::new();
    for (rx, tx, imp, seed) in [
        (l.try_clone()?, r.try_clone()?, l2r, 1u64),
        (r, l, r2l, 2u64),
    ] {
        let q: Queue = Arc::new((Mutex::new(BinaryHeap::new()), Condvar::new()));
        let q2 = Arc::clone(&q);
        threads.push(std::thread::spawn(move || reader(rx, q2, imp, seed)));
        threads.push(std::thread::spawn(move || writer(tx, q)));
    }
    for t in threads {
        let _ = t.join();
    }
    Ok(())
}
