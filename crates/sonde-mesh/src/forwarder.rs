//! One thread per destination: take the oldest queued items from the
//! local archive, deliver them, and only then take them off the queue.
//! A destination that is away is tried again after a back-off that
//! doubles from a second up to its `retry_max`; meanwhile the queue (the
//! backlog) grows in the local archive, where `sonde status`, the API and
//! `/metrics` read it.

use crate::destination::{self, Delivery, Destination, ForwardError};
use crate::ForwardConfig;
use sonde_archive::{ArchiveError, Store};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often an idle forwarder looks for new items.
pub const POLL: Duration = Duration::from_secs(1);

/// Back-off between failed tries: 1 s, 2 s, 4 s … up to a cap, each
/// with up to a fifth more added so that many agents cut off by one
/// outage do not all come back in the same second.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
    max: Duration,
    seed: u64,
}

impl Backoff {
    pub fn new(max: Duration) -> Self {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| u64::from(d.subsec_nanos()) | 1);
        Self {
            next: Duration::from_secs(1).min(max),
            max,
            seed,
        }
    }

    /// The wait before the next try, and the one after it doubled.
    pub fn wait(&mut self) -> Duration {
        // xorshift: spread enough for jitter, no dependency for it.
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        let base = self.next;
        let jitter = base.mul_f64((self.seed % 1000) as f64 / 5000.0);
        self.next = (self.next * 2).min(self.max);
        (base + jitter).min(self.max + self.max / 5)
    }

    /// After a success: the next failure waits a second again.
    pub fn reset(&mut self) {
        self.next = Duration::from_secs(1).min(self.max);
    }
}

/// Registers `configs` as the archive's destinations (dropping the
/// queues of any no longer configured) and starts a forwarder for each.
/// Returns at once; the forwarders stop when `stop` is set.
pub fn start(
    archive: &str,
    configs: &[ForwardConfig],
    stop: &Arc<AtomicBool>,
) -> Result<Vec<JoinHandle<()>>, ForwardError> {
    let unavailable = |e: ArchiveError| ForwardError::Unavailable(e.to_string());
    let mut store = Store::open(archive).map_err(unavailable)?;
    let names: Vec<&str> = configs.iter().map(|c| c.name.as_str()).collect();
    for gone in store.forward_only(&names).map_err(unavailable)? {
        tracing::warn!(destination = %gone, "no longer configured: its backlog dropped");
    }
    let mut handles = Vec::new();
    for config in configs {
        if store.forward_to(&config.name).map_err(unavailable)? {
            tracing::info!(destination = %config.name, "new destination: the whole archive queued for it");
        }
        let destination = destination::open(config)?;
        let forwarder = Forwarder {
            archive: archive.to_string(),
            config: config.clone(),
            destination,
            stop: Arc::clone(stop),
        };
        let handle = std::thread::Builder::new()
            .name(format!("sonde-forward-{}", config.name))
            .spawn(move || forwarder.run())
            .map_err(|e| ForwardError::Unavailable(format!("cannot start a thread: {e}")))?;
        handles.push(handle);
    }
    Ok(handles)
}

struct Forwarder {
    archive: String,
    config: ForwardConfig,
    destination: Box<dyn Destination>,
    stop: Arc<AtomicBool>,
}

/// What one round did.
enum Round {
    /// Nothing queued.
    Idle,
    /// A batch delivered; more may be waiting.
    Delivered,
    /// The destination is away, or the local archive failed.
    Failed,
}

impl Forwarder {
    fn run(mut self) {
        let name = self.config.name.clone();
        tracing::info!(destination = %name, to = %self.config.to, "forwarding");
        let mut backoff = Backoff::new(self.config.retry_max);
        let mut batch = self.config.batch;
        let mut store: Option<Store> = None;
        while !self.stop.load(Ordering::Relaxed) {
            let s = match &mut store {
                Some(s) => s,
                None => match Store::open(&self.archive) {
                    Ok(s) => store.insert(s),
                    Err(e) => {
                        tracing::warn!(destination = %name, error = %e, "local archive");
                        self.sleep(backoff.wait());
                        continue;
                    }
                },
            };
            match self.round(s, &mut batch) {
                Ok(Round::Delivered) => backoff.reset(),
                Ok(Round::Idle) => {
                    backoff.reset();
                    self.sleep(POLL);
                }
                Ok(Round::Failed) => self.sleep(backoff.wait()),
                Err(e) => {
                    tracing::warn!(destination = %name, error = %e, "local archive");
                    store = None;
                    self.sleep(backoff.wait());
                }
            }
        }
        tracing::info!(destination = %name, "forwarder stopped");
    }

    /// Sleeps `d`, waking early to stop.
    fn sleep(&self, d: Duration) {
        let end = Instant::now() + d;
        while !self.stop.load(Ordering::Relaxed) {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            std::thread::sleep(left.min(Duration::from_millis(100)));
        }
    }

    fn round(&mut self, store: &mut Store, batch: &mut usize) -> Result<Round, ArchiveError> {
        let name = self.config.name.as_str();
        let queued = store.outbox(name, *batch)?;
        if !queued.unreadable.is_empty() {
            for (id, why) in &queued.unreadable {
                tracing::error!(destination = %name, id = %id, why = %why, "cannot be forwarded: dropped from the queue");
            }
            let ids: Vec<String> = queued.unreadable.iter().map(|(id, _)| id.clone()).collect();
            store.forward_done(name, &ids, false)?;
        }
        if queued.items.is_empty() {
            return Ok(if queued.unreadable.is_empty() {
                Round::Idle
            } else {
                Round::Delivered
            });
        }
        let ids: Vec<String> = queued.items.iter().map(|i| i.id().to_string()).collect();
        match self.destination.deliver(&queued.items) {
            Ok(Delivery { received, new }) => {
                store.forward_done(name, &ids, true)?;
                tracing::debug!(destination = %name, received, new, "delivered");
                *batch = (*batch * 2).min(self.config.batch);
                Ok(Round::Delivered)
            }
            Err(ForwardError::Refused { index, why }) => {
                let id = &ids[index.min(ids.len() - 1)];
                tracing::error!(destination = %name, id = %id, why = %why, "refused by the destination: dropped from the queue");
                store.forward_done(name, std::slice::from_ref(id), false)?;
                store.forward_failed(name, &format!("item {id} refused: {why}"))?;
                Ok(Round::Delivered)
            }
            Err(e) => {
                let text = e.to_string();
                if text.starts_with("413") && *batch > 1 {
                    // Over the central agent's body cap: smaller batches.
                    *batch = (*batch / 2).max(1);
                }
                tracing::warn!(destination = %name, backlog_batch = queued.items.len(), error = %text, "delivery failed; will retry");
                store.forward_failed(name, &text)?;
                Ok(Round::Failed)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_its_cap_and_resets() {
        let mut b = Backoff::new(Duration::from_secs(8));
        let waits: Vec<Duration> = (0..6).map(|_| b.wait()).collect();
        let bases = [1, 2, 4, 8, 8, 8];
        for (w, base) in waits.iter().zip(bases) {
            let base = Duration::from_secs(base);
            assert!(*w >= base && *w <= base + base / 5, "{w:?} for {base:?}");
        }
        b.reset();
        assert!(b.wait() < Duration::from_millis(1201));
    }
}
