//! `sonde overhead` on the command line: the studies' arithmetic, a real
//! result corrected for a stack, and bad stacks named (exit 2).

use crate::common;
use common::{sonde, stderr, ServerProc};

fn overhead(args: &[&str]) -> std::process::Output {
    sonde().arg("overhead").args(args).output().unwrap()
}

#[test]
fn seed_000s_tunnels_come_out_at_8_6_percent() {
    let out = overhead(&[
        "ipv6/tcp-ts",
        "tunnel:56/ipv6/tcp-ts",
        "tunnel:56/tunnel:56/ipv6/tcp-ts",
        "--payloads",
        "1230",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let row: Vec<&str> = text.lines().last().unwrap().split_whitespace().collect();
    assert_eq!(
        row,
        ["1230", "1302", "1358", "+4.3%", "1414", "+8.6%"],
        "{text}"
    );
    // One stack: each layer's bytes, as JSON.
    let out = overhead(&[
        "l1/eth/ipv4/esp-tunnel:aes-cbc+sha1/ipv6/tcp-ts",
        "--payloads",
        "1230",
        "-J",
    ]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let p = &doc[0]["payloads"][0];
    assert_eq!(p["wire_bytes"], 1230 + 32 + 40 + 46 + 20 + 18 + 20);
    assert_eq!(p["layers"][3]["layer"], "esp-tunnel:aes-cbc+sha1");
    assert_eq!(p["layers"][3]["bytes"], 46);
}

#[test]
fn a_real_result_is_corrected_for_the_stack_assumed() {
    let server = ServerProc::start(&["--no-reflector"]);
    let out = sonde()
        .args(["udp", "::1", "-p", &server.port.to_string()])
        .args(["-b", "10M", "-t", "1s", "-l", "1230", "-J"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let dir = common::TempDir::new("ovh");
    let file = dir.join("udp.json");
    std::fs::write(&file, &out.stdout).unwrap();
    let measured: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let goodput = measured["summary"]["forward"]["throughput_bps"]
        .as_f64()
        .unwrap();
    let out = overhead(&[
        "--correct-for",
        "tunnel:56/tunnel:56/ipv6/udp",
        "--file",
        file.to_str().unwrap(),
        "-J",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["untunnelled"], "ipv6/udp");
    let row = &doc["rows"][0];
    // 1230 + 8 + 40 = 1278 plain, 112 more through two tunnels.
    let factor = 1390.0 / 1278.0;
    assert!(
        (row["factor"].as_f64().unwrap() - factor).abs() < 1e-9,
        "{row}"
    );
    let corrected = row["corrected_bps"].as_f64().unwrap();
    assert!(
        (corrected - (goodput * factor).round()).abs() < 1.0,
        "{row}"
    );
    // The text names the stack and the untunnelled packet it compares with.
    let out = overhead(&[
        "--correct-for",
        "tunnel:56/tunnel:56/ipv6/udp",
        "--file",
        file.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("corrected for tunnel:56/tunnel:56/ipv6/udp") && text.contains("1.0876"),
        "{text}"
    );
    // The same on a live run's summary, per direction measured.
    let out = sonde()
        .args(["udp", "::1", "-p", &server.port.to_string()])
        .args(["-b", "10M", "-t", "1s", "-l", "1230", "--bidir"])
        .args(["--correct-for", "tunnel:56/tunnel:56/ipv6/udp"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", stderr(&out));
    for dir in ["client -> server", "server -> client"] {
        let line = text
            .lines()
            .find(|l| l.starts_with("corrected for") && l.contains(dir))
            .unwrap_or_else(|| panic!("no {dir} line in {text}"));
        assert!(line.contains("×1.0876 over ipv6/udp at 1230 B"), "{line}");
    }
    let out = sonde()
        .args(["tcp", "::1", "-p", &server.port.to_string()])
        .args(["--correct-for", "ipv6/tcpp"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--correct-for: stack 'ipv6/tcpp': part 2"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn bad_input_is_a_usage_error_that_names_it() {
    for (args, needle) in [
        (&["eth/ipv6/udpp"][..], "part 3 'udpp'"),
        (&["esp-tunnel:aes-cbc+sha1/tcp"][..], "inner IP packet"),
        (&[][..], "give one or more STACKs"),
        (
            &["--correct-for", "ipv6/udp", "--file", "/nonexistent.json"][..],
            "/nonexistent.json",
        ),
    ] {
        let out = overhead(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn a_stack_above_the_mtu_it_is_told_is_named() {
    // 000's double tunnel at 1230 B of payload is a 1414-byte packet: above
    // a 1400-byte MTU (the lab path `sonde trace --mtu` measures), where
    // the single tunnel's 1358 fits.
    let out = overhead(&[
        "ipv6/tcp-ts",
        "tunnel:56/ipv6/tcp-ts",
        "l1/eth/tunnel:56/tunnel:56/ipv6/tcp-ts",
        "--payloads",
        "1230",
        "--mtu",
        "1400",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("l1/eth/tunnel:56/tunnel:56/ipv6/tcp-ts: above the MTU of 1400 B at payload 1230 B (1414 B of packet)"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let out = overhead(&["ipv6/udp", "--payloads", "1352,1353", "--mtu", "1400", "-J"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let over: Vec<bool> = doc[0]["payloads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["exceeds_mtu"].as_bool().unwrap())
        .collect();
    // 1352 + 48 = 1400 fits; one byte more does not.
    assert_eq!(over, [false, true]);
}

#[test]
fn the_mtu_is_told_or_measured_never_both() {
    // Told and measured at once: a usage error naming both, before any
    // probe is sent.
    let out = overhead(&["ipv6/udp", "--mtu", "1400", "--path-mtu", "::1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("'--mtu <BYTES>' cannot be used with '--path-mtu <HOST>'"),
        "{}",
        stderr(&out)
    );
    // A target the trace cannot aim at is its error, under the flag.
    let out = overhead(&["ipv6/udp", "--path-mtu", "::1", "-4"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("--path-mtu ::1: '::1' has no IPv4 address"),
        "{}",
        stderr(&out)
    );
}
