//! [`Stop`]: the flag that ends a run early (Ctrl-C, a scheduler's
//! deadline, an API call). What was measured until then is still the
//! result, marked `interrupted`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A shared stop flag; clones set and read the same flag.
#[derive(Debug, Clone, Default)]
pub struct Stop(Arc<AtomicBool>);

impl Stop {
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks every run watching this flag to stop.
    pub fn stop(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    pub fn is_stopped(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// The flag as the engine's loops read it.
    pub fn flag(&self) -> &Arc<AtomicBool> {
        &self.0
    }
}

/// A stop on a flag another part already holds (the endpoint's, for a
/// third-party test its client may end).
impl From<Arc<AtomicBool>> for Stop {
    fn from(flag: Arc<AtomicBool>) -> Self {
        Self(flag)
    }
}

/// A stop of its own for one piece of work: set when its parent is, when
/// its bound has passed, or by [`BoundedStop::stop`]. A watcher thread
/// carries the parent's stop and the bound into it (the engine's loops
/// read one flag); the thread ends when this is dropped.
#[derive(Debug)]
pub struct BoundedStop {
    stop: Stop,
    hit: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl BoundedStop {
    /// How often the watcher looks.
    const TICK: std::time::Duration = std::time::Duration::from_millis(50);

    /// Watches `parent`, and `bound` from now if there is one.
    pub fn new(parent: &Stop, bound: Option<std::time::Duration>) -> BoundedStop {
        let stop = Stop::new();
        let (hit, done) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let end = bound.map(|b| std::time::Instant::now() + b);
        let (p, s, h, d) = (
            parent.clone(),
            stop.clone(),
            Arc::clone(&hit),
            Arc::clone(&done),
        );
        let thread = std::thread::Builder::new()
            .name("sonde-bound".into())
            .spawn(move || {
                while !d.load(Ordering::Relaxed) {
                    if end.is_some_and(|e| std::time::Instant::now() >= e) {
                        h.store(true, Ordering::Relaxed);
                        s.stop();
                        return;
                    }
                    if p.is_stopped() {
                        s.stop();
                        return;
                    }
                    std::thread::sleep(Self::TICK);
                }
            })
            .ok();
        if thread.is_none() {
            // No watcher: the parent's own flag is the best there is.
            return BoundedStop {
                stop: parent.clone(),
                hit,
                done,
                thread: None,
            };
        }
        BoundedStop {
            stop,
            hit,
            done,
            thread,
        }
    }

    /// The flag the work reads.
    pub fn flag(&self) -> &Stop {
        &self.stop
    }

    /// Whether the bound, not the parent or a caller, stopped it.
    pub fn hit_bound(&self) -> bool {
        self.hit.load(Ordering::Relaxed)
    }
}

impl Drop for BoundedStop {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn until(stop: &Stop, secs: u64) -> bool {
        let end = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < end {
            if stop.is_stopped() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    #[test]
    fn a_bounded_stop_follows_its_parent_and_its_bound() {
        let parent = Stop::new();
        let b = BoundedStop::new(&parent, None);
        assert!(!b.flag().is_stopped());
        parent.stop();
        assert!(until(b.flag(), 10), "the parent's stop carried over");
        assert!(!b.hit_bound());
        let b = BoundedStop::new(&Stop::new(), Some(Duration::from_millis(100)));
        assert!(until(b.flag(), 10), "stopped at its bound");
        assert!(b.hit_bound());
        let b = BoundedStop::new(&Stop::new(), Some(Duration::from_secs(3600)));
        b.flag().stop();
        assert!(b.flag().is_stopped() && !b.hit_bound());
    }
}
