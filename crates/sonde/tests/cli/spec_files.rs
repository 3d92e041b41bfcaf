//! `sonde run FILE`: a spec written in TOML or JSON runs the same test a
//! flag would, and a mistake in the file is a usage error that says
//! where.

use crate::common;
use common::{sonde, stderr, ServerProc};
use sonde_model::{load_result, TestSpec};

fn write(name: &str, text: &str) -> common::TempFile {
    common::TempFile::new(name, text)
}

#[test]
fn a_toml_and_a_json_spec_run_as_written() {
    let server = ServerProc::start(&[]);
    let toml = format!(
        "test = \"udp\"\nhost = \"::1\"\nport = {}\ntime_s = \"1s\"\nbitrate_bps = \"2M\"\n\
         direction = \"reverse\"\ntitle = \"from a file\"\n",
        server.port
    );
    let json = format!(
        r#"{{"test": "tcp", "host": "127.0.0.1", "port": {}, "time_s": 1, "parallel": 2}}"#,
        server.port
    );
    for (name, text) in [("udp.toml", toml.as_str()), ("tcp.json", json.as_str())] {
        let path = write(name, text);
        let out = sonde()
            .args(["run", path.to_str().unwrap(), "-J"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        let r = load_result(std::str::from_utf8(&out.stdout).unwrap()).unwrap();
        let asked: TestSpec = if name.ends_with(".toml") {
            toml::from_str(text).unwrap()
        } else {
            serde_json::from_str(text).unwrap()
        };
        assert_eq!(r.spec, asked, "{name}: the result keeps the spec as asked");
        let moved = match &r.spec {
            TestSpec::Udp(_) => r.summary.reverse.as_ref().unwrap().received_packets,
            _ => r.summary.total.as_ref().unwrap().received_bytes,
        };
        assert!(moved.unwrap() > 0, "{name}: nothing measured");
    }
}

#[test]
fn a_bad_spec_file_is_a_usage_error_that_says_where() {
    let path = write("bad.toml", "test = \"tcp\"\nhost = \"::1\"\nstreams = 4\n");
    let out = sonde()
        .args(["run", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("bad.toml") && err.contains("streams") && err.contains("line 3"),
        "{err}"
    );
    let path = write(
        "invalid.toml",
        "test = \"tcp\"\nhost = \"::1\"\nparallel = 500\n",
    );
    let out = sonde()
        .args(["run", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    // A file's mistake names the file's key, not a flag.
    assert!(
        stderr(&out).contains("parallel: 500 streams") && stderr(&out).contains("line 3"),
        "{}",
        stderr(&out)
    );
}
