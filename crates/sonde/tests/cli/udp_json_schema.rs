//! Real `sonde udp -J` output validates against the published schema of
//! the result document (docs/schema/result-v3.schema.json), and the
//! schema is strict enough to refuse a broken document.

use crate::common;
use common::schema::{assert_rejects, assert_valid, remove, result_v3};
use common::Iperf3Server;
use common::{interrupt_after, sonde, stderr, u, ServerProc};
use serde_json::{json, Value};
use std::process::Stdio;
use std::time::Duration;

/// A successful `sonde udp HOST -p PORT ARGS -J` run, parsed; panics
/// with stderr otherwise.
fn udp_json(host: &str, port: u16, args: &[&str]) -> Value {
    let out = sonde()
        .args(["udp", host, "-p", &port.to_string()])
        .args(args)
        .arg("-J")
        .output()
        .expect("run sonde udp");
    assert!(
        out.status.success(),
        "sonde udp {host} {args:?} failed: {}",
        stderr(&out)
    );
    serde_json::from_slice(&out.stdout).expect("sonde udp -J prints JSON")
}

fn dscp_keys(counts: &Value) -> Vec<&str> {
    counts
        .as_object()
        .unwrap_or_else(|| panic!("not a DSCP count object: {counts}"))
        .keys()
        .map(String::as_str)
        .collect()
}

#[test]
fn udp_output_matches_the_schema() {
    let v = result_v3();
    let server = ServerProc::start(&[]);

    let plain = udp_json(
        "::1",
        server.port,
        &["-t", "1s", "-b", "2M", "--title", "x"],
    );
    assert_valid(&v, &plain);
    assert_eq!(plain["format_version"], 3);
    assert_eq!(plain["test"], "udp");
    assert_eq!(plain["spec"]["test"], "udp");
    assert_eq!(plain["title"], "x");
    assert_eq!(plain["env"]["peer"], "sonde");
    let fwd = &plain["summary"]["forward"];
    assert!(
        plain["summary"].get("reverse").is_none(),
        "{}",
        plain["summary"]
    );
    assert!(
        plain["summary"].get("total").is_none(),
        "{}",
        plain["summary"]
    );
    assert_eq!(
        fwd["pdr_pct"].as_f64(),
        Some(100.0),
        "loopback loses nothing: {fwd}"
    );
    assert_eq!(
        u(&fwd["sent_packets"]),
        u(&fwd["received_packets"]),
        "{fwd}"
    );
    assert!(u(&fwd["sent_packets"]) > 0, "{fwd}");
    assert_eq!(u(&fwd["lost_packets"]), 0, "{fwd}");
    // 2 Mbit/s offered, give or take the pacing of a 1 s test.
    let offered = u(&fwd["sender_throughput_bps"]);
    assert!((1_800_000..=2_200_000).contains(&offered), "{fwd}");
    assert!(fwd.get("remarks").is_none(), "nothing remarked: {fwd}");
    assert!(
        plain["intervals"][0].get("size_bytes").is_none(),
        "{}",
        plain["intervals"][0]
    );

    let bidir = udp_json(
        "127.0.0.1",
        server.port,
        &[
            "-t", "2s", "-O", "1s", "--bidir", "-P", "2", "-S", "EF", "-b", "1M",
        ],
    );
    assert_valid(&v, &bidir);
    let sum = &bidir["summary"];
    assert_eq!(u(&sum["forward"]["streams"]), 2, "{sum}");
    assert_eq!(u(&sum["reverse"]["streams"]), 2, "{sum}");
    assert!(
        dscp_keys(&sum["forward"]["dscp_received"]).contains(&"46"),
        "EF arrives as EF on loopback: {}",
        sum["forward"]["dscp_received"]
    );
    let streams = bidir["streams"].as_array().unwrap();
    assert_eq!(streams.len(), 4);
    let dirs: Vec<&Value> = streams.iter().map(|s| &s["direction"]).collect();
    assert_eq!(
        dirs,
        [
            &json!("forward"),
            &json!("forward"),
            &json!("reverse"),
            &json!("reverse")
        ],
        "bidir numbers the forward streams first"
    );
    assert_eq!(bidir["streams"][0]["client_socket"]["dscp"], 46);
    assert!(bidir["intervals"][0]["omitted"].as_bool().unwrap());
    let sums = bidir["intervals"][0]["sums"].as_array().unwrap();
    assert_eq!(sums[0]["direction"], "forward", "{sums:?}");
    assert_eq!(sums[1]["direction"], "reverse", "{sums:?}");

    let reverse = udp_json("::1", server.port, &["-t", "1s", "-R", "-S", "EF"]);
    assert_valid(&v, &reverse);
    let rev = &reverse["summary"]["reverse"];
    assert!(reverse["summary"].get("forward").is_none());
    assert_eq!(
        u(&rev["sent_packets"]),
        u(&rev["received_packets"]),
        "{rev}"
    );
    assert!(dscp_keys(&rev["dscp_sent"]).contains(&"46"), "{rev}");
    assert_eq!(reverse["streams"][0]["server_socket"]["dscp"], 46);

    let video = udp_json(
        "::1",
        server.port,
        &[
            "-t",
            "1s",
            "--profile",
            "video",
            "-b",
            "2M",
            "--clock-synced",
        ],
    );
    assert_valid(&v, &video);
    assert_eq!(video["spec"]["profile"], "video:gop=12,fps=25");
    assert_eq!(video["spec"]["clock_synced"], true);
    let classes: Vec<u64> = video["summary"]["forward"]["classes"]
        .as_array()
        .expect("classes")
        .iter()
        .map(|c| u(&c["dscp"]))
        .collect();
    assert_eq!(classes, [10, 12, 14], "I/P/B frames as AF11/AF12/AF13");
    let frames: Vec<&str> = video["summary"]["forward"]["frames"]
        .as_array()
        .expect("frames")
        .iter()
        .map(|f| f["frame"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(frames, ["I", "P", "B"], "loss per frame type");
    assert_eq!(video["summary"]["forward"]["delay"]["clock_synced"], true);
}

/// A test stopped with Ctrl-C still writes a valid document, marked.
#[test]
fn an_interrupted_udp_result_matches_the_schema() {
    let v = result_v3();
    let server = ServerProc::start(&[]);
    let child = sonde()
        .args([
            "udp",
            "::1",
            "-p",
            &server.port.to_string(),
            "-t",
            "10s",
            "-J",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start sonde udp");
    let out = interrupt_after(child, Duration::from_millis(1500));
    let doc: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
    assert_valid(&v, &doc);
    assert_eq!(doc["interrupted"], true);
    let ran = doc["duration_s"].as_f64().unwrap();
    assert!(ran > 0.0 && ran < 10.0, "{ran}");
}

/// Against a stock iperf3 server the figures it does not count are
/// absent (not 0), and the document is still valid.
#[test]
fn a_udp_result_with_unknown_figures_matches_the_schema() {
    let v = result_v3();
    let iperf3 = Iperf3Server::start();
    let doc = udp_json("::1", iperf3.port, &["-t", "1s"]);
    assert_valid(&v, &doc);
    assert_eq!(doc["env"]["peer"], "iperf3");
    let fwd = &doc["summary"]["forward"];
    assert!(u(&fwd["sent_packets"]) > 0, "{fwd}");
    for unknown in ["duplicates", "reordered", "ipdv", "delay", "dscp_received"] {
        assert!(fwd.get(unknown).is_none(), "{unknown}: {fwd}");
    }
}

#[test]
fn the_udp_schema_rejects_a_broken_document() {
    let v = result_v3();
    let server = ServerProc::start(&[]);
    let doc = udp_json("::1", server.port, &["-t", "1s", "-b", "2M"]);
    assert_valid(&v, &doc);

    assert_rejects(&v, &doc, "a string loss", |d| {
        d["summary"]["forward"]["loss_pct"] = json!("none");
    });
    assert_rejects(&v, &doc, "a DSCP key above 63", |d| {
        d["streams"][0]["dscp_sent"]["99"] = json!(1);
    });
    assert_rejects(&v, &doc, "a DSCP key with a leading zero", |d| {
        d["summary"]["forward"]["dscp_received"]["046"] = json!(1);
    });
    assert_rejects(&v, &doc, "a percentage above 100", |d| {
        d["summary"]["forward"]["pdr_pct"] = json!(100.5);
    });
    assert_rejects(&v, &doc, "a fractional packet count", |d| {
        d["summary"]["forward"]["sent_packets"] = json!(10.5);
    });
    assert_rejects(&v, &doc, "an unknown field in a direction", |d| {
        d["summary"]["forward"]["jitter_us"] = json!(1);
    });
    assert_rejects(&v, &doc, "format 1's packet counts", |d| {
        d["summary"]["forward"]["sent"] = json!(1);
    });
    assert_rejects(&v, &doc, "format 1's remarking prose", |d| {
        d["summary"]["forward"]["remarking"] = json!([]);
    });
    assert_rejects(&v, &doc, "format 1's offered rate", |d| {
        d["streams"][0]["offered_bps"] = json!(2_000_000);
    });
    assert_rejects(&v, &doc, "an unknown field in a stream", |d| {
        d["streams"][0]["extra"] = json!(true);
    });
    // Jitter of fewer than two packets, or an interval nothing was due
    // in, is unknown and absent; a whole stream's counts are not.
    assert_rejects(&v, &doc, "a stream without its received count", |d| {
        remove(&mut d["streams"][0], "received_packets");
    });
    assert_rejects(&v, &doc, "an interval sum with a count that is text", |d| {
        d["intervals"][0]["sums"][0]["sent_packets"] = json!("many");
    });
    assert_rejects(&v, &doc, "an interval stream without its number", |d| {
        remove(&mut d["intervals"][0]["streams"][0], "stream");
    });
    assert_rejects(&v, &doc, "a summary without its directions", |d| {
        d["summary"] = json!({});
    });
    assert_rejects(&v, &doc, "a reverse summary in a forward test", |d| {
        d["summary"]["reverse"] = d["summary"]["forward"].clone();
    });
    assert_rejects(&v, &doc, "a forward summary labelled reverse", |d| {
        d["summary"]["forward"]["direction"] = json!("reverse");
    });
    assert_rejects(&v, &doc, "a TCP total in a UDP result", |d| {
        d["summary"]["total"] = d["summary"]["forward"].clone();
    });
    assert_rejects(&v, &doc, "an unknown profile", |d| {
        d["spec"]["profile"] = json!("turbo");
    });
    assert_rejects(&v, &doc, "a TCP test name", |d| {
        d["test"] = json!("tcp");
    });
    assert_rejects(&v, &doc, "an MSS on a UDP socket", |d| {
        d["streams"][0]["client_socket"]["mss_bytes"] = json!(1440);
    });
    assert_rejects(&v, &doc, "a remark with a DSCP of 64", |d| {
        d["summary"]["forward"]["remarks"] = json!([{"sent": 46, "received": 64, "packets": 1}]);
    });
    assert_rejects(&v, &doc, "a class without its loss", |d| {
        remove(&mut d["summary"]["forward"]["classes"][0], "loss_pct");
    });

    let bidir = udp_json("127.0.0.1", server.port, &["-t", "1s", "--bidir"]);
    assert_valid(&v, &bidir);
    assert_rejects(&v, &bidir, "bidir without a reverse summary", |d| {
        remove(&mut d["summary"], "reverse");
    });
    assert_rejects(&v, &bidir, "bidir without a forward summary", |d| {
        remove(&mut d["summary"], "forward");
    });
}
