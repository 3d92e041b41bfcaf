//! The MQTT subscriber against a real Mosquitto of the test's own (on a
//! free loopback port): started before the broker is up, it connects
//! when the broker comes; the broker restarted, it reconnects and
//! subscribes again; valid readings reach the callback, malformed ones
//! are counted and never stop it.

use rumqttc::{Client, MqttOptions, QoS};
use sonde_readings::{MqttSubscriber, Reading, SubscriberOptions};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A Mosquitto on `port`, killed when dropped.
struct Broker(Child);

impl Broker {
    fn start(dir: &std::path::Path, port: u16) -> Self {
        let conf = dir.join("mosquitto.conf");
        std::fs::write(
            &conf,
            format!("listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n"),
        )
        .unwrap();
        let bin = ["/usr/sbin/mosquitto", "/usr/bin/mosquitto"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists())
            .expect("mosquitto (scripts/system-deps.sh)");
        let child = Command::new(bin)
            .arg("-c")
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let up = wait(10, || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        assert!(up, "mosquitto did not listen on {port}");
        Broker(child)
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait(secs: u64, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// Publishes `messages` (topic, payload) with QoS 1 and waits until the
/// broker has acknowledged them.
fn publish(port: u16, messages: &[(String, String)]) {
    let mut o = MqttOptions::new(format!("pub-{}", std::process::id()), "127.0.0.1", port);
    o.set_keep_alive(Duration::from_secs(5));
    let (client, mut connection) = Client::new(o, 100);
    for (t, p) in messages {
        client
            .publish(t.as_str(), QoS::AtLeastOnce, false, p.as_bytes().to_vec())
            .unwrap();
    }
    let mut acked = 0;
    let end = Instant::now() + Duration::from_secs(10);
    while acked < messages.len() && Instant::now() < end {
        match connection.recv_timeout(Duration::from_secs(1)) {
            Ok(Ok(rumqttc::Event::Incoming(rumqttc::Packet::PubAck(_)))) => acked += 1,
            Ok(Err(e)) => panic!("publishing: {e}"),
            _ => {}
        }
    }
    assert_eq!(
        acked,
        messages.len(),
        "the broker acknowledged only {acked}"
    );
    let _ = client.disconnect();
}

fn next(rx: &Receiver<Reading>) -> Reading {
    rx.recv_timeout(Duration::from_secs(20))
        .expect("a reading within 20 s")
}

#[test]
fn the_subscriber_connects_late_reconnects_and_counts_malformed_messages() {
    let dir = std::env::temp_dir().join(format!("sonde-readings-sub-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let port = free_port();
    let (tx, rx) = channel();
    let sub = MqttSubscriber::start(
        SubscriberOptions {
            host: "127.0.0.1".into(),
            port,
            client_id: format!("sub-{}", std::process::id()),
            topic: "t/readings/#".into(),
        },
        move |r| {
            let _ = tx.send(r);
        },
    )
    .unwrap();
    let stats = std::sync::Arc::clone(&sub.stats);
    // No broker yet: it keeps trying.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(stats.connections.load(Ordering::Relaxed), 0);

    let broker = Broker::start(&dir, port);
    assert!(wait(20, || stats.subscriptions.load(Ordering::Relaxed) == 1));
    assert_eq!(stats.connections.load(Ordering::Relaxed), 1);
    publish(
        port,
        &[
            ("t/readings/p1/temp".into(), "not json".into()),
            ("t/readings/p1/temp".into(), r#"{"value": 1.5}"#.into()),
            (
                "t/readings/p1/temp".into(),
                r#"{"value": 21.5, "unit": "°C", "at": "2025-11-26T06:00:00Z"}"#.into(),
            ),
        ],
    );
    let r = next(&rx);
    assert_eq!(
        (r.probe.as_str(), r.metric.as_str(), r.value),
        ("p1", "temp", 21.5)
    );
    assert_eq!(r.at_ns, 1_764_136_800_000_000_000);
    assert_eq!(stats.malformed.load(Ordering::Relaxed), 2);

    // The broker restarted: the subscriber is back, subscribed again.
    drop(broker);
    let _broker = Broker::start(&dir, port);
    assert!(wait(30, || stats.subscriptions.load(Ordering::Relaxed) == 2));
    assert_eq!(stats.connections.load(Ordering::Relaxed), 2);
    publish(
        port,
        &[(
            "t/readings/p2/rssi".into(),
            r#"{"value": -71, "unit": "dBm", "with": 6}"#.into(),
        )],
    );
    let r = next(&rx);
    assert_eq!(
        (r.probe.as_str(), r.value, r.with),
        ("p2", -71.0, Some(6.0))
    );
    assert_eq!(stats.readings.load(Ordering::Relaxed), 2);
    sub.stop();
    let _ = std::fs::remove_dir_all(&dir);
}
