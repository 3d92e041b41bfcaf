//! The output flags of `sonde tcp` and `sonde udp`: `-V`, `-f`,
//! `--logfile`, `-T`. Real `sonde serve` on loopback.

use crate::common;
use common::cli::{json, run, CLOSED};
use common::{stderr, ServerProc};
use serde_json::Value;

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
    // UDP: its rate and profile first; its sockets have no MSS or cc.
    let o = run(&["udp", "::1", "-p", &port, "-t", "1s", "-b", "2M", "-V"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.starts_with("Starting Test: protocol: UDP, 1 streams, 1400 byte blocks"),
        "{text}"
    );
    assert!(text.contains("2.00 Mbit/s (cbr) per stream"), "{text}");
    let sockets: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("] client [::1]:"))
        .collect();
    assert_eq!(sockets.len(), 1, "{text}");
    assert!(
        sockets[0].contains("sndbuf ") && !sockets[0].contains("mss"),
        "{text}"
    );
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
    let dir = common::TempDir::new("logfile");
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
