//! Readings from probes against a real agent (`sonde serve --http`, its
//! `[readings]` subscribed to the real Mosquitto on 127.0.0.1:1883):
//! posted over HTTP and published over MQTT, out of order, twice, late
//! and malformed; the 15-minute and daily figures checked against a hand
//! computation, a day query of 96 points, and every bad reading refused
//! with its reason.

use crate::common;
use common::http::{get, json, parse_metrics, send, wait_for, Agent};
use common::ServerProc;
use rumqttc::{Client, MqttOptions, QoS};
use serde_json::Value;
use std::time::Duration;

const TOKEN: &str = "0123456789abcdef-probe";
/// A token that may not post readings.
const OTHER: &str = "0123456789abcdef-ops";
const DATE: &str = "2025-11-26";

fn at(hh_mm: &str) -> String {
    format!("{DATE}T{hh_mm}:00Z")
}

/// An agent with a token that may post readings only, subscribed to the
/// topics under `prefix`.
fn agent(test: &str, prefix: &str) -> (common::TempDir, ServerProc, u16) {
    // -vv: after the first, refused messages are logged at debug (one
    // warning per 10 s says how many), and the test reads every reason.
    let Agent { server, port, dir } = Agent::builder(&format!("readings-{test}"))
        .args(["-vv"])
        .start(&format!(
            "[http]\ntokens = [{{ name = \"probe\", token = \"{TOKEN}\", may = [\"readings\"] }}, \
         {{ name = \"ops\", token = \"{OTHER}\", may = [\"campaigns\"] }}]\n\
         [readings]\nmqtt = \"127.0.0.1:1883\"\ntopic = \"{prefix}/#\"\n\
         client_id = \"sonde-test-{}-{test}\"\n",
            std::process::id()
        ));
    assert!(server.wait_for_log("mqtt: subscribed"), "{}", server.log());
    (dir, server, port)
}

fn post(port: u16, body: &str) -> (u16, Value) {
    let (status, text) = send(
        port,
        "POST",
        "/api/v1/readings",
        TOKEN,
        "application/json",
        body,
    );
    (status, json(&text))
}

fn day(port: u16, probe: &str, metric: &str) -> Value {
    let (status, body) = get(
        port,
        &format!("/api/v1/readings?probe={probe}&metric={metric}&interval=day&date={DATE}"),
    );
    assert_eq!(status, 200, "{body}");
    json(&body)
}

fn wind(hh_mm: &str, value: f64, with: Option<f64>, probe: &str) -> Value {
    let mut v = serde_json::json!({"probe": probe, "metric": "wind_speed", "unit": "m/s",
                                   "value": value, "at": at(hh_mm)});
    if let Some(w) = with {
        v["with"] = w.into();
    }
    v
}

fn close(a: &Value, b: f64) -> bool {
    a.as_f64().is_some_and(|a| (a - b).abs() < 1e-9)
}

#[test]
fn readings_posted_over_http_are_summarized_as_computed_by_hand() {
    let pid = std::process::id();
    let (dir, _server, port) = agent("http", &format!("sonde-test-{pid}-http"));
    let probe = format!("mast-{pid}");
    let p = probe.as_str();

    // No token: refused.
    let (status, _) = send(
        port,
        "POST",
        "/api/v1/readings",
        "",
        "application/json",
        "{}",
    );
    assert_eq!(status, 401);
    // A token without `readings`: refused.
    let (status, _) = send(
        port,
        "POST",
        "/api/v1/readings",
        OTHER,
        "application/json",
        "{}",
    );
    assert_eq!(status, 403);

    // Out of order, one twice.
    let batch = serde_json::json!([
        wind("00:07", 5.0, Some(180.0), p),
        wind("00:01", 3.0, Some(90.0), p),
        wind("00:04", 9.0, Some(270.0), p),
        wind("00:01", 3.0, Some(90.0), p),
        wind("00:20", 4.0, Some(10.0), p),
        wind("12:00", -1.5, None, p),
    ]);
    let (status, body) = post(port, &batch.to_string());
    assert_eq!(
        (status, &body),
        (201, &serde_json::json!({"new": 5, "duplicate": 1}))
    );

    let d = day(port, p, "wind_speed");
    assert_eq!(d["unit"], "m/s");
    let points = d["points"].as_array().unwrap();
    assert_eq!(points.len(), 96);
    let b0 = &points[0];
    assert_eq!(b0["start"], at("00:00"));
    assert_eq!(b0["count"], 3);
    assert!(close(&b0["mean"], 17.0 / 3.0), "{b0}");
    assert_eq!(
        (&b0["min"], &b0["min_at"]),
        (&3.0.into(), &at("00:01").into())
    );
    assert_eq!(
        (&b0["max"], &b0["max_at"]),
        (&9.0.into(), &at("00:04").into())
    );
    assert_eq!(b0["with_at_max"], 270.0);
    assert_eq!(
        (&points[1]["count"], &points[1]["mean"]),
        (&1.into(), &4.0.into())
    );
    assert_eq!(points[48]["min"], -1.5);
    assert_eq!(points[2]["count"], 0);
    assert!(points[2]["mean"].is_null() && points[2]["max"].is_null());
    assert_eq!(points.iter().filter(|p| p["count"] != 0).count(), 3);

    // A late reading corrects its bucket and its day.
    let (status, body) = post(port, &wind("00:10", 12.0, Some(45.0), p).to_string());
    assert_eq!((status, &body["new"]), (201, &1.into()));
    let b0 = day(port, p, "wind_speed")["points"][0].clone();
    assert_eq!((&b0["count"], &b0["mean"]), (&4.into(), &7.25.into()));
    assert_eq!(
        (&b0["max"], &b0["with_at_max"]),
        (&12.0.into(), &45.0.into())
    );

    // The same batch again changes nothing.
    let (status, body) = post(port, &batch.to_string());
    assert_eq!(
        (status, &body),
        (200, &serde_json::json!({"new": 0, "duplicate": 6}))
    );

    // A bad reading refuses its batch, naming it and why.
    let cases = [
        (wind("00:31", 1.0, None, "a b"), "probe \"a b\""),
        (
            serde_json::json!({"probe": p, "metric": "wind_speed", "unit": "m/s", "value": "7"}),
            "not a reading",
        ),
        (
            serde_json::json!({"probe": p, "metric": "wind_speed", "unit": "m/s", "value": 1}),
            "", // valid: no time, taken as now
        ),
        (
            {
                let mut w = wind("00:31", 1.0, None, p);
                w["at"] = "2099-01-01T00:00:00Z".into();
                w
            },
            "ahead",
        ),
        (
            {
                let mut w = wind("00:31", 1.0, None, p);
                w["unit"] = "km/h".into();
                w
            },
            "\"m/s\"",
        ),
    ];
    for (bad, why) in cases {
        if why.is_empty() {
            continue;
        }
        let body = serde_json::json!([wind("00:32", 2.0, None, p), bad]).to_string();
        let (status, answer) = post(port, &body);
        assert_eq!(status, 422, "{answer}");
        assert_eq!(answer["item"], 1, "{answer}");
        let e = answer["error"].as_str().unwrap();
        assert!(e.starts_with("reading 1: ") && e.contains(why), "{e}");
    }
    assert_eq!(
        day(port, p, "wind_speed")["points"][2]["count"],
        0,
        "nothing kept"
    );
    for (body, status) in [("not json", 400), ("[]", 400), ("3", 400)] {
        assert_eq!(post_raw(port, body), status, "{body}");
    }

    // A month of days, a year of months.
    let (status, body) = get(
        port,
        &format!("/api/v1/readings?probe={p}&metric=wind_speed&interval=month&date={DATE}"),
    );
    assert_eq!(status, 200);
    let month = json(&body);
    let days = month["points"].as_array().unwrap();
    assert_eq!(days.len(), 30);
    let d26 = &days[25];
    assert_eq!(
        (&d26["start"], &d26["count"]),
        (&at("00:00").into(), &6.into())
    );
    assert!(close(&d26["mean"], 31.5 / 6.0), "{d26}");
    assert_eq!(
        (&d26["min"], &d26["max"], &d26["with_at_max"]),
        (&(-1.5).into(), &12.0.into(), &45.0.into())
    );
    let (_, body) = get(
        port,
        &format!("/api/v1/readings?probe={p}&metric=wind_speed&interval=year&date={DATE}"),
    );
    let year = json(&body);
    assert_eq!(year["points"].as_array().unwrap().len(), 12);
    assert_eq!(year["points"][10]["count"], 6);

    // Bad queries.
    for (q, status) in [
        (format!("probe={p}&metric=wind_speed&interval=week"), 400),
        (format!("probe={p}&metric=wind_speed&date=26.11.2025"), 400),
        (format!("probe={p}&metric=gust"), 404),
        ("metric=wind_speed".to_string(), 400),
        ("probe=a%20b&metric=x".to_string(), 400),
    ] {
        assert_eq!(get(port, &format!("/api/v1/readings?{q}")).0, status, "{q}");
    }
    let (_, body) = get(port, "/api/v1/readings/probes");
    let list = json(&body);
    assert!(list["series"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["probe"] == p && s["unit"] == "m/s" && s["first"] == at("00:01")));
    let _ = std::fs::remove_dir_all(dir);
}

fn post_raw(port: u16, body: &str) -> u16 {
    send(
        port,
        "POST",
        "/api/v1/readings",
        TOKEN,
        "application/json",
        body,
    )
    .0
}

/// A client publishing to the real broker; its connection driven on a
/// thread until dropped.
struct Publisher {
    client: Client,
}

impl Publisher {
    fn connect(id: &str) -> Self {
        let mut o = MqttOptions::new(id, "127.0.0.1", 1883);
        o.set_keep_alive(Duration::from_secs(5));
        let (client, mut connection) = Client::new(o, 100);
        std::thread::spawn(move || {
            for e in connection.iter() {
                if e.is_err() {
                    break;
                }
            }
        });
        Self { client }
    }

    fn publish(&self, topic: &str, payload: &str) {
        self.client
            .publish(topic, QoS::AtLeastOnce, false, payload.as_bytes().to_vec())
            .unwrap();
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        let _ = self.client.disconnect();
    }
}

#[test]
fn readings_published_over_mqtt_are_summarized_and_bad_ones_refused() {
    let pid = std::process::id();
    let prefix = format!("sonde-test-{pid}-mqtt");
    let (dir, server, port) = agent("mqtt", &prefix);
    let probe = format!("roof-{pid}");
    let topic = format!("{prefix}/{probe}/temp");
    let publisher = Publisher::connect(&format!("sonde-test-pub-{pid}"));
    let reading =
        |hh_mm: &str, v: f64| format!(r#"{{"value": {v}, "unit": "°C", "at": "{}"}}"#, at(hh_mm));

    // Malformed first: the good ones after them arrive after them.
    publisher.publish(&topic, "not json");
    publisher.publish(&topic, r#"{"value": 1}"#);
    publisher.publish(&format!("{prefix}/a b/temp"), &reading("01:00", 1.0));
    publisher.publish(
        &topic,
        r#"{"value": 1, "unit": "°C", "at": "2099-01-01T00:00:00Z"}"#,
    );
    // Out of order, one twice.
    publisher.publish(&topic, &reading("01:05", 20.0));
    publisher.publish(&topic, &reading("01:02", 18.5));
    publisher.publish(&topic, &reading("01:02", 18.5));
    publisher.publish(&topic, &reading("01:14", 21.5));
    publisher.publish(&topic, &reading("01:16", 17.0));

    let bucket = |i: usize| -> Value {
        let (status, body) = get(
            port,
            &format!("/api/v1/readings?probe={probe}&metric=temp&date={DATE}"),
        );
        if status != 200 {
            return Value::Null;
        }
        json(&body)["points"][i].clone()
    };
    assert!(
        wait_for(20, || bucket(4)["count"] == 3 && bucket(5)["count"] == 1),
        "{} {}\n{}",
        bucket(4),
        bucket(5),
        server.log()
    );
    let b4 = bucket(4);
    assert_eq!(b4["start"], at("01:00"));
    assert!(close(&b4["mean"], 20.0), "{b4}");
    assert_eq!((&b4["min"], &b4["max"]), (&18.5.into(), &21.5.into()));
    assert_eq!(
        (&b4["min_at"], &b4["max_at"]),
        (&at("01:02").into(), &at("01:14").into())
    );
    assert_eq!(bucket(5)["mean"], 17.0);
    assert_eq!(day(port, &probe, "temp")["unit"], "°C");

    // Late: the new max of bucket 4.
    publisher.publish(&topic, &reading("01:00", 25.0));
    assert!(wait_for(20, || bucket(4)["count"] == 4), "{}", bucket(4));
    let b4 = bucket(4);
    assert_eq!((&b4["mean"], &b4["max"]), (&21.25.into(), &25.0.into()));

    // Every malformed message refused with its reason, none kept.
    let log = server.log();
    for why in [
        "payload: expected",
        "unit: missing",
        "probe \"a b\"",
        "ahead",
    ] {
        assert!(log.contains(why), "no refusal with {why:?} in\n{log}");
    }
    assert_eq!(log.matches("reading refused").count(), 4, "{log}");
    let (_, body) = get(port, "/api/v1/readings/probes");
    assert!(!body.contains("a b"), "{body}");

    // /metrics counts them: 6 valid (one a duplicate), 4 malformed.
    let sample = |text: &str, name: &str| -> Option<u64> {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
    };
    let expected = [
        ("sonde_readings_mqtt_received_total", 6),
        ("sonde_readings_mqtt_malformed_total", 4),
        ("sonde_readings_kept_total", 5),
        ("sonde_readings_duplicates_total", 1),
        ("sonde_readings_refused_total", 0),
        ("sonde_readings_lost_total", 0),
    ];
    let counted = || {
        let (_, text) = get(port, "/metrics");
        expected
            .iter()
            .all(|(name, n)| sample(&text, name) == Some(*n))
    };
    assert!(wait_for(10, counted), "{}", get(port, "/metrics").1);
    // As Prometheus's own parser reads the page.
    let m = parse_metrics(&get(port, "/metrics").1);
    assert_eq!(m["sonde_readings_mqtt_malformed"][0][2], 4.0, "{m}");
    assert!(
        m["sonde_readings_mqtt_connections"][0][2]
            .as_f64()
            .is_some_and(|n| n >= 1.0),
        "{m}"
    );
    drop(publisher);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_bad_readings_section_stops_the_agent_naming_the_key() {
    let dir = common::TempDir::new("readings-config");
    for (section, key) in [
        ("mqtt = \"127.0.0.1:99999\"", "readings.mqtt"),
        ("mqtt = \"127.0.0.1\"\ntopic = \"a b\"", "readings.topic"),
    ] {
        let config = dir.join("agent.toml");
        std::fs::write(&config, format!("[readings]\n{section}\n")).unwrap();
        let out = common::sonde()
            .args([
                "serve",
                "-p",
                "0",
                "--bind",
                "::1",
                "--no-reflector",
                "--idle-timeout",
                "5s",
            ])
            .arg("--archive")
            .arg(dir.join("a.db"))
            .arg("--config")
            .arg(&config)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(key), "{key}: {err}");
    }
    let _ = std::fs::remove_dir_all(dir);
}
