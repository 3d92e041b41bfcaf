//! sonde's link emulator: a bump in the wire between two interfaces of a
//! namespace. Each frame that arrives on one side is policed, may be lost
//! (Gilbert-Elliott) or duplicated, is held for its direction's delay
//! plus jitter (or not at all, when it is picked to be reordered) and is
//! then sent out of the other side. This kernel has no netem, so these
//! come from here; rate, random loss and marking stay with the kernel
//! (TBF/HTB, nftables) on the link's ends.

mod esp;
mod frame;
mod gilbert;
mod icmp_answer;
mod impairment;
mod line_queue;
mod lsr;
mod policer;
mod random;
mod tunnel;

pub use esp::{Esp, Suite};
pub use gilbert::Gilbert;
pub use impairment::{Direction, Fate, Impairment};
pub use line_queue::{RedThresholds, Rio};
pub use lsr::Lsr;
pub use policer::{Exceed, Policer};
pub use random::{jitter_ns, JitterDist, Rng};
pub use tunnel::{Tunnel, MIN_MTU};

use crate::sys::PacketSocket;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

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

/// A frame due within this much is sent now rather than slept for.
const EARLY: Duration = Duration::from_micros(20);

/// Sparse traffic (the last frame left this long ago or more: under 500
/// frames a second, pings and probes) has the last stretch before a
/// release spun, so that a round trip is not late by the timed waits'
/// wake-up (some 100 µs each way on a virtual machine: ping's quickest
/// RTT over a 40 ms path measured 40.30 ms). Dense traffic is released
/// by timed waits alone: it used to spin 300 µs before every release,
/// which at 8 kpps each way (100 Mbit/s of TCP and its ACKs) kept both
/// writers on a CPU all the time, 112 % of this 2-core machine's 200 %,
/// taken from the hosts the link joins (CI lost TCP, NDR and QoS
/// figures to it); now 13 %. A late release of dense traffic delays it
/// by a wake-up, with no drift: each release is an absolute time. The
/// process sets its timer slack to 1 ns (`sonde lab emulate`), which
/// its threads inherit.
const SPARSE: Duration = Duration::from_millis(2);

/// How much of a sparse frame's wait is spun.
const SPIN: Duration = Duration::from_micros(200);

/// Most frames one direction holds (beyond: dropped, like a full queue).
const MAX_HELD: usize = 100_000;

/// When a frame stamped `stamp` (realtime ns) arrived, on the monotonic
/// clock; now, without a stamp (or with one from the future).
fn arrival(stamp: Option<i64>) -> Instant {
    let now = Instant::now();
    let Some(stamp) = stamp else { return now };
    let real_now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64);
    let ago = real_now.saturating_sub(stamp);
    // A stamp over a second old means the clock was stepped: ignore it.
    if (0..1_000_000_000).contains(&ago) {
        now.checked_sub(Duration::from_nanos(ago as u64))
            .unwrap_or(now)
    } else {
        now
    }
}

fn reader(rx: PacketSocket, q: Queue, mut dir: Direction, start: Instant) {
    let mut buf = vec![0u8; 65_536];
    let mut seq = 0u64;
    loop {
        let (n, stamp) = match rx.recv(&mut buf) {
            Ok(r) => r,
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
        // The frame arrived when the kernel stamped it, before this thread
        // woke up: hold it from then.
        let now = arrival(stamp);
        let now_ns = now.saturating_duration_since(start).as_nanos() as u64;
        let (delay_ns, copies) = match dir.process(&mut buf[..n], now_ns) {
            Fate::Forward { delay_ns, copies } => (delay_ns, copies),
            Fate::Dropped => continue,
            Fate::Answered => {
                // An MPLS hop's Time Exceeded goes back out at once.
                let _ = rx.send(dir.answer());
                continue;
            }
        };
        let release = now + Duration::from_nanos(delay_ns);
        let (lock, cv) = &*q;
        let Ok(mut heap) = lock.lock() else { return };
        // The writer sleeps until the earliest release it knows of: wake it
        // only when this frame comes before that (with a steady delay, almost
        // never), not once per frame.
        let wake = heap.peek().is_none_or(|Reverse(h)| release < h.release);
        for _ in 0..copies {
            if heap.len() < MAX_HELD {
                heap.push(Reverse(Held {
                    release,
                    seq,
                    frame: buf[..n].to_vec(),
                }));
                seq += 1;
            }
        }
        if wake {
            cv.notify_one();
        }
    }
}

fn writer(tx: PacketSocket, q: Queue) {
    let (lock, cv) = &*q;
    let Ok(mut heap) = lock.lock() else { return };
    // When the last frame left: what tells sparse traffic from dense.
    let mut last_sent = Instant::now();
    loop {
        let now = Instant::now();
        let due = now + EARLY;
        let sparse = now.saturating_duration_since(last_sent) >= SPARSE;
        match heap.peek() {
            Some(Reverse(h)) if h.release <= due => {
                if let Some(Reverse(h)) = heap.pop() {
                    drop(heap);
                    let _ = tx.send(&h.frame);
                    last_sent = Instant::now();
                    heap = match lock.lock() {
                        Ok(g) => g,
                        Err(_) => return,
                    };
                }
            }
            Some(Reverse(h)) if sparse && h.release - now <= SPIN => {
                let release = h.release;
                drop(heap);
                while Instant::now() + EARLY < release {
                    std::hint::spin_loop();
                }
                heap = match lock.lock() {
                    Ok(g) => g,
                    Err(_) => return,
                };
            }
            Some(Reverse(h)) => {
                // Sparse: wake where the spin begins; dense: at the release.
                let until = if sparse { h.release - SPIN } else { h.release };
                let wait = until
                    .saturating_duration_since(due)
                    .max(Duration::from_micros(1));
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
/// The emulator's nice value.
const EMULATOR_NICE: i32 = -10;

pub fn run(left: &str, right: &str, l2r: Impairment, r2l: Impairment) -> std::io::Result<()> {
    // The kernel's netem forwards in softirq, ahead of every process; the
    // emulator that stands in for it runs ahead of ordinary ones (its
    // threads, started below, inherit it), so that a busy host (a build,
    // a database's vacuum) does not slow the link it emulates. Without
    // the privilege it keeps the ordinary priority.
    let _ = crate::sys::set_nice(0, EMULATOR_NICE);
    let poll = Duration::from_millis(200);
    let l = PacketSocket::bind(left, poll)?;
    let r = PacketSocket::bind(right, poll)?;
    let start = Instant::now();
    let mut threads = Vec::new();
    for (rx, tx, imp, seed) in [
        (l.try_clone()?, r.try_clone()?, l2r, 1u64),
        (r, l, r2l, 2u64),
    ] {
        let q: Queue = Arc::new((Mutex::new(BinaryHeap::new()), Condvar::new()));
        let q2 = Arc::clone(&q);
        let dir = Direction::new(imp, seed);
        threads.push(std::thread::spawn(move || reader(rx, q2, dir, start)));
        threads.push(std::thread::spawn(move || writer(tx, q)));
    }
    for t in threads {
        let _ = t.join();
    }
    Ok(())
}
