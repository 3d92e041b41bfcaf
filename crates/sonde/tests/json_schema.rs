//! Real `sonde tcp -J` output validates against the published schema.

mod common;
use common::schema::{assert_valid, validator};
use common::{tcp_json, ServerProc};

fn schema() -> jsonschema::Validator {
    validator("tcp-result-v1.schema.json")
}

#[test]
fn output_matches_the_schema() {
    let v = schema();
    let server = ServerProc::start(&[]);
    let plain = tcp_json("::1", server.port, &["-t", "1s", "--title", "schema check"]);
    assert_valid(&v, &plain);
    let bidir = tcp_json(
        "127.0.0.1",
        server.port,
        &[
            "-t", "2s", "-O", "1s", "--bidir", "-P", "2", "-S", "AF41", "-w", "512K",
        ],
    );
    assert_valid(&v, &bidir);
    assert_eq!(bidir["streams"][0]["client_socket"]["dscp"], 34);
    // Linux doubles the buffer asked for; the result shows what was granted.
    assert_eq!(
        bidir["streams"][0]["client_socket"]["sndbuf_bytes"],
        1024 * 1024
    );
    assert!(bidir["intervals"][0]["omitted"].as_bool().unwrap());
    for key in [
        "sonde_version",
        "test",
        "spec",
        "env",
        "start",
        "duration_s",
        "intervals",
        "streams",
        "summary",
    ] {
        assert!(plain.get(key).is_some(), "top-level key {key}");
    }
}

#[test]
fn the_schema_rejects_a_broken_document() {
    let v = schema();
    let server = ServerProc::start(&[]);
    let mut doc = tcp_json("::1", server.port, &["-t", "1s"]);
    doc["summary"]["throughput_bps"] = serde_json::json!("fast");
    assert!(
        v.iter_errors(&doc).next().is_some(),
        "a string rate must fail validation"
    );
    let mut doc2 = tcp_json("::1", server.port, &["-t", "1s", "--bidir"]);
    doc2["summary"].as_object_mut().unwrap().remove("reverse");
    assert!(
        v.iter_errors(&doc2).next().is_some(),
        "bidir without a reverse summary must fail"
    );
}
