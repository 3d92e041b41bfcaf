//! Readings over MQTT (docs/readings.md).
//!
//! The topic layout: `<prefix>/<probe>/<metric>` (by default
//! `sonde/readings/<probe>/<metric>`): the last two levels of the topic
//! name the probe and the metric. The payload is a JSON object,
//! `{"value": 7.5, "unit": "m/s", "at": "2026-11-26T06:00:00Z", "with":
//! 270}` (`at` and `with` optional, as in the API); a payload that names
//! `probe` or `metric` too must name the topic's.
//!
//! The subscriber is rumqttc's blocking client on a thread of its own: it
//! subscribes (QoS 1) on every connection, reconnects with a back-off
//! (0.1 s doubling up to 10 s) when the broker goes away, hands every
//! valid reading to a callback, and logs and counts every malformed
//! message with the reason (never a panic: a message is input from the
//! network).

use crate::reading::{Reading, ReadingError, ReadingInput};
use rumqttc::{Client, Event, MqttOptions, Packet, QoS};
use sonde_model::clock::now_ns;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The topic filter subscribed to by default.
pub const DEFAULT_TOPIC: &str = "sonde/readings/#";

/// The topic a probe publishes `metric` on, under `prefix` (no trailing
/// `/`).
pub fn topic(prefix: &str, probe: &str, metric: &str) -> String {
    format!("{prefix}/{probe}/{metric}")
}

/// The reading a message on `topic` with `payload` carries, received at
/// `now_ns`.
pub fn reading_from_message(
    topic: &str,
    payload: &[u8],
    now_ns: i64,
) -> Result<Reading, ReadingError> {
    let mut levels = topic.rsplit('/');
    let (Some(metric), Some(probe)) = (levels.next(), levels.next()) else {
        return Err(ReadingError::Json(format!(
            "topic {topic:?}: not …/<probe>/<metric>"
        )));
    };
    let mut input: ReadingInput =
        serde_json::from_slice(payload).map_err(|e| ReadingError::Json(format!("payload: {e}")))?;
    for (field, given, expected) in [
        ("probe", &mut input.probe, probe),
        ("metric", &mut input.metric, metric),
    ] {
        match given {
            Some(g) if g != expected => {
                return Err(ReadingError::Json(format!(
                    "payload names {field} {g:?}, the topic {expected:?}"
                )))
            }
            _ => *given = Some(expected.to_string()),
        }
    }
    input.validate(now_ns)
}

/// Where and what the subscriber subscribes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriberOptions {
    pub host: String,
    pub port: u16,
    pub client_id: String,
    /// The topic filter (`sonde/readings/#`).
    pub topic: String,
}

/// What the subscriber has seen.
#[derive(Debug, Default)]
pub struct SubscriberStats {
    /// Valid readings handed on.
    pub readings: AtomicU64,
    /// Messages refused (and why, in the log).
    pub malformed: AtomicU64,
    /// Connections made to the broker (reconnections included).
    pub connections: AtomicU64,
    /// Subscriptions the broker confirmed (one per connection).
    pub subscriptions: AtomicU64,
}

/// Why the subscriber did not start.
#[derive(Debug, thiserror::Error)]
pub enum MqttError {
    #[error("mqtt: cannot start the subscriber thread: {0}")]
    Thread(std::io::Error),
}

/// A running subscriber.
pub struct MqttSubscriber {
    client: Client,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    pub stats: Arc<SubscriberStats>,
}

const BACKOFF_START: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(10);

impl MqttSubscriber {
    /// Starts subscribing; `on_reading` gets every valid reading, on the
    /// subscriber's thread.
    pub fn start(
        options: SubscriberOptions,
        mut on_reading: impl FnMut(Reading) + Send + 'static,
    ) -> Result<Self, MqttError> {
        let mut mqtt = MqttOptions::new(&options.client_id, &options.host, options.port);
        mqtt.set_keep_alive(Duration::from_secs(5));
        mqtt.set_clean_session(true);
        let (client, mut connection) = Client::new(mqtt, 1024);
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(SubscriberStats::default());
        let (c, s, st) = (client.clone(), Arc::clone(&stop), Arc::clone(&stats));
        let where_ = format!("{}:{}", options.host, options.port);
        let thread = std::thread::Builder::new()
            .name("mqtt-readings".into())
            .spawn(move || {
                let mut backoff = BACKOFF_START;
                let mut failures = 0u64;
                for event in connection.iter() {
                    if s.load(Ordering::Relaxed) {
                        break;
                    }
                    match event {
                        Ok(Event::Incoming(Packet::ConnAck(_))) => {
                            st.connections.fetch_add(1, Ordering::Relaxed);
                            backoff = BACKOFF_START;
                            failures = 0;
                            if let Err(e) = c.try_subscribe(options.topic.clone(), QoS::AtLeastOnce) {
                                tracing::warn!("mqtt: cannot subscribe to {}: {e}", options.topic);
                            }
                        }
                        Ok(Event::Incoming(Packet::SubAck(_))) => {
                            st.subscriptions.fetch_add(1, Ordering::Relaxed);
                            tracing::info!(broker = %where_, topic = %options.topic, "mqtt: subscribed");
                        }
                        Ok(Event::Incoming(Packet::Publish(p))) => {
                            match reading_from_message(&p.topic, &p.payload, now_ns()) {
                                Ok(r) => {
                                    st.readings.fetch_add(1, Ordering::Relaxed);
                                    on_reading(r);
                                }
                                Err(e) => {
                                    st.malformed.fetch_add(1, Ordering::Relaxed);
                                    tracing::warn!(topic = %p.topic, "mqtt: reading refused: {e}");
                                }
                            }
                        }
                        Ok(_) => {}
                        Err(e) => {
                            failures += 1;
                            // The first failure and then every tenth.
                            if failures % 10 == 1 {
                                tracing::warn!(broker = %where_, "mqtt: {e}; reconnecting in {:?}", backoff);
                            }
                            let end = std::time::Instant::now() + backoff;
                            while std::time::Instant::now() < end && !s.load(Ordering::Relaxed) {
                                std::thread::sleep(Duration::from_millis(50));
                            }
                            backoff = (backoff * 2).min(BACKOFF_MAX);
                        }
                    }
                    if s.load(Ordering::Relaxed) {
                        break;
                    }
                }
            })
            .map_err(MqttError::Thread)?;
        Ok(Self {
            client,
            stop,
            thread: Some(thread),
            stats,
        })
    }

    /// Stops the subscriber and waits for its thread (at most a
    /// keep-alive, 5 s, when the broker is silent).
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.client.try_disconnect();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_764_136_800_000_000_000;

    #[test]
    fn the_topic_names_the_probe_and_the_metric() {
        let t = topic("sonde/readings", "mast-1", "wind_speed");
        let r = reading_from_message(
            &t,
            br#"{"value": 7.5, "unit": "m/s", "at": "2025-11-26T06:00:00Z", "with": 270}"#,
            NOW,
        )
        .unwrap();
        assert_eq!(
            (r.probe.as_str(), r.metric.as_str()),
            ("mast-1", "wind_speed")
        );
        assert_eq!((r.value, r.with, r.at_ns), (7.5, Some(270.0), NOW));
    }

    #[test]
    fn malformed_messages_are_refused_with_the_reason() {
        let cases: [(&str, &[u8], &str); 5] = [
            ("sonde/readings/p/m", b"7.5", "payload"),
            ("sonde/readings/p/m", b"{\"value\": 1}", "unit: missing"),
            ("sonde/readings/p/m", b"\xff\xfe", "payload"),
            (
                "sonde/readings/p+/m",
                b"{\"value\":1,\"unit\":\"u\"}",
                "probe \"p+\"",
            ),
            (
                "sonde/readings/p/m",
                b"{\"value\":1,\"unit\":\"u\",\"probe\":\"q\"}",
                "the topic \"p\"",
            ),
        ];
        for (t, payload, expected) in cases {
            let e = reading_from_message(t, payload, NOW)
                .unwrap_err()
                .to_string();
            assert!(e.contains(expected), "{t}: {e}");
        }
        assert!(reading_from_message("alone", b"{}", NOW).is_err());
    }
}
