//! STAMP (RFC 8762) against an implementation sonde did not write:
//! stamp-suite 1.0.0 (scripts/rust-tools.sh installs it). Its sender
//! against sonde's reflector and sonde's sender against its reflector,
//! unauthenticated and authenticated (HMAC-SHA-256, one key file), each
//! field of the answers checked: sequence numbers, timestamps, the TTL
//! the request arrived with, the error estimate; a wrong key gets no
//! answer counted; and RFC 8972's Class of Service TLV, each side asking
//! the other.

use crate::common;
use common::{sonde, ServerProc};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds from the NTP epoch (1900) to the Unix one.
const NTP_TO_UNIX: u64 = 2_208_988_800;

fn have_stamp_suite() -> bool {
    common::tool_present("stamp-suite", &["--version"])
}

/// A key file (hex, 32 bytes) readable by its owner only, as
/// stamp-suite requires.
fn key_file(dir: &Path, name: &str, byte: u8) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("{byte:02x}").repeat(32)).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o400)).unwrap();
    path
}

/// A UDP port free on ::1 now.
fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("[::1]:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One `seq=N rtt=…ms ttl=T reflector_recv_ts=A reflector_send_ts=B` line
/// of stamp-suite's `-R`.
struct Reply {
    seq: u64,
    ttl: u64,
    received: u64,
    sent: u64,
}

fn replies(stderr: &str) -> Vec<Reply> {
    stderr
        .lines()
        .filter(|l| l.starts_with("seq="))
        .map(|l| {
            let field = |k: &str| -> u64 {
                l.split_whitespace()
                    .find_map(|w| w.strip_prefix(k)?.strip_prefix('='))
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| panic!("no {k} in {l}"))
            };
            Reply {
                seq: field("seq"),
                ttl: field("ttl"),
                received: field("reflector_recv_ts"),
                sent: field("reflector_send_ts"),
            }
        })
        .collect()
}

/// stamp-suite's sender toward `port`: its summary and its replies.
fn stamp_sender(port: u16, key: Option<&Path>) -> (Value, Vec<Reply>) {
    let mut cmd = Command::new("stamp-suite");
    cmd.args(["-r", "::1", "-S", "::1", "-p", &port.to_string()])
        .args(["-c", "10", "-d", "20", "-R"])
        .args(["--output-format", "json", "--log-format", "json"]);
    if let Some(k) = key {
        cmd.args(["-A", "A", "--hmac-key-file"]).arg(k);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    let summary = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "summary")
        .unwrap_or_else(|| panic!("no summary: {}", String::from_utf8_lossy(&out.stdout)));
    (summary, replies(&common::stderr(&out)))
}

/// stamp-suite's reflector on `port` of ::1, quiet (to be spawned).
fn stamp_reflector(port: u16) -> Command {
    let mut cmd = Command::new("stamp-suite");
    cmd.args(["-i", "-S", "::1", "-o", &port.to_string()])
        .args(["--log-format", "json"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    cmd
}

/// NTP time (32.32 fixed point) as seconds since the Unix epoch.
fn unix_s(ntp: u64) -> f64 {
    (ntp >> 32) as f64 - NTP_TO_UNIX as f64 + (ntp & 0xffff_ffff) as f64 / 4_294_967_296.0
}

#[test]
fn stamp_suites_sender_is_answered_by_sondes_reflector() {
    if !have_stamp_suite() {
        return;
    }
    let dir = common::TempDir::new("stamp-interop");
    let key = key_file(&dir, "stamp.key", 0x5a);
    for authenticated in [false, true] {
        let mut args = vec!["--reflector-port", "0"];
        if authenticated {
            args.extend(["--reflector-key-file", key.to_str().unwrap()]);
        }
        let server = ServerProc::start(&args);
        let port = server.reflector_port();
        let before = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        let (summary, replies) = stamp_sender(port, authenticated.then_some(key.as_path()));
        let after = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        assert_eq!(summary["packets_sent"], 10, "{summary}");
        assert_eq!(summary["packets_received"], 10, "{summary}");
        // sonde's reflector numbers its answers itself (stateless: as the
        // sender's), 0 to 9.
        assert_eq!(summary["measurements"]["last_reflector_sequence"], 9);
        assert_eq!(summary["measurements"]["duplicate_replies"], 0);
        // Its error estimate: not synchronized, NTP format.
        let e = &summary["owd"]["clock_quality"]["last_reflector"];
        assert_eq!(
            (e["synchronized"].as_bool(), e["format"].as_str()),
            (Some(false), Some("NTP")),
            "{e}"
        );
        assert!(e["multiplier"].as_u64().unwrap() > 0, "{e}");
        assert_eq!(summary["owd"]["samples"], 10, "{summary}");
        assert_eq!(replies.len(), 10);
        for (i, r) in replies.iter().enumerate() {
            assert_eq!(r.seq, i as u64, "the sender's sequence number echoed");
            // stamp-suite sends with TTL 255 (RFC 5082's GTSM, its only
            // value); on loopback it arrives so.
            assert_eq!(r.ttl, 255, "the TTL the request arrived with");
            assert!(r.received <= r.sent, "received after it was answered");
            let at = unix_s(r.received);
            assert!(
                (before - 1.0..=after + 1.0).contains(&at),
                "reflector time {at} outside {before}..{after}"
            );
        }
    }
    // A wrong key: sonde answers nothing that counts.
    let server = ServerProc::start(&[
        "--reflector-port",
        "0",
        "--reflector-key-file",
        key.to_str().unwrap(),
    ]);
    let wrong = key_file(&dir, "wrong.key", 0xa5);
    let (summary, _) = stamp_sender(server.reflector_port(), Some(&wrong));
    assert_eq!(summary["packets_received"], 0, "{summary}");
}

#[test]
fn sondes_sender_is_answered_by_stamp_suites_reflector() {
    if !have_stamp_suite() {
        return;
    }
    let dir = common::TempDir::new("stamp-interop-sender");
    let key = key_file(&dir, "stamp.key", 0x3c);
    for authenticated in [false, true] {
        let port = free_udp_port();
        let mut reflector = stamp_reflector(port);
        if authenticated {
            reflector.args(["-A", "A", "--hmac-key-file"]).arg(&key);
        }
        let mut reflector = reflector.spawn().unwrap();
        let ping = |key: Option<&Path>| -> Value {
            let mut ping = sonde();
            ping.args(["ping", "::1", "--proto", "udp", "-p", &port.to_string()])
                .args(["-c", "10", "-i", "20ms", "-J"]);
            if let Some(k) = key {
                ping.arg("--key-file").arg(k);
            }
            let out = ping.output().unwrap();
            serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
        };
        let sonde_key = authenticated.then_some(key.as_path());
        // Until it answers (it binds within a moment of starting).
        let mut doc = Value::Null;
        for _ in 0..50 {
            doc = ping(sonde_key);
            if doc["summary"]["round_trip"]["received_packets"].as_u64() > Some(0) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        // The same reflector, answering, takes no unauthenticated packet
        // that sonde counts.
        let unkeyed = authenticated.then(|| ping(None));
        let _ = reflector.kill();
        let _ = reflector.wait();
        if let Some(unkeyed) = unkeyed {
            assert_eq!(
                unkeyed["summary"]["round_trip"]["received_packets"], 0,
                "{unkeyed}"
            );
        }
        let rt = &doc["summary"]["round_trip"];
        let method = if authenticated {
            "stamp-authenticated"
        } else {
            "stamp"
        };
        assert_eq!(doc["env"]["method"], method, "{doc}");
        assert_eq!(rt["sent_packets"], 10, "{doc}");
        assert_eq!(rt["received_packets"], 10, "{doc}");
        assert_eq!(
            (rt["duplicates"].as_u64(), rt["reordered"].as_u64()),
            (Some(0), Some(0))
        );
        // The reflector's two timestamps: its dwell is positive, and the
        // two legs add up to the round trip (which leaves the dwell out,
        // as RFC 8762 computes it).
        let s = &doc["series"][0];
        let ms = |v: &Value| v.as_f64().unwrap();
        let (rtt, fwd, back, dwell) = (
            ms(&s["rtt_ms"]["avg"]),
            ms(&s["one_way"]["forward_ms"]["avg"]),
            ms(&s["one_way"]["backward_ms"]["avg"]),
            ms(&s["one_way"]["dwell_ms"]["avg"]),
        );
        assert!(dwell > 0.0 && dwell < 50.0, "dwell {dwell} ms");
        assert!(
            (fwd + back - rtt).abs() < 0.001 + rtt * 0.01,
            "{fwd} + {back} against {rtt} ms"
        );
    }
}

/// RFC 8972's Class of Service TLV both ways: stamp-suite's sender asks
/// sonde's reflector, which processes the TLV (U, M and I clear, as
/// stamp-suite's checks of each reply find); sonde's sender asks
/// stamp-suite's reflector, whose answers say the DSCP each request
/// arrived with and come back with the DSCP asked for.
#[test]
fn the_class_of_service_tlv_is_answered_both_ways() {
    if !have_stamp_suite() {
        return;
    }
    let server = ServerProc::start(&["--reflector-port", "0"]);
    let port = server.reflector_port().to_string();
    let out = Command::new("stamp-suite")
        .args(["-r", "::1", "-S", "::1", "-p", &port])
        .args(["-c", "5", "-d", "20", "--cos", "--dscp", "46"])
        .args(["--output-format", "json", "--log-format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    let summary = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "summary")
        .expect("a summary");
    assert_eq!(summary["packets_received"], 5, "{summary}");
    let tlvs = &summary["measurements"]["tlv_validation"];
    assert_eq!(tlvs["rejected_replies"], 0, "{tlvs}");
    assert_eq!(tlvs["by_type"]["4"]["observed"], 5, "{tlvs}");
    for flag in ["unrecognized", "malformed", "integrity_failed"] {
        assert_eq!(tlvs["flags"][flag], 0, "{flag}: {tlvs}");
    }

    let port = free_udp_port();
    let mut reflector = stamp_reflector(port).spawn().unwrap();
    let ping = |dscp: &str| -> Value {
        let out = sonde()
            .args(["ping", "::1", "--proto", "udp", "-p", &port.to_string()])
            .args(["--cos", "-S", dscp, "-c", "5", "-i", "20ms", "-J"])
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
    };
    let mut doc = Value::Null;
    for _ in 0..50 {
        doc = ping("AF41");
        if doc["summary"]["round_trip"]["received_packets"] == 5 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let ef = ping("EF");
    let _ = reflector.kill();
    let _ = reflector.wait();
    for (doc, dscp) in [(&doc, "34"), (&ef, "46")] {
        let cos = &doc["series"][0]["cos"];
        assert_eq!(cos["at_reflector"], serde_json::json!({ dscp: 5 }), "{doc}");
        assert_eq!(cos["returned"], serde_json::json!({ dscp: 5 }), "{doc}");
        assert_eq!(cos["not_understood"], 0, "{doc}");
        // Room for the TLV: 44 bytes and 8 more.
        assert_eq!(doc["series"][0]["size_bytes"], 52, "{doc}");
    }
}
