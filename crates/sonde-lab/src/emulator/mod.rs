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
mod held;
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

use crate::sys::{PacketSocket, RxRing, SendBatch};
use held::{Held, HeldQueue};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// One direction's frames in flight: held until their release, and the
/// buffers of frames already sent, for the reader to fill again (no
/// allocation per frame, and no buffer freed on another thread than the
/// one that allocated it).
#[derive(Default)]
struct InFlight {
    held: HeldQueue,
    spare: Vec<Vec<u8>>,
}

type Queue = Arc<(Mutex<InFlight>, Condvar)>;

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

/// Most frames taken from the receive ring at a time, and sent with one
/// `sendmmsg`: at a gigabit and more a system call per frame was most of
/// what the emulator's threads spent (bench/lab-emulator).
const BATCH: usize = 64;

/// Room in each receive ring: at least this many bytes, and this many
/// frames (the interface's largest). At 2.5 Gbit/s of full frames,
/// 4,096 of them are 20 ms of arrivals while the reader is not running.
const RING_BYTES: usize = 8 << 20;
const RING_FRAMES: usize = 1024;

/// Most spare buffers a direction keeps.
const MAX_SPARE: usize = 4 * BATCH;

/// The clocks as a batch of frames was read: turns the kernel's receive
/// stamps (realtime ns) into monotonic instants.
struct Clocks {
    now: Instant,
    real_ns: i64,
}

impl Clocks {
    fn read() -> Self {
        Self {
            now: Instant::now(),
            real_ns: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as i64),
        }
    }

    /// When a frame stamped `stamp` arrived, on the monotonic clock; the
    /// read's time without a stamp (or with one from the future).
    fn arrival(&self, stamp: Option<i64>) -> Instant {
        let Some(stamp) = stamp else { return self.now };
        let ago = self.real_ns.saturating_sub(stamp);
        // A stamp over a second old means the clock was stepped: ignore it.
        if (0..1_000_000_000).contains(&ago) {
            self.now
                .checked_sub(Duration::from_nanos(ago as u64))
                .unwrap_or(self.now)
        } else {
            self.now
        }
    }
}

fn reader(rx: PacketSocket, mut ring: RxRing, q: Queue, mut dir: Direction, start: Instant) {
    let mut ready: Vec<Held> = Vec::with_capacity(2 * BATCH);
    let mut spare: Vec<Vec<u8>> = Vec::with_capacity(2 * BATCH);
    let mut seq = 0u64;
    let poll = Duration::from_millis(200);
    loop {
        // The clocks as the batch is taken: every frame in it was stamped
        // by the kernel before.
        let mut clocks = None;
        let read = ring.read(poll, BATCH, |payload, stamp| {
            let clocks = clocks.get_or_insert_with(Clocks::read);
            let mut frame = spare.pop().unwrap_or_default();
            frame.clear();
            frame.extend_from_slice(payload);
            // The frame arrived when the kernel stamped it, before this
            // thread woke up: hold it from then.
            let now = clocks.arrival(stamp);
            let now_ns = now.saturating_duration_since(start).as_nanos() as u64;
            let (delay_ns, copies) = match dir.process(&mut frame, now_ns) {
                Fate::Forward { delay_ns, copies } => (delay_ns, copies),
                Fate::Dropped => {
                    spare.push(frame);
                    return;
                }
                Fate::Answered => {
                    // An MPLS hop's Time Exceeded goes back out at once.
                    let _ = rx.send(dir.answer());
                    spare.push(frame);
                    return;
                }
            };
            let release = now + Duration::from_nanos(delay_ns);
            if copies > 1 {
                ready.push(Held {
                    release,
                    seq,
                    frame: frame.clone(),
                });
                seq += 1;
            }
            ready.push(Held {
                release,
                seq,
                frame,
            });
            seq += 1;
        });
        match read {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        }
        if ready.is_empty() {
            continue;
        }
        let (lock, cv) = &*q;
        let Ok(mut flight) = lock.lock() else { return };
        // The writer sleeps until the earliest release it knows of: wake it
        // only when a frame comes before that (with a steady delay, almost
        // never), not once per frame.
        let first = ready.iter().map(|h| h.release).min();
        let wake = flight
            .held
            .first_release()
            .is_none_or(|held| first < Some(held));
        for h in ready.drain(..) {
            if flight.held.len() < MAX_HELD {
                flight.held.push(h);
            } else {
                spare.push(h.frame);
            }
        }
        let want = (2 * BATCH).saturating_sub(spare.len());
        let from = flight.spare.len().saturating_sub(want);
        spare.extend(flight.spare.drain(from..));
        drop(flight);
        if wake {
            cv.notify_one();
        }
    }
}

fn writer(tx: PacketSocket, q: Queue) {
    let (lock, cv) = &*q;
    let mut out: Vec<Held> = Vec::with_capacity(BATCH);
    let mut sender = SendBatch::default();
    let Ok(mut flight) = lock.lock() else { return };
    // When the last frame left: what tells sparse traffic from dense.
    let mut last_sent = Instant::now();
    loop {
        let now = Instant::now();
        let due = now + EARLY;
        let sparse = now.saturating_duration_since(last_sent) >= SPARSE;
        match flight.held.first_release() {
            Some(release) if release <= due => {
                // Every frame due (up to a batch) leaves with one call, in
                // release order.
                while out.len() < BATCH && flight.held.first_release().is_some_and(|r| r <= due) {
                    if let Some(h) = flight.held.pop() {
                        out.push(h);
                    }
                }
                drop(flight);
                sender.send(&tx, out.iter().map(|h| h.frame.as_slice()));
                last_sent = Instant::now();
                flight = match lock.lock() {
                    Ok(g) => g,
                    Err(_) => return,
                };
                let room = MAX_SPARE.saturating_sub(flight.spare.len());
                let kept = out.len().min(room);
                flight
                    .spare
                    .extend(out.drain(..).take(kept).map(|h| h.frame));
                out.clear();
            }
            Some(release) if sparse && release - now <= SPIN => {
                drop(flight);
                while Instant::now() + EARLY < release {
                    std::hint::spin_loop();
                }
                flight = match lock.lock() {
                    Ok(g) => g,
                    Err(_) => return,
                };
            }
            Some(release) => {
                // Sparse: wake where the spin begins; dense: at the release.
                let until = if sparse { release - SPIN } else { release };
                let wait = until
                    .saturating_duration_since(due)
                    .max(Duration::from_micros(1));
                flight = match cv.wait_timeout(flight, wait) {
                    Ok((g, _)) => g,
                    Err(_) => return,
                };
            }
            None => {
                flight = match cv.wait_timeout(flight, Duration::from_millis(100)) {
                    Ok((g, _)) => g,
                    Err(_) => return,
                };
            }
        }
    }
}

/// The emulator's nice value.
const EMULATOR_NICE: i32 = -10;

/// Runs the emulator between interfaces `left` and `right` until the
/// process is killed (`sonde lab down` kills it with its namespace).
pub fn run(left: &str, right: &str, l2r: Impairment, r2l: Impairment) -> std::io::Result<()> {
    // The kernel's netem forwards in softirq, ahead of every process; the
    // emulator that stands in for it runs ahead of ordinary ones (its
    // threads, started below, inherit it), so that a busy host (a build,
    // a database's vacuum) does not slow the link it emulates. Without
    // the privilege it keeps the ordinary priority.
    let _ = crate::sys::set_nice(0, EMULATOR_NICE);
    let (l, l_ring) = PacketSocket::bind(left, RING_BYTES, RING_FRAMES)?;
    let (r, r_ring) = PacketSocket::bind(right, RING_BYTES, RING_FRAMES)?;
    let start = Instant::now();
    let mut threads = Vec::new();
    for (rx, ring, tx, imp, seed) in [
        (l.try_clone()?, l_ring, r.try_clone()?, l2r, 1u64),
        (r, r_ring, l, r2l, 2u64),
    ] {
        let q: Queue = Arc::new((Mutex::new(InFlight::default()), Condvar::new()));
        let q2 = Arc::clone(&q);
        let dir = Direction::new(imp, seed);
        threads.push(std::thread::spawn(move || reader(rx, ring, q2, dir, start)));
        threads.push(std::thread::spawn(move || writer(tx, q)));
    }
    for t in threads {
        let _ = t.join();
    }
    Ok(())
}
