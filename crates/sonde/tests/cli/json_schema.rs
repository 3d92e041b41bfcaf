//! Real `sonde tcp -J` output validates against the published schema of
//! the result document (docs/schema/result-v3.schema.json), and the
//! schema is strict enough to refuse a broken document.

use crate::common;
use common::schema::{assert_rejects, assert_valid, remove, result_v3};
use common::Iperf3Server;
use common::{tcp_json, u, ServerProc};
use serde_json::{json, Value};

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn tcp_output_matches_the_schema() {
    let v = result_v3();
    let server = ServerProc::start(&[]);

    let plain = tcp_json("::1", server.port, &["-t", "1s", "--title", "schema check"]);
    assert_valid(&v, &plain);
    for key in [
        "id",
        "format_version",
        "sonde_version",
        "test",
        "title",
        "spec",
        "env",
        "start",
        "duration_s",
        "interrupted",
        "intervals",
        "streams",
        "summary",
    ] {
        assert!(plain.get(key).is_some(), "top-level key {key}");
    }
    assert_eq!(plain["format_version"], 3);
    assert_eq!(plain["test"], "tcp");
    assert_eq!(plain["spec"]["test"], "tcp");
    assert_eq!(plain["title"], "schema check");
    assert_eq!(plain["env"]["peer"], "sonde");
    assert_eq!(plain["interrupted"], false);
    let sum = &plain["summary"];
    assert!(sum.get("reverse").is_none(), "{sum}");
    assert!(u(&sum["forward"]["received_bytes"]) > 0, "{sum}");
    assert_eq!(
        sum["total"]["received_bytes"], sum["forward"]["received_bytes"],
        "one direction: the total is that direction: {sum}"
    );
    assert_eq!(
        sum["total"]["throughput_bps"],
        sum["forward"]["throughput_bps"]
    );
    // A sonde server reports TCP_INFO: the sender's RTT is known.
    assert!(
        num(&plain["streams"][0]["srtt_ms"]) > 0.0,
        "{}",
        plain["streams"][0]
    );
    assert!(plain["intervals"][0]["streams"][0]["direction"] == "forward");

    let reverse = tcp_json("::1", server.port, &["-t", "1s", "-R"]);
    assert_valid(&v, &reverse);
    let sum = &reverse["summary"];
    assert!(sum.get("forward").is_none(), "{sum}");
    assert!(u(&sum["reverse"]["received_bytes"]) > 0, "{sum}");
    assert_eq!(reverse["streams"][0]["direction"], "reverse");
    assert_eq!(reverse["intervals"][0]["sums"][0]["direction"], "reverse");

    let bidir = tcp_json(
        "127.0.0.1",
        server.port,
        &[
            "-t", "2s", "-O", "1s", "--bidir", "-P", "2", "-S", "AF41", "-w", "512K",
        ],
    );
    assert_valid(&v, &bidir);
    assert_eq!(bidir["streams"].as_array().unwrap().len(), 4);
    assert_eq!(bidir["streams"][0]["client_socket"]["dscp"], 34);
    // Linux doubles the buffer asked for; the result shows what was granted.
    assert_eq!(
        bidir["streams"][0]["client_socket"]["sndbuf_bytes"],
        1024 * 1024
    );
    assert!(bidir["intervals"][0]["omitted"].as_bool().unwrap());
    assert!(
        !bidir["intervals"].as_array().unwrap().last().unwrap()["omitted"]
            .as_bool()
            .unwrap()
    );
    let sum = &bidir["summary"];
    assert_eq!(u(&sum["forward"]["streams"]), 2, "{sum}");
    assert_eq!(u(&sum["reverse"]["streams"]), 2, "{sum}");
    assert_eq!(
        u(&sum["total"]["received_bytes"]),
        u(&sum["forward"]["received_bytes"]) + u(&sum["reverse"]["received_bytes"]),
        "{sum}"
    );
    let dirs: Vec<&Value> = bidir["intervals"][0]["sums"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["direction"])
        .collect();
    assert_eq!(dirs, [&json!("forward"), &json!("reverse")]);
}

/// Against a stock iperf3 server the figures it does not report are
/// absent, and the document is still valid.
#[test]
fn a_result_with_unknown_figures_matches_the_schema() {
    let v = result_v3();
    let iperf3 = Iperf3Server::start();
    let fwd = tcp_json("::1", iperf3.port, &["-t", "1s"]);
    assert_valid(&v, &fwd);
    assert_eq!(fwd["env"]["peer"], "iperf3");
    assert_eq!(fwd["env"]["server"]["sonde_version"], "iperf3");
    // iperf3 reports its receiver only at the end: no interval received_bytes.
    assert!(
        fwd["intervals"][0]["streams"][0]
            .get("received_bytes")
            .is_none(),
        "{}",
        fwd["intervals"][0]
    );
    assert!(u(&fwd["summary"]["forward"]["received_bytes"]) > 0);

    let rev = tcp_json("::1", iperf3.port, &["-t", "1s", "-R"]);
    assert_valid(&v, &rev);
    // The iperf3 server sends and does not report its RTT or window.
    let stream = &rev["streams"][0];
    for unknown in ["srtt_ms", "min_rtt_ms", "cwnd_bytes", "max_cwnd_bytes"] {
        assert!(stream.get(unknown).is_none(), "{unknown}: {stream}");
    }
}

#[test]
fn the_schema_rejects_a_broken_document() {
    let v = result_v3();
    let server = ServerProc::start(&[]);
    let doc = tcp_json("::1", server.port, &["-t", "1s"]);
    assert_valid(&v, &doc);

    assert_rejects(&v, &doc, "a string rate", |d| {
        d["summary"]["total"]["throughput_bps"] = json!("fast");
    });
    assert_rejects(&v, &doc, "a fractional byte count", |d| {
        d["summary"]["forward"]["received_bytes"] = json!(1.5);
    });
    assert_rejects(&v, &doc, "a TCP result without its total", |d| {
        remove(&mut d["summary"], "total");
    });
    assert_rejects(&v, &doc, "a TCP result without its streams", |d| {
        remove(d, "streams");
    });
    assert_rejects(&v, &doc, "a result without its env", |d| remove(d, "env"));
    assert_rejects(&v, &doc, "a result without its id", |d| remove(d, "id"));
    assert_rejects(&v, &doc, "an id that is not a UUID", |d| {
        d["id"] = json!("result-1");
    });
    assert_rejects(&v, &doc, "a start that is not RFC 3339", |d| {
        d["start"] = json!("23/11/2026 16:35");
    });
    assert_rejects(&v, &doc, "format 1", |d| d["format_version"] = json!(1));
    assert_rejects(&v, &doc, "an unknown top-level key", |d| {
        d["latency"] = json!(null);
    });
    assert_rejects(&v, &doc, "format 1's summary bytes", |d| {
        d["summary"]["forward"]["bytes"] = json!(1);
    });
    assert_rejects(&v, &doc, "format 1's stream rtt_ms as a number", |d| {
        d["streams"][0]["rtt_ms"] = json!(0.1);
    });
    assert_rejects(&v, &doc, "an unknown key in a stream", |d| {
        d["streams"][0]["extra"] = json!(true);
    });
    assert_rejects(&v, &doc, "an unknown key in a socket", |d| {
        d["streams"][0]["client_socket"]["tos"] = json!(0);
    });
    assert_rejects(&v, &doc, "an unknown key in an interval", |d| {
        d["intervals"][0]["sum"] = json!({});
    });
    assert_rejects(&v, &doc, "an unknown key in the spec", |d| {
        d["spec"]["paralel"] = json!(2);
    });
    assert_rejects(&v, &doc, "a spec of another test", |d| {
        d["spec"]["test"] = json!("udp");
    });
    assert_rejects(&v, &doc, "a reverse summary in a forward test", |d| {
        d["summary"]["reverse"] = d["summary"]["forward"].clone();
    });
    assert_rejects(&v, &doc, "a stream without its socket", |d| {
        remove(&mut d["streams"][0], "server_socket");
    });
    assert_rejects(&v, &doc, "ping's series in a TCP result", |d| {
        d["series"] = json!([{"size_bytes": 56}]);
    });
    assert_rejects(&v, &doc, "a latency section nobody asked for", |d| {
        d["summary"]["latency"] = json!({
            "method": "icmp-raw",
            "idle": {"sent_packets": 1, "received_packets": 1, "lost_packets": 0,
                     "loss_pct": 0.0, "duplicates": 0, "reordered": 0},
            "loaded": {"sent_packets": 1, "received_packets": 1, "lost_packets": 0,
                       "loss_pct": 0.0, "duplicates": 0, "reordered": 0},
            "increase_ms": null
        });
    });

    let bidir = tcp_json("::1", server.port, &["-t", "1s", "--bidir"]);
    assert_valid(&v, &bidir);
    assert_rejects(&v, &bidir, "bidir without a reverse summary", |d| {
        remove(&mut d["summary"], "reverse");
    });
    assert_rejects(&v, &bidir, "bidir without a forward summary", |d| {
        remove(&mut d["summary"], "forward");
    });
}
