//! Real `sonde udp -J` output validates against the published schema,
//! and the schema is strict enough to refuse a broken document.

mod common;
use common::schema::{assert_valid, validator};
use common::{sonde, stderr, u, ServerProc};
use serde_json::{json, Value};

fn schema() -> jsonschema::Validator {
    validator("udp-result-v1.schema.json")
}

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

/// `mutate` applied to a copy of `doc` must make it invalid.
fn assert_rejects(
    v: &jsonschema::Validator,
    doc: &Value,
    why: &str,
    mutate: impl FnOnce(&mut Value),
) {
    let mut broken = doc.clone();
    mutate(&mut broken);
    assert_ne!(&broken, doc, "{why}: the mutation changed nothing");
    assert!(
        v.iter_errors(&broken).next().is_some(),
        "{why}: the schema accepted it"
    );
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
    let v = schema();
    let server = ServerProc::start(&[]);

    let plain = udp_json(
        "::1",
        server.port,
        &["-t", "1s", "-b", "2M", "--title", "x"],
    );
    assert_valid(&v, &plain);
    assert_eq!(plain["test"], "udp");
    assert_eq!(plain["title"], "x");
    let fwd = &plain["summary"]["forward"];
    assert!(
        plain["summary"].get("reverse").is_none(),
        "{}",
        plain["summary"]
    );
    assert_eq!(
        fwd["pdr_pct"].as_f64(),
        Some(100.0),
        "loopback loses nothing: {fwd}"
    );
    assert_eq!(u(&fwd["sent"]), u(&fwd["received"]), "{fwd}");
    assert!(u(&fwd["sent"]) > 0, "{fwd}");

    let bidir = udp_json(
        "127.0.0.1",
        server.port,
        &[
            "-t", "2s", "-O", "1s", "--bidir", "-P", "2", "-S", "EF", "-b", "1M",
        ],
    );
    assert_valid(&v, &bidir);
    let sum = &bidir["summary"];
    assert_eq!(sum["forward"]["direction"], "forward", "{sum}");
    assert_eq!(sum["reverse"]["direction"], "reverse", "{sum}");
    assert_eq!(u(&sum["forward"]["streams"]), 2);
    assert_eq!(u(&sum["reverse"]["streams"]), 2);
    assert!(
        dscp_keys(&sum["forward"]["dscp_received"]).contains(&"46"),
        "EF arrives as EF on loopback: {}",
        sum["forward"]["dscp_received"]
    );
    assert_eq!(bidir["streams"].as_array().unwrap().len(), 4);
    assert_eq!(bidir["streams"][0]["client_socket"]["dscp"], 46);
    assert!(bidir["intervals"][0]["omitted"].as_bool().unwrap());

    let video = udp_json(
        "::1",
        server.port,
        &["-t", "1s", "--profile", "video", "-b", "2M"],
    );
    assert_valid(&v, &video);
    assert_eq!(video["spec"]["profile"], "video:gop=12,fps=25");
    let classes: Vec<u64> = video["summary"]["forward"]["classes"]
        .as_array()
        .expect("classes")
        .iter()
        .map(|c| u(&c["dscp"]))
        .collect();
    assert_eq!(classes, [10, 12, 14], "I/P/B frames as AF11/AF12/AF13");
}

#[test]
fn the_udp_schema_rejects_a_broken_document() {
    let v = schema();
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
    // The flattened counts are closed too (unevaluatedProperties), and
    // their fields are required where they are flattened.
    assert_rejects(&v, &doc, "an unknown field in a direction", |d| {
        d["summary"]["forward"]["jitter_us"] = json!(1);
    });
    assert_rejects(&v, &doc, "an unknown field in a stream", |d| {
        d["streams"][0]["extra"] = json!(true);
    });
    assert_rejects(&v, &doc, "a stream without its jitter", |d| {
        d["streams"][0].as_object_mut().unwrap().remove("jitter_ms");
    });
    assert_rejects(&v, &doc, "an interval without its dscp counts", |d| {
        d["intervals"][0]["sums"][0]
            .as_object_mut()
            .unwrap()
            .remove("dscp_sent");
    });
    assert_rejects(&v, &doc, "a reverse summary in a forward test", |d| {
        let mut r = d["summary"]["forward"].clone();
        r["direction"] = json!("reverse");
        d["summary"]["reverse"] = r;
    });
    assert_rejects(&v, &doc, "a forward summary labelled reverse", |d| {
        d["summary"]["forward"]["direction"] = json!("reverse");
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

    let bidir = udp_json("127.0.0.1", server.port, &["-t", "1s", "--bidir"]);
    assert_valid(&v, &bidir);
    assert_rejects(&v, &bidir, "bidir without a reverse summary", |d| {
        d["summary"].as_object_mut().unwrap().remove("reverse");
    });
    assert_rejects(&v, &bidir, "bidir without a forward summary", |d| {
        d["summary"].as_object_mut().unwrap().remove("forward");
    });
}
