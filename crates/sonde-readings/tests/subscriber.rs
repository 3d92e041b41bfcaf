//! The MQTT subscriber against a real Mosquitto of the test's own (on a
//! free loopback port): started before the broker is up, it connects
//! when the broker comes; the broker restarted, it reconnects and
//! subscribes again; valid readings reach the callback, malformed ones
//! are counted and never stop it, and a flood of them is logged at WARN
//! once per window.
//!
//! Then a Mosquitto that wants a user name and password, over TLS only,
//! with a CA and a certificate made here (rcgen): readings arrive with the
//! right login; a wrong password, an anonymous publisher and a wrong CA
//! are refused, and the subscriber says so, naming the broker and why.

use rumqttc::{Client, MqttOptions, QoS, TlsConfiguration, Transport};
use sonde_readings::mqtt::{tls_client_config, Credentials, Password, TlsOptions};
use sonde_readings::{MqttSubscriber, Reading, SubscriberOptions, SubscriberStats};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

const USER: &str = "probe-reader";
const PASSWORD: &str = "s3cret-Passw0rd";
const WRONG_PASSWORD: &str = "not-the-Passw0rd";

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
    fn start(dir: &Path, port: u16) -> Self {
        Self::with_conf(
            dir,
            port,
            format!("listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n"),
        )
    }

    /// A Mosquitto that wants `USER` and `PASSWORD`, on a TLS listener
    /// whose certificate `pki` made.
    fn secure(dir: &Path, port: u16, pki: &Pki) -> Self {
        let passwd = dir.join("passwd");
        let made = Command::new("/usr/bin/mosquitto_passwd")
            .args(["-b", "-c"])
            .arg(&passwd)
            .args([USER, PASSWORD])
            .stdout(Stdio::null())
            .status()
            .expect("mosquitto_passwd (package mosquitto)");
        assert!(made.success(), "mosquitto_passwd: {made}");
        // `user root`: as root, Mosquitto would otherwise read its files as
        // the user mosquitto, and the password file is 0600.
        Self::with_conf(
            dir,
            port,
            format!(
                "user root\n\
                 listener {port} 127.0.0.1\n\
                 cafile {}\ncertfile {}\nkeyfile {}\n\
                 allow_anonymous false\npassword_file {}\n\
                 persistence false\nlog_dest file {}\n",
                pki.ca.display(),
                pki.cert.display(),
                pki.key.display(),
                passwd.display(),
                dir.join("mosquitto.log").display()
            ),
        )
    }

    fn with_conf(dir: &Path, port: u16, text: String) -> Self {
        let conf = dir.join("mosquitto.conf");
        std::fs::write(&conf, text).unwrap();
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
        assert!(
            up,
            "mosquitto did not listen on {port}: {}",
            std::fs::read_to_string(dir.join("mosquitto.log")).unwrap_or_default()
        );
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

/// How a test's client logs in: a user name and password, and TLS
/// checked against a CA file.
#[derive(Clone, Default)]
struct Login {
    user: Option<(&'static str, &'static str)>,
    ca: Option<PathBuf>,
}

impl Login {
    fn tls(ca: &Path, user: Option<(&'static str, &'static str)>) -> Self {
        Self {
            user,
            ca: Some(ca.to_path_buf()),
        }
    }
}

/// Publishes `messages` (topic, payload) with QoS 1, logged in as
/// `login`, and waits until the broker has acknowledged them; the error
/// says why it could not (the broker refused the login, say).
fn publish_as(port: u16, login: &Login, messages: &[(String, String)]) -> Result<(), String> {
    static N: AtomicU64 = AtomicU64::new(0);
    let id = format!(
        "pub-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    );
    let mut o = MqttOptions::new(id, "127.0.0.1", port);
    o.set_keep_alive(Duration::from_secs(5));
    if let Some((user, password)) = login.user {
        o.set_credentials(user, password);
    }
    if let Some(ca) = &login.ca {
        let config = tls_client_config(&TlsOptions {
            ca: Some(ca.clone()),
        })?;
        o.set_transport(Transport::tls_with_config(TlsConfiguration::Rustls(config)));
    }
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
            Ok(Err(e)) => return Err(e.to_string()),
            _ => {}
        }
    }
    let _ = client.disconnect();
    if acked == messages.len() {
        Ok(())
    } else {
        Err(format!("the broker acknowledged only {acked}"))
    }
}

/// Publishes anonymously, over plain TCP.
fn publish(port: u16, messages: &[(String, String)]) {
    publish_as(port, &Login::default(), messages).unwrap();
}

/// What the subscribers of this test binary logged (DEBUG and up), one
/// line each.
fn log() -> Arc<Mutex<Vec<u8>>> {
    static LOG: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    Arc::clone(LOG.get_or_init(|| {
        let log = Arc::new(Mutex::new(Vec::new()));
        let to = Arc::clone(&log);
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new("sonde_readings=debug"))
            .with_ansi(false)
            .with_writer(move || Appender(Arc::clone(&to)))
            .init();
        log
    }))
}

struct Appender(Arc<Mutex<Vec<u8>>>);

impl Write for Appender {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The lines logged that hold every one of `words`.
fn logged(words: &[&str]) -> Vec<String> {
    let log = log();
    let text = String::from_utf8_lossy(&log.lock().unwrap()).into_owned();
    text.lines()
        .filter(|l| words.iter().all(|w| l.contains(w)))
        .map(str::to_string)
        .collect()
}

/// A fresh directory of the test's own (and the log read from now on).
fn test_dir(name: &str) -> PathBuf {
    log();
    let dir = std::env::temp_dir().join(format!("sonde-readings-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A CA, a certificate it signed for localhost and 127.0.0.1 (and its
/// key), and another CA that signed nothing of the broker's, as PEM files.
struct Pki {
    ca: PathBuf,
    other_ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
}

fn pki(dir: &Path) -> Pki {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    };
    let ca = |name: &str| {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let cert = params.self_signed(&key).unwrap();
        (cert.pem(), Issuer::new(params, key))
    };
    let (ca_pem, issuer) = ca("sonde test CA");
    let (other_pem, _) = ca("another CA");
    let key = KeyPair::generate().unwrap();
    let mut params =
        CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, "localhost");
    let cert = params.signed_by(&key, &issuer).unwrap();
    let p = Pki {
        ca: dir.join("ca.pem"),
        other_ca: dir.join("other-ca.pem"),
        cert: dir.join("server.pem"),
        key: dir.join("server.key"),
    };
    std::fs::write(&p.ca, ca_pem).unwrap();
    std::fs::write(&p.other_ca, other_pem).unwrap();
    std::fs::write(&p.cert, cert.pem()).unwrap();
    std::fs::write(&p.key, key.serialize_pem()).unwrap();
    p
}

/// A subscriber to `t/readings/#` on `host`:`port`, logged in as
/// `login`; its readings come out of the receiver.
fn subscribe(
    host: &str,
    port: u16,
    name: &str,
    login: &Login,
) -> (MqttSubscriber, Arc<SubscriberStats>, Receiver<Reading>) {
    let (tx, rx) = channel();
    let sub = MqttSubscriber::start(
        SubscriberOptions {
            host: host.into(),
            port,
            client_id: format!("sub-{name}-{}", std::process::id()),
            topic: "t/readings/#".into(),
            credentials: login.user.map(|(user, password)| Credentials {
                user: user.into(),
                password: Some(Password::new(password)),
            }),
            tls: login.ca.as_ref().map(|ca| TlsOptions {
                ca: Some(ca.clone()),
            }),
        },
        move |r| {
            let _ = tx.send(r);
        },
    )
    .unwrap();
    let stats = Arc::clone(&sub.stats);
    (sub, stats, rx)
}

fn reading(probe: &str, value: f64) -> (String, String) {
    (
        format!("t/readings/{probe}/temp"),
        format!(r#"{{"value": {value}, "unit": "°C"}}"#),
    )
}

fn next(rx: &Receiver<Reading>) -> Reading {
    rx.recv_timeout(Duration::from_secs(20))
        .expect("a reading within 20 s")
}

#[test]
fn the_subscriber_connects_late_reconnects_and_counts_malformed_messages() {
    let dir = test_dir("sub");
    let port = free_port();
    let (tx, rx) = channel();
    let sub = MqttSubscriber::start(
        SubscriberOptions {
            host: "127.0.0.1".into(),
            port,
            client_id: format!("sub-{}", std::process::id()),
            topic: "t/readings/#".into(),
            credentials: None,
            tls: None,
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

#[test]
fn a_flood_of_malformed_messages_is_counted_and_warned_of_once_a_window() {
    let dir = test_dir("flood");
    let port = free_port();
    let _broker = Broker::start(&dir, port);
    let (sub, stats, rx) = subscribe("127.0.0.1", port, "flood", &Login::default());
    assert!(wait(20, || stats.subscriptions.load(Ordering::Relaxed) == 1));
    let flood: Vec<(String, String)> = (0..30)
        .map(|i| ("t/readings/flood/m".to_string(), format!("not json {i}")))
        .collect();
    publish(port, &flood);
    publish(port, &[reading("after-flood", 1.0)]);
    // Every one counted; the valid one after them still taken.
    assert_eq!(next(&rx).probe, "after-flood");
    assert_eq!(stats.malformed.load(Ordering::Relaxed), 30);
    let warned = |words: &[&str]| {
        logged(words)
            .into_iter()
            .filter(|l| l.contains(" WARN "))
            .count()
    };
    // The first at WARN, the 29 others at DEBUG, each with its reason.
    assert_eq!(warned(&["reading refused", "t/readings/flood/m"]), 1);
    let debug = logged(&[" DEBUG ", "reading refused", "t/readings/flood/m"]);
    assert_eq!(debug.len(), 29, "{debug:#?}");
    // Once the 10 s window is over, one WARN says how many (the next
    // event, a keep-alive ping at the latest, brings it).
    let summary = format!("127.0.0.1:{port}: 29 more messages refused since the last warning");
    assert!(
        wait(25, || warned(&[&summary]) == 1),
        "{:#?}",
        logged(&[&format!("{port}")])
    );
    assert_eq!(warned(&["refused", &format!("{port}")]), 1);
    sub.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn readings_arrive_over_tls_with_a_user_and_password() {
    let dir = test_dir("tls");
    let pki = pki(&dir);
    let port = free_port();
    let _broker = Broker::secure(&dir, port, &pki);
    let login = Login::tls(&pki.ca, Some((USER, PASSWORD)));
    // By name (the certificate's DNS name) and by address (its IP one).
    let (by_name, name_stats, name_rx) = subscribe("localhost", port, "tls-name", &login);
    let (by_ip, ip_stats, ip_rx) = subscribe("127.0.0.1", port, "tls-ip", &login);
    // The listener takes TLS only: the same login in the clear fails.
    let clear = Login {
        user: Some((USER, PASSWORD)),
        ca: None,
    };
    let (plain, plain_stats, plain_rx) = subscribe("127.0.0.1", port, "tls-plain", &clear);
    for stats in [&name_stats, &ip_stats] {
        assert!(
            wait(20, || stats.subscriptions.load(Ordering::Relaxed) == 1),
            "{:?}",
            stats.last_error()
        );
    }
    publish_as(
        port,
        &login,
        &[
            reading("mast-1", 21.5),
            ("t/readings/mast-1/temp".into(), "{}".into()),
        ],
    )
    .unwrap();
    for (rx, stats) in [(&name_rx, &name_stats), (&ip_rx, &ip_stats)] {
        let r = next(rx);
        assert_eq!(
            (
                r.probe.as_str(),
                r.metric.as_str(),
                r.value,
                r.unit.as_str()
            ),
            ("mast-1", "temp", 21.5, "°C")
        );
        assert!(wait(10, || stats.malformed.load(Ordering::Relaxed) == 1));
        assert_eq!(stats.connect_errors.load(Ordering::Relaxed), 0);
        assert_eq!(stats.last_error(), None);
    }
    assert!(wait(20, || plain_stats
        .connect_errors
        .load(Ordering::Relaxed)
        >= 1));
    assert_eq!(plain_stats.connections.load(Ordering::Relaxed), 0);
    assert!(plain_rx.try_recv().is_err());
    // The password is in no log line.
    assert!(logged(&[PASSWORD]).is_empty());
    for s in [by_name, by_ip, plain] {
        s.stop();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_wrong_password_is_refused_and_named_and_gets_nothing() {
    let dir = test_dir("password");
    let pki = pki(&dir);
    let port = free_port();
    let _broker = Broker::secure(&dir, port, &pki);
    let (bad, bad_stats, bad_rx) = subscribe(
        "127.0.0.1",
        port,
        "wrong-password",
        &Login::tls(&pki.ca, Some((USER, WRONG_PASSWORD))),
    );
    let good_login = Login::tls(&pki.ca, Some((USER, PASSWORD)));
    let (good, good_stats, good_rx) = subscribe("127.0.0.1", port, "right-password", &good_login);
    // Refused, and said so: in the stats and in the log, with the broker.
    assert!(wait(20, || bad_stats
        .connect_errors
        .load(Ordering::Relaxed)
        >= 2));
    let error = bad_stats.last_error().unwrap();
    let broker = format!("127.0.0.1:{port}");
    assert!(
        error.starts_with(&broker) && error.contains("refused the connection: not authorized"),
        "{error}"
    );
    let warned = logged(&[" WARN ", &broker, "not authorized", "retrying in"]);
    assert!(!warned.is_empty(), "{:#?}", logged(&[&broker]));
    // A reading from a legitimate publisher reaches the right subscriber
    // with its own probe, and never the refused one.
    assert!(wait(20, || good_stats
        .subscriptions
        .load(Ordering::Relaxed)
        == 1));
    publish_as(port, &good_login, &[reading("legit", 3.0)]).unwrap();
    let r = next(&good_rx);
    assert_eq!((r.probe.as_str(), r.value), ("legit", 3.0));
    std::thread::sleep(Duration::from_secs(1));
    assert!(bad_rx.try_recv().is_err());
    assert!(good_rx.try_recv().is_err());
    for (what, n) in [
        ("connections", &bad_stats.connections),
        ("subscriptions", &bad_stats.subscriptions),
        ("readings", &bad_stats.readings),
        ("malformed", &bad_stats.malformed),
    ] {
        assert_eq!(n.load(Ordering::Relaxed), 0, "{what}");
    }
    // Still trying, with a back-off (0.1 s, 0.2 s, …: a handful in a few
    // seconds, not hundreds).
    let tries = bad_stats.connect_errors.load(Ordering::Relaxed);
    assert!((2..=20).contains(&tries), "{tries}");
    // Neither password is in the log nor in Debug output.
    assert!(logged(&[PASSWORD]).is_empty() && logged(&[WRONG_PASSWORD]).is_empty());
    bad.stop();
    good.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn anonymous_and_wrong_password_publishers_are_refused_by_the_broker() {
    let dir = test_dir("anonymous");
    let pki = pki(&dir);
    let port = free_port();
    let _broker = Broker::secure(&dir, port, &pki);
    let login = Login::tls(&pki.ca, Some((USER, PASSWORD)));
    let (sub, stats, rx) = subscribe("127.0.0.1", port, "anon", &login);
    assert!(wait(20, || stats.subscriptions.load(Ordering::Relaxed) == 1));
    for (who, publisher) in [
        ("anonymous", Login::tls(&pki.ca, None)),
        (
            "wrong password",
            Login::tls(&pki.ca, Some((USER, WRONG_PASSWORD))),
        ),
        (
            "unknown user",
            Login::tls(&pki.ca, Some(("nobody", PASSWORD))),
        ),
    ] {
        let e = publish_as(port, &publisher, &[reading("intruder", 66.0)]).unwrap_err();
        assert!(e.contains("NotAuthorized"), "{who}: {e}");
    }
    // Then a legitimate one: its reading is the only one that arrives.
    publish_as(port, &login, &[reading("legit", 1.0)]).unwrap();
    assert_eq!(next(&rx).probe, "legit");
    std::thread::sleep(Duration::from_secs(1));
    assert!(rx.try_recv().is_err());
    assert_eq!(stats.readings.load(Ordering::Relaxed), 1);
    assert_eq!(stats.malformed.load(Ordering::Relaxed), 0);
    sub.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_wrong_ca_fails_the_handshake_until_the_ca_file_is_fixed() {
    let dir = test_dir("wrong-ca");
    let pki = pki(&dir);
    let port = free_port();
    let _broker = Broker::secure(&dir, port, &pki);
    let broker = format!("127.0.0.1:{port}");
    // The CA file names a CA that did not sign the broker's certificate.
    let ca = dir.join("ca-in-use.pem");
    std::fs::copy(&pki.other_ca, &ca).unwrap();
    let (sub, stats, rx) = subscribe(
        "127.0.0.1",
        port,
        "wrong-ca",
        &Login::tls(&ca, Some((USER, PASSWORD))),
    );
    // A CA file that is not there.
    let missing = dir.join("no-such-ca.pem");
    let (gone, gone_stats, _) = subscribe(
        "127.0.0.1",
        port,
        "missing-ca",
        &Login::tls(&missing, Some((USER, PASSWORD))),
    );
    assert!(wait(20, || stats.connect_errors.load(Ordering::Relaxed) >= 1));
    let error = stats.last_error().unwrap();
    assert!(
        error.starts_with(&broker) && error.contains("TLS: invalid peer certificate"),
        "{error}"
    );
    assert!(!logged(&[" WARN ", &broker, "invalid peer certificate"]).is_empty());
    assert!(wait(20, || gone_stats
        .connect_errors
        .load(Ordering::Relaxed)
        >= 1));
    let error = gone_stats.last_error().unwrap();
    assert!(
        error.starts_with(&broker)
            && error.contains(&format!(
                "TLS: CA file {}: cannot read it",
                missing.display()
            )),
        "{error}"
    );
    for s in [&stats, &gone_stats] {
        assert_eq!(s.connections.load(Ordering::Relaxed), 0);
    }
    // The right CA put in place: the subscriber reads it again at its
    // next try and is in.
    let fixed = dir.join("ca-in-use.pem.new");
    std::fs::copy(&pki.ca, &fixed).unwrap();
    std::fs::rename(&fixed, &ca).unwrap();
    assert!(
        wait(30, || stats.subscriptions.load(Ordering::Relaxed) == 1),
        "{:?}",
        stats.last_error()
    );
    publish_as(
        port,
        &Login::tls(&pki.ca, Some((USER, PASSWORD))),
        &[reading("after-fix", 2.0)],
    )
    .unwrap();
    assert_eq!(next(&rx).probe, "after-fix");
    assert_eq!(gone_stats.connections.load(Ordering::Relaxed), 0);
    sub.stop();
    gone.stop();
    let _ = std::fs::remove_dir_all(&dir);
}
