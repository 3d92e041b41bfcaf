//! What the command line prints, and where: `-J` on failure (one JSON
//! document saying why, in sonde's layout or iperf3's, and a non-zero
//! exit), `-V`, `-f`, `--logfile`, `-T`. Real `sonde serve` on loopback;
//! ports 17390–17399 are kept free of servers so that a connection to
//! them is refused.

mod common;
use common::schema::{assert_valid, validator};
use common::{sonde, stderr, ServerProc};
use serde_json::Value;
use std::process::Output;

/// A loopback port nothing listens on (this test's range).
const CLOSED: &str = "17399";

fn run(args: &[&str]) -> Output {
    sonde().args(args).output().expect("run sonde")
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&o.stdout),
            stderr(o)
        )
    })
}

/// sonde's failure document: valid against its schema, `kind` and a
/// message naming `needle`, and the exit code.
fn sonde_failure(args: &[&str], code: i32, kind: &str, needle: &str) -> Value {
    let o = run(args);
    assert_eq!(o.status.code(), Some(code), "{args:?}: {}", stderr(&o));
    let doc = json(&o);
    assert_valid(&validator("error-v2.schema.json"), &doc);
    assert_eq!(doc["error"]["kind"], kind, "{args:?}: {doc}");
    let message = doc["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(needle), "{args:?}: {message}");
    // stderr says the same.
    assert!(stderr(&o).contains(message), "{}", stderr(&o));
    doc
}

/// iperf3's failure document, as `iperf3 -J` prints it.
fn iperf3_failure(args: &[&str], code: i32, needle: &str) -> Value {
    let o = run(args);
    assert_eq!(o.status.code(), Some(code), "{args:?}: {}", stderr(&o));
    let doc = json(&o);
    let error = doc["error"].as_str().unwrap_or_default();
    assert!(error.contains(needle), "{args:?}: {doc}");
    assert_eq!(doc["start"]["connected"], serde_json::json!([]), "{doc}");
    assert!(doc["start"]["version"]
        .as_str()
        .unwrap()
        .starts_with("sonde "));
    assert_eq!(doc["intervals"], serde_json::json!([]));
    assert_eq!(doc["end"], serde_json::json!({}));
    doc
}

#[test]
fn a_refused_connection_is_a_json_document_in_either_layout() {
    for test in ["tcp", "udp"] {
        let base = [test, "127.0.0.1", "-p", CLOSED, "-t", "1s"];
        let doc = sonde_failure(&[&base[..], &["-J"]].concat(), 1, "unreachable", "refused");
        assert_eq!(doc["test"], test);
        assert_eq!(doc["spec"]["port"], 17399);
        iperf3_failure(&[&base[..], &["--json=iperf3"]].concat(), 1, "refused");
        iperf3_failure(
            &[&base[..], &["--json=iperf3", "-R"]].concat(),
            1,
            "refused",
        );
    }
}

#[test]
fn a_usage_error_found_by_the_check_is_a_json_document() {
    let doc = sonde_failure(
        &["tcp", "::1", "-P", "0", "-J"],
        2,
        "invalid",
        "-P/--parallel",
    );
    assert_eq!(doc["spec"]["parallel"], 0);
    iperf3_failure(&["udp", "::1", "-l", "16", "--json=iperf3"], 2, "length");
    sonde_failure(&["ping", "::1", "-i", "0s", "-J"], 2, "invalid", "interval");
    // A spec file: one it cannot read names the file, with no spec.
    let missing = std::env::temp_dir().join("sonde-no-such-spec.toml");
    let doc = sonde_failure(
        &["run", missing.to_str().unwrap(), "-J"],
        2,
        "invalid",
        "sonde-no-such-spec.toml",
    );
    assert!(doc.get("spec").is_none(), "{doc}");
    // One it can read, aimed at a closed port.
    let file = std::env::temp_dir().join(format!("sonde-cli-{}.toml", std::process::id()));
    let spec = format!("test = \"tcp\"\nhost = \"127.0.0.1\"\nport = {CLOSED}\ntime_s = 1\n");
    std::fs::write(&file, spec).unwrap();
    sonde_failure(
        &["run", file.to_str().unwrap(), "-J"],
        1,
        "unreachable",
        "refused",
    );
    iperf3_failure(
        &["run", file.to_str().unwrap(), "--json=iperf3"],
        1,
        "refused",
    );
}

#[test]
fn a_server_s_refusal_is_a_json_document() {
    let server = ServerProc::start(&["--max-duration", "2s"]);
    let port = server.port.to_string();
    sonde_failure(
        &["tcp", "::1", "-p", &port, "-t", "5s", "-J"],
        1,
        "refused",
        "max_duration",
    );
    iperf3_failure(
        &["udp", "::1", "-p", &port, "-t", "5s", "--json=iperf3"],
        1,
        "max_duration",
    );
}

#[test]
fn ctrl_c_before_the_test_began_is_a_json_document() {
    // A server that takes the connection and never answers: sonde waits
    // in the handshake until Ctrl-C.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port().to_string();
    for (flag, kind_at) in [("-J", "/error/kind"), ("--json=iperf3", "")] {
        let child = sonde()
            .args(["tcp", "127.0.0.1", "-p", &port, flag])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let o = common::interrupt_after(child, std::time::Duration::from_millis(1500));
        assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
        let doc = json(&o);
        if kind_at.is_empty() {
            assert_eq!(doc["error"], "interrupted before the test began", "{doc}");
        } else {
            assert_eq!(doc.pointer(kind_at).unwrap(), "interrupted", "{doc}");
            assert_valid(&validator("error-v2.schema.json"), &doc);
        }
    }
    // With --logfile the logs go to the file too (-vv: debug).
    let file = std::env::temp_dir().join(format!("sonde-ctrl-c-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&file);
    let child = sonde()
        .args(["tcp", "127.0.0.1", "-p", &port, "-vv", "--logfile"])
        .arg(&file)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let o = common::interrupt_after(child, std::time::Duration::from_millis(1500));
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("DEBUG") && text.contains("stopped before the test began"),
        "{text}"
    );
    assert!(
        text.contains("sonde: interrupted before the test began"),
        "{text}"
    );
    drop(silent);
}

#[test]
fn without_json_a_failure_prints_nothing_on_stdout() {
    let o = run(&["tcp", "127.0.0.1", "-p", CLOSED]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(stderr(&o).starts_with("sonde: "), "{}", stderr(&o));
}

#[test]
fn verbose_adds_the_settings_and_every_stream_s_sockets() {
    let server = ServerProc::start(&["--no-reflector"]);
    let port = server.port.to_string();
    let base = ["tcp", "::1", "-p", &port, "-t", "1s", "-P", "2"];
    let plain = run(&base);
    let verbose = run(&[&base[..], &["-V"]].concat());
    for o in [&plain, &verbose] {
        assert!(o.status.success(), "{}", stderr(o));
    }
    let (plain, verbose) = (
        String::from_utf8_lossy(&plain.stdout),
        String::from_utf8_lossy(&verbose.stdout),
    );
    assert!(!plain.contains("Starting Test"), "{plain}");
    assert!(
        verbose.starts_with("Starting Test: protocol: TCP, 2 streams, 262144 byte blocks"),
        "{verbose}"
    );
    assert!(verbose.contains("Settings in force"), "{verbose}");
    // One line per stream per end, naming the MSS and the cc.
    let sockets: Vec<&str> = verbose
        .lines()
        .filter(|l| l.contains("] client [::1]:") || l.contains("] server [::1]:"))
        .collect();
    assert_eq!(sockets.len(), 4, "{verbose}");
    assert!(sockets
        .iter()
        .all(|l| l.contains("mss ") && l.contains("cc ")));
    // The version is --version, not -V.
    let v = run(&["--version"]);
    assert!(String::from_utf8_lossy(&v.stdout).starts_with("sonde "));
}

/// Every rate in `text` ("… Mbit/s"): its number and unit.
fn rates(text: &str) -> Vec<(f64, String)> {
    let words: Vec<&str> = text.split_whitespace().collect();
    words
        .windows(2)
        .filter(|w| w[1].ends_with("/s") || w[1].ends_with("/s,"))
        .filter_map(|w| Some((w[0].parse().ok()?, w[1].trim_end_matches(',').to_string())))
        .collect()
}

#[test]
fn format_fixes_the_unit_of_every_rate() {
    let server = ServerProc::start(&["--no-reflector"]);
    let port = server.port.to_string();
    let cases = [
        ("tcp", "k", "kbit/s"),
        ("tcp", "G", "GiB/s"),
        ("udp", "m", "Mbit/s"),
        ("udp", "K", "KiB/s"),
    ];
    for (test, letter, unit) in cases {
        let mut args = vec![test, "::1", "-p", &port, "-t", "1s", "-f", letter];
        if test == "udp" {
            args.extend(["-b", "8M"]);
        }
        let o = run(&args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        let text = String::from_utf8_lossy(&o.stdout);
        // The "Connected …" line states the rate asked for, as asked.
        let measured: String = text
            .lines()
            .filter(|l| !l.starts_with("Connected"))
            .collect::<Vec<_>>()
            .join("\n");
        let found = rates(&measured);
        assert!(found.len() >= 3, "{args:?}: {text}");
        assert!(
            found.iter().all(|(_, u)| u == unit),
            "{args:?}: {found:?}\n{text}"
        );
        if test == "udp" {
            // 8 Mbit/s offered and received on loopback: in the fixed unit.
            let expect = if letter == "m" {
                8.0
            } else {
                8e6 / 8.0 / 1024.0
            };
            let last = found.last().unwrap().0;
            assert!(
                (last - expect).abs() / expect < 0.05,
                "{args:?}: {last} {unit}\n{text}"
            );
        }
    }
    let o = run(&["tcp", "::1", "-f", "x"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("'x'"), "{}", stderr(&o));
}

#[test]
fn logfile_takes_the_output_appended() {
    let server = ServerProc::start(&["--no-reflector"]);
    let port = server.port.to_string();
    let dir = std::env::temp_dir().join(format!("sonde-logfile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("out.log");
    std::fs::write(&file, "before\n").unwrap();
    let path = file.to_str().unwrap();
    let o = run(&["tcp", "::1", "-p", &port, "-t", "1s", "--logfile", path]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.starts_with("before\n"), "appended: {text}");
    assert!(
        text.contains("Connected to") && text.contains("goodput"),
        "{text}"
    );
    // JSON goes there too, after what was there.
    let o = run(&[
        "udp",
        "::1",
        "-p",
        &port,
        "-t",
        "1s",
        "-J",
        "--logfile",
        path,
    ]);
    assert!(o.status.success() && o.stdout.is_empty(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&file).unwrap();
    let doc = &text[text.find("\n{").expect("a JSON document") + 1..];
    let doc: Value = serde_json::from_str(doc).unwrap();
    assert_eq!(doc["test"], "udp");
    // A failure is written there as well (and still said on stderr).
    let o = run(&["tcp", "127.0.0.1", "-p", CLOSED, "--logfile", path]);
    assert_eq!(o.status.code(), Some(1));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.trim_end()
            .ends_with("Connection refused (os error 111)"),
        "{text}"
    );
    // A file that cannot be opened is a usage error naming it.
    let o = run(&["tcp", "::1", "--logfile", "/nonexistent-dir/x.log"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("/nonexistent-dir/x.log"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn capital_t_is_the_title() {
    let server = ServerProc::start(&["--no-reflector"]);
    let port = server.port.to_string();
    let o = run(&[
        "tcp",
        "::1",
        "-p",
        &port,
        "-t",
        "1s",
        "-T",
        "home link",
        "-J",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(json(&o)["title"], "home link");
    let o = run(&[
        "udp",
        "::1",
        "-p",
        &port,
        "-t",
        "1s",
        "-T",
        "wifi",
        "--json=iperf3",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(json(&o)["title"], "wifi");
}
