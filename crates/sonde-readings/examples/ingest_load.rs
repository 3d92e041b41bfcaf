//! The load of bench/ingest: `N` readings of one probe's metric (one a
//! second from 2025-11-26T00:00:00Z, all in one day) into a running
//! agent, over HTTP or over MQTT; prints the readings per second from the
//! first sent to the last one kept (read back from the agent's day query).
//!
//! ingest_load http API_PORT TOKEN PROBE N BATCH
//! ingest_load mqtt API_PORT BROKER_PORT TOPIC_PREFIX PROBE N

use rumqttc::{Client, MqttOptions, QoS};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const DAY: &str = "2025-11-26";
/// The most the agent is waited for, all readings sent.
const WAIT: Duration = Duration::from_secs(300);
/// The most the agent is waited for when it keeps no more.
const STALL: Duration = Duration::from_secs(15);

fn at(i: usize) -> String {
    format!(
        "{DAY}T{:02}:{:02}:{:02}Z",
        i / 3600 % 24,
        i / 60 % 60,
        i % 60
    )
}

/// One request (`Connection: close`); the status and the body.
fn request(port: u16, method_path: &str, token: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(("::1", port)).expect("agent's API");
    s.set_read_timeout(Some(Duration::from_secs(60))).ok();
    let req = format!(
        "{method_path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).expect("send");
    let mut raw = String::new();
    let _ = s.read_to_string(&mut raw);
    let status = raw
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = raw
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// How many readings of `probe`'s `metric` the agent keeps that day.
fn kept(port: u16, probe: &str, metric: &str) -> u64 {
    let (status, body) = request(
        port,
        &format!("GET /api/v1/readings?probe={probe}&metric={metric}&interval=day&date={DAY}"),
        "",
        "",
    );
    if status != 200 {
        return 0;
    }
    let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
    v["points"]
        .as_array()
        .map_or(0, |p| p.iter().filter_map(|p| p["count"].as_u64()).sum())
}

fn reading(i: usize) -> serde_json::Value {
    serde_json::json!({"value": (i % 1000) as f64 / 10.0, "unit": "m/s", "at": at(i),
                       "with": (i % 360) as f64})
}

/// Waits until the agent keeps `n`; the rate since `start`. Gives up
/// when nothing more is kept for [`STALL`], or after [`WAIT`].
fn wait_kept(port: u16, probe: &str, metric: &str, n: usize, start: Instant) -> f64 {
    let end = Instant::now() + WAIT;
    let (mut last, mut since) = (0, Instant::now());
    loop {
        let k = kept(port, probe, metric);
        if k >= n as u64 {
            return n as f64 / start.elapsed().as_secs_f64();
        }
        if k > last {
            (last, since) = (k, Instant::now());
        }
        if Instant::now() > end || since.elapsed() > STALL {
            eprintln!("ingest_load: only {k} of {n} readings kept (no more for {STALL:?})");
            std::process::exit(1);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let arg = |i: usize| {
        a.get(i).cloned().unwrap_or_else(|| {
        eprintln!("usage: ingest_load http API_PORT TOKEN PROBE N BATCH | mqtt API_PORT BROKER_PORT PREFIX PROBE N");
        std::process::exit(2)
    })
    };
    let num = |i: usize| arg(i).parse::<usize>().expect("a number");
    match arg(1).as_str() {
        "http" => {
            let (port, token, probe, n, batch) = (num(2) as u16, arg(3), arg(4), num(5), num(6));
            let start = Instant::now();
            let mut i = 0;
            while i < n {
                let items: Vec<serde_json::Value> = (i..n.min(i + batch))
                    .map(|j| {
                        let mut r = reading(j);
                        r["probe"] = probe.clone().into();
                        r["metric"] = "http".into();
                        r
                    })
                    .collect();
                let body = serde_json::Value::from(items).to_string();
                let (status, answer) = request(port, "POST /api/v1/readings", &token, &body);
                assert!(status == 201 || status == 200, "{status} {answer}");
                i += batch;
            }
            let rate = wait_kept(port, &probe, "http", n, start);
            println!("{rate:.0}");
        }
        "mqtt" => {
            let (port, broker, prefix, probe, n) =
                (num(2) as u16, num(3) as u16, arg(4), arg(5), num(6));
            let mut o = MqttOptions::new(
                format!("ingest-load-{}", std::process::id()),
                "127.0.0.1",
                broker,
            );
            o.set_keep_alive(Duration::from_secs(5));
            let (client, mut connection) = Client::new(o, 1000);
            std::thread::spawn(move || {
                for e in connection.iter() {
                    if e.is_err() {
                        break;
                    }
                }
            });
            let topic = format!("{prefix}/{probe}/mqtt");
            let start = Instant::now();
            for i in 0..n {
                client
                    .publish(
                        &topic,
                        QoS::AtLeastOnce,
                        false,
                        reading(i).to_string().into_bytes(),
                    )
                    .expect("publish");
            }
            let rate = wait_kept(port, &probe, "mqtt", n, start);
            let _ = client.disconnect();
            println!("{rate:.0}");
        }
        other => {
            eprintln!("ingest_load: {other}: http or mqtt");
            std::process::exit(2);
        }
    }
}
