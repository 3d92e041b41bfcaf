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
//! (0.1 s doubling up to 10 s) when the broker goes away or refuses it,
//! hands every valid reading to a callback, and counts every malformed
//! message with the reason (never a panic: a message is input from the
//! network). The first malformed message is logged at WARN, then at most
//! one WARN per 10 s says how many were refused since (the others at
//! DEBUG), so a publisher cannot flood the log.
//!
//! It may log in with a user name and password, and talk TLS (rustls
//! with the ring provider; the broker's certificate checked against a
//! CA file or the system's roots). A connection that fails (a refused
//! password, a TLS handshake, a CA file that cannot be read) is logged
//! with the broker and the reason, counted in
//! [`SubscriberStats::connect_errors`], and retried with the back-off.

use crate::mqtt_tls::describe;
pub use crate::mqtt_tls::{tls_client_config, Credentials, Password, TlsOptions};
use crate::reading::{Reading, ReadingError, ReadingInput};
use rumqttc::{Client, Event, MqttOptions, Packet, QoS, TlsConfiguration, Transport};
use sonde_model::clock::now_ns;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

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
    /// A user name and password; `None`: anonymous.
    pub credentials: Option<Credentials>,
    /// TLS; `None`: plain TCP.
    pub tls: Option<TlsOptions>,
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
    /// Connections that failed or were lost: no broker, a refused login,
    /// a TLS failure, a CA file that cannot be read.
    pub connect_errors: AtomicU64,
    /// The last of those, with the broker (`127.0.0.1:8883: the broker
    /// refused the connection: not authorized …`); kept after a later
    /// connection succeeds.
    last_error: Mutex<Option<String>>,
}

impl SubscriberStats {
    /// The last connection error, with the broker.
    pub fn last_error(&self) -> Option<String> {
        self.last_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn connect_error(&self, error: String) {
        self.connect_errors.fetch_add(1, Ordering::Relaxed);
        *self.last_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(error);
    }
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
/// At most one WARN about refused messages per this window.
const REFUSED_WARN_WINDOW: Duration = Duration::from_secs(10);

/// How refused messages are logged: the first at WARN, then at most one
/// WARN per window, which says how many were refused since the last.
#[derive(Debug)]
struct RefusalLog {
    window: Duration,
    last_warn: Option<Instant>,
    /// Refused since the last WARN (logged at DEBUG).
    since: u64,
}

impl RefusalLog {
    fn new(window: Duration) -> Self {
        Self {
            window,
            last_warn: None,
            since: 0,
        }
    }

    fn due(&self, now: Instant) -> bool {
        self.last_warn
            .is_none_or(|t| now.saturating_duration_since(t) >= self.window)
    }

    /// A message refused at `now`: `Some(n)` to log it at WARN, with the
    /// `n` refused at DEBUG since the last WARN; `None` to log it at
    /// DEBUG.
    fn refused(&mut self, now: Instant) -> Option<u64> {
        if self.due(now) {
            self.last_warn = Some(now);
            Some(std::mem::take(&mut self.since))
        } else {
            self.since += 1;
            None
        }
    }

    /// At any other event: `Some(n)` when `n` messages were refused at
    /// DEBUG and a window has passed since the last WARN, to say so at
    /// WARN.
    fn flush(&mut self, now: Instant) -> Option<u64> {
        if self.since > 0 && self.due(now) {
            self.last_warn = Some(now);
            Some(std::mem::take(&mut self.since))
        } else {
            None
        }
    }
}

/// Reconnections: the back-off, and how failures are logged (the first,
/// a new reason, then every tenth at WARN; the others at DEBUG).
struct Retry<'a> {
    broker: &'a str,
    backoff: Duration,
    failures: u64,
    last_reason: String,
}

impl<'a> Retry<'a> {
    fn new(broker: &'a str) -> Self {
        Self {
            broker,
            backoff: BACKOFF_START,
            failures: 0,
            last_reason: String::new(),
        }
    }

    fn connected(&mut self) {
        self.backoff = BACKOFF_START;
        self.failures = 0;
        self.last_reason.clear();
    }

    /// A connection failed for `reason`: logged, counted in `stats`, and
    /// the back-off waited for (unless `stop` is set meanwhile).
    fn failed(&mut self, reason: String, stats: &SubscriberStats, stop: &AtomicBool) {
        let broker = self.broker;
        self.failures += 1;
        stats.connect_error(format!("{broker}: {reason}"));
        if self.failures % 10 == 1 || reason != self.last_reason {
            tracing::warn!(
                broker,
                "mqtt: {broker}: {reason}; retrying in {:?}",
                self.backoff
            );
        } else {
            tracing::debug!(broker, "mqtt: {broker}: {reason}");
        }
        self.last_reason = reason;
        let end = Instant::now() + self.backoff;
        while Instant::now() < end && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(50));
        }
        self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
    }
}

/// Whether `host` is this machine (a password sent in the clear to it
/// stays on it).
fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

impl MqttSubscriber {
    /// Starts subscribing; `on_reading` gets every valid reading, on the
    /// subscriber's thread.
    pub fn start(
        options: SubscriberOptions,
        mut on_reading: impl FnMut(Reading) + Send + 'static,
    ) -> Result<Self, MqttError> {
        let where_ = format!("{}:{}", options.host, options.port);
        let mut mqtt = MqttOptions::new(&options.client_id, &options.host, options.port);
        mqtt.set_keep_alive(Duration::from_secs(5));
        mqtt.set_clean_session(true);
        if let Some(c) = &options.credentials {
            let password = c.password.as_ref().map(Password::expose).unwrap_or("");
            mqtt.set_credentials(c.user.as_str(), password);
            if c.password.is_some() && options.tls.is_none() && !is_loopback(&options.host) {
                tracing::warn!(
                    broker = %where_,
                    "mqtt: {where_}: the password goes to the broker in the clear (no TLS)"
                );
            }
        }
        let (client, mut connection) = Client::new(mqtt, 1024);
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(SubscriberStats::default());
        let (c, s, st) = (client.clone(), Arc::clone(&stop), Arc::clone(&stats));
        let thread = std::thread::Builder::new()
            .name("mqtt-readings".into())
            .spawn(move || {
                let mut retry = Retry::new(&where_);
                let mut refusals = RefusalLog::new(REFUSED_WARN_WINDOW);
                // TLS is set up (the CA file read again) before each
                // connection: a CA file fixed or renewed is taken without
                // a restart.
                let mut connect = true;
                while !s.load(Ordering::Relaxed) {
                    if connect {
                        if let Some(tls) = &options.tls {
                            match tls_client_config(tls) {
                                Ok(config) => {
                                    connection.eventloop.mqtt_options.set_transport(
                                        Transport::tls_with_config(TlsConfiguration::Rustls(
                                            config,
                                        )),
                                    );
                                }
                                Err(e) => {
                                    // Never a connection without TLS.
                                    retry.failed(format!("TLS: {e}"), &st, &s);
                                    continue;
                                }
                            }
                        }
                        connect = false;
                    }
                    let Some(event) = connection.iter().next() else {
                        break;
                    };
                    if s.load(Ordering::Relaxed) {
                        break;
                    }
                    if let Some(n) = refusals.flush(Instant::now()) {
                        tracing::warn!(
                            broker = %where_,
                            "mqtt: {where_}: {n} more messages refused since the last warning (logged at DEBUG)"
                        );
                    }
                    match event {
                        Ok(Event::Incoming(Packet::ConnAck(_))) => {
                            st.connections.fetch_add(1, Ordering::Relaxed);
                            retry.connected();
                            tracing::info!(broker = %where_, "mqtt: connected to {where_}");
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
                                    match refusals.refused(Instant::now()) {
                                        Some(0) => tracing::warn!(
                                            topic = %p.topic,
                                            "mqtt: reading refused: {e}"
                                        ),
                                        Some(n) => tracing::warn!(
                                            topic = %p.topic,
                                            "mqtt: reading refused: {e} ({n} more refused since the last warning, logged at DEBUG)"
                                        ),
                                        None => tracing::debug!(
                                            topic = %p.topic,
                                            "mqtt: reading refused: {e}"
                                        ),
                                    }
                                }
                            }
                        }
                        Ok(_) => {}
                        Err(e) => {
                            connect = true;
                            retry.failed(describe(&e), &st, &s);
                        }
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

    #[test]
    fn refused_messages_warn_once_then_once_a_window_with_the_count() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let mut log = RefusalLog::new(s(10));
        // The first: WARN, none before it.
        assert_eq!(log.refused(t0), Some(0));
        // A flood within the window: DEBUG, counted.
        for i in 1..=500u64 {
            assert_eq!(log.refused(t0 + Duration::from_millis(i)), None);
        }
        assert_eq!(log.flush(t0 + s(9)), None);
        // The window over: the next refused one warns with the count.
        assert_eq!(log.refused(t0 + s(10)), Some(500));
        assert_eq!(log.refused(t0 + s(11)), None);
        assert_eq!(log.refused(t0 + s(12)), None);
        // No message after them: any other event says how many, once.
        assert_eq!(log.flush(t0 + s(19)), None);
        assert_eq!(log.flush(t0 + s(20)), Some(2));
        assert_eq!(log.flush(t0 + s(40)), None);
        // And the window starts again from that WARN.
        assert_eq!(log.refused(t0 + s(25)), None);
        assert_eq!(log.refused(t0 + s(30)), Some(1));
    }

    #[test]
    fn the_password_is_not_in_debug_output() {
        let options = SubscriberOptions {
            host: "broker".into(),
            port: 8883,
            client_id: "c".into(),
            topic: DEFAULT_TOPIC.into(),
            credentials: Some(Credentials {
                user: "sonde".into(),
                password: Some(Password::new("hunter2-secret")),
            }),
            tls: Some(TlsOptions::default()),
        };
        let shown = format!("{options:?} {options:#?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("sonde") && shown.contains("<redacted>"));
    }

    #[test]
    fn a_bad_ca_file_is_named_with_the_reason() {
        let dir = std::env::temp_dir().join(format!("sonde-readings-ca-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("missing.pem");
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let garbled = dir.join("garbled.pem");
        std::fs::write(
            &garbled,
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        for (path, expected) in [
            (&missing, "cannot read it"),
            (&empty, "no PEM certificate"),
            (&garbled, "certificate 1"),
        ] {
            let e = tls_client_config(&TlsOptions {
                ca: Some(path.clone()),
            })
            .unwrap_err();
            assert!(
                e.contains(&path.display().to_string()) && e.contains(expected),
                "{e}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
