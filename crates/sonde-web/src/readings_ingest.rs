//! Readings from MQTT into the archive (`[readings] mqtt`,
//! docs/readings.md): the subscriber (sonde-readings) hands each valid
//! reading to a bounded queue; a writer thread takes what has queued up
//! (up to [`BATCH`] at once) and keeps it in one transaction, so the
//! archive keeps up with a burst without a transaction per reading. A
//! full queue holds the subscriber back (and the broker with it, QoS 1)
//! rather than dropping readings.

use sonde_archive::{ReadingsWrite, Store};
use sonde_model::clock::now_ns;
use sonde_readings::readings_config::ReadingsConfig;
use sonde_readings::{MqttSubscriber, Reading, SubscriberOptions, SubscriberStats};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The most readings written in one transaction.
pub const BATCH: usize = 1000;
/// The queue between the subscriber and the writer.
const QUEUE: usize = 20_000;

/// What came in over MQTT and what became of it, for `/metrics`.
#[derive(Debug, Default)]
pub struct IngestStats {
    /// The subscriber's counts (valid readings, malformed messages,
    /// connections and subscriptions), once it has started.
    pub subscriber: std::sync::OnceLock<Arc<SubscriberStats>>,
    /// Readings the archive kept as new.
    pub kept: AtomicU64,
    /// Readings already kept (same probe, metric and time).
    pub duplicates: AtomicU64,
    /// Readings refused by the archive: another unit than their metric's.
    pub refused: AtomicU64,
    /// Readings lost: to an archive that failed three times running, or
    /// received while the agent stopped, after its writer's last batch.
    pub lost: AtomicU64,
}

impl IngestStats {
    /// Counts for an agent whose `config` names a broker; `None` when it
    /// takes no readings from MQTT (or `config` is wrong: [`spawn`] says
    /// why).
    pub fn for_config(config: &ReadingsConfig) -> Option<Arc<Self>> {
        matches!(config.broker(), Ok(Some(_))).then(|| Arc::new(Self::default()))
    }
}

/// Starts the subscriber and its writer into `archive`, if `config` names
/// a broker; they stop when `stop` is set, and count what came in into
/// `stats`. Returns the writer's thread. An unusable `[readings]` is an
/// error naming the key.
pub fn spawn(
    archive: String,
    config: &ReadingsConfig,
    stop: Arc<AtomicBool>,
    stats: Arc<IngestStats>,
) -> Result<Option<JoinHandle<()>>, String> {
    config.validate().map_err(|e| e.to_string())?;
    let Some((host, port)) = config.broker().map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    // Opened here, so a bad archive fails the start, not a thread.
    let store = Store::open(&archive).map_err(|e| e.to_string())?;
    let options = SubscriberOptions {
        host,
        port,
        client_id: config
            .client_id
            .clone()
            .unwrap_or_else(|| format!("sonde-{}-{}", crate::hostname(), std::process::id())),
        topic: config.topic.clone(),
        credentials: config
            .mqtt_user
            .clone()
            .map(|user| sonde_readings::mqtt::Credentials {
                user,
                password: config
                    .mqtt_password
                    .clone()
                    .map(sonde_readings::mqtt::Password::new),
            }),
        tls: config.mqtt_tls.then(|| sonde_readings::mqtt::TlsOptions {
            ca: config.mqtt_ca.clone(),
        }),
    };
    let (tx, rx) = sync_channel::<Reading>(QUEUE);
    let late = Arc::clone(&stats);
    let subscriber = MqttSubscriber::start(options, move |r| {
        if tx.send(r).is_err() {
            late.lost.fetch_add(1, Ordering::Relaxed);
        }
    })
    .map_err(|e| e.to_string())?;
    let _ = stats.subscriber.set(Arc::clone(&subscriber.stats));
    let counts = stats;
    std::thread::Builder::new()
        .name("readings-writer".into())
        .spawn(move || {
            let mut store = store;
            write_until(&mut store, &rx, &stop, &counts);
            // What is queued is kept, and the queue closed before the
            // subscriber is joined: its thread may wait in a full
            // queue's `send`, which only a closed queue ends.
            let rest: Vec<Reading> = rx.try_iter().collect();
            for batch in rest.chunks(BATCH) {
                write(&mut store, batch.to_vec(), &counts);
            }
            drop(rx);
            let stats = Arc::clone(&subscriber.stats);
            subscriber.stop();
            tracing::info!(
                readings = stats.readings.load(Ordering::Relaxed),
                malformed = stats.malformed.load(Ordering::Relaxed),
                "mqtt readings stopped"
            );
        })
        .map(Some)
        .map_err(|e| e.to_string())
}

fn write_until(store: &mut Store, rx: &Receiver<Reading>, stop: &AtomicBool, counts: &IngestStats) {
    while !stop.load(Ordering::Relaxed) {
        let first = match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(r) => r,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => return,
        };
        let mut batch = vec![first];
        while batch.len() < BATCH {
            match rx.try_recv() {
                Ok(r) => batch.push(r),
                Err(_) => break,
            }
        }
        write(store, batch, counts);
    }
}

/// Keeps `batch`; a reading in another unit than its metric's is left
/// out with a warning, and the rest kept. An archive that fails three
/// times running loses the batch, with a warning saying how much.
fn write(store: &mut Store, mut batch: Vec<Reading>, counts: &IngestStats) {
    let mut failures = 0;
    while !batch.is_empty() {
        match store.put_readings(&batch, now_ns()) {
            Ok(ReadingsWrite::Kept { new, duplicate }) => {
                tracing::debug!(new, duplicate, "mqtt readings kept");
                counts.kept.fetch_add(new as u64, Ordering::Relaxed);
                counts
                    .duplicates
                    .fetch_add(duplicate as u64, Ordering::Relaxed);
                return;
            }
            Ok(ReadingsWrite::UnitConflict { index, message }) => {
                tracing::warn!("mqtt: reading refused: {message}");
                counts.refused.fetch_add(1, Ordering::Relaxed);
                batch.remove(index);
            }
            Err(e) if failures < 2 => {
                failures += 1;
                tracing::warn!("mqtt readings: {e}; trying again");
                std::thread::sleep(Duration::from_millis(500));
            }
            Err(e) => {
                tracing::error!("mqtt readings: {e}: {} readings lost", batch.len());
                counts.lost.fetch_add(batch.len() as u64, Ordering::Relaxed);
                return;
            }
        }
    }
}
