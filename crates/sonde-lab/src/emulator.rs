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

/// The shape of the jitter around the delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum JitterDist {
    /// Uniform in ± jitter.
    #[default]
    Uniform,
    /// Normal with standard deviation jitter (cut at 0 total delay).
    Normal,
}

/// How frames of one direction are delayed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Impairment {
    pub delay: Duration,
    /// Size of the jitter (0: none): the half-width of a uniform one, the
    /// standard deviation of a normal one. Frames leave in release order,
    /// so jitter larger than the gap between frames reorders them, as on
    /// a real path with parallel queues.
    pub jitter: Duration,
    pub dist: JitterDist,
}

/// One jitter sample in ns for `imp`, from uniform draws in [0, 1).
pub fn jitter_ns(imp: &Impairment, u1: f64, u2: f64) -> f64 {
    let j = imp.jitter.as_nanos() as f64;
    match imp.dist {
        JitterDist::Uniform => (u1 * 2.0 - 1.0) * j,
        // Box-Muller.
        JitterDist::Normal => {
            (-2.0 * (1.0 - u1).ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos() * j
        }
    }
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

/// A uniform draw in [0, 1) (splitmix64: successive draws are
/// independent enough for Box-Muller pairs and for per-frame jitter).
fn uniform01(state: &mut u64) -> f64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
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
        let (u1, u2) = (uniform01(&mut rng), uniform01(&mut rng));
        let offset = jitter_ns(&imp, u1, u2);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(dist: JitterDist) -> Vec<f64> {
        let imp = Impairment {
            delay: Duration::from_millis(10),
            jitter: Duration::from_millis(2),
            dist,
        };
        let mut rng = 42u64;
        (0..200_000)
            .map(|_| jitter_ns(&imp, uniform01(&mut rng), uniform01(&mut rng)) / 1e6)
            .collect()
    }

    #[test]
    fn uniform_jitter_stays_within_its_width() {
        let s = samples(JitterDist::Uniform);
        assert!(s.iter().all(|v| v.abs() <= 2.0));
        let mean: f64 = s.iter().sum::<f64>() / s.len() as f64;
        let var: f64 = s.iter().map(|v| v * v).sum::<f64>() / s.len() as f64;
        assert!(mean.abs() < 0.02, "{mean}");
        assert!(
            (var - 4.0 / 3.0).abs() < 0.02,
            "variance of U(-2, 2) is 4/3: {var}"
        );
    }

    #[test]
    fn normal_jitter_has_its_standard_deviation() {
        let s = samples(JitterDist::Normal);
        let var: f64 = s.iter().map(|v| v * v).sum::<f64>() / s.len() as f64;
        assert!((var.sqrt() - 2.0).abs() < 0.03, "σ {}", var.sqrt());
    }
}
