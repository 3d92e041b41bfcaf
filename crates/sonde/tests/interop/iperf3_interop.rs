//! sonde's client against a stock `iperf3 -s` (the system's, and a newer
//! one named by `SONDE_IPERF3_NEWER`), over ::1 and 127.0.0.1, for each
//! direction and 1 or 4 streams; both ends must agree on the bytes moved.
//! iperf3's client against `sonde serve` is in iperf3_clients.rs, and a
//! malformed iperf3 handshake here. Loopback only.

use crate::common;
use common::{sonde, stderr, Iperf3Server, ServerProc};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn json(out: &std::process::Output, what: &str) -> serde_json::Value {
    assert!(out.status.success(), "{what}: {}", stderr(out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{what}: {e}"))
}

fn n(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Sent and received bytes within 5 % (plus 64 KiB in flight per stream).
/// Both ends counted the same bytes, but for what was still in flight or
/// unread when the test's clock ended: 5 % (a tenth of a second of a 2 s
/// test, a loaded machine's stall) and a socket buffer per stream.
fn agree(sent: f64, received: f64, streams: f64, what: &str) {
    assert!(
        sent > 0.0 && received > 0.0,
        "{what}: sent {sent}, received {received}"
    );
    let slack = 0.05 * sent + 65_536.0 * streams;
    assert!(
        (sent - received).abs() <= slack,
        "{what}: sent {sent}, received {received}"
    );
}

const DIRECTIONS: [(&str, &[&str]); 3] = [
    ("forward", &[]),
    ("reverse", &["-R"]),
    ("bidir", &["--bidir"]),
];

/// Both loopback families: the matrix runs over each.
const HOSTS: [&str; 2] = ["::1", "127.0.0.1"];

/// `host:port` as a socket address is written: IPv6 in brackets.
fn addr(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

#[test]
fn sonde_against_an_iperf3_server() {
    for bin in common::iperf3_client::clients() {
        let server = Iperf3Server::start_bin(&bin, 17_210);
        for host in HOSTS {
            matrix_against_iperf3(host, server.port);
        }
    }
}

fn matrix_against_iperf3(host: &str, port: u16) {
    let port_s = port.to_string();
    for proto in ["tcp", "udp"] {
        for (name, dir) in DIRECTIONS {
            for streams in ["1", "4"] {
                let what = format!("sonde {proto} {host} --iperf3 {name} -P {streams}");
                let rate = if proto == "tcp" { "100M" } else { "20M" };
                let out = sonde()
                    .args([
                        proto, host, "-p", &port_s, "--iperf3", "-t", "2", "-b", rate, "-P",
                        streams, "-J",
                    ])
                    .args(dir)
                    .output()
                    .unwrap();
                let r = json(&out, &what);
                let list = r["streams"].as_array().unwrap();
                for s in list {
                    // The server's end: its own address, and no socket
                    // settings iperf3 did not report.
                    let server = &s["server_socket"];
                    assert_eq!(server["local"], addr(host, port), "{what}: {s}");
                    assert_eq!(server["remote"], s["client_socket"]["local"], "{what}");
                    assert!(server["sndbuf_bytes"].is_null(), "{what}: {server}");
                    assert!(server["rcvbuf_bytes"].is_null(), "{what}: {server}");
                    if proto == "tcp" {
                        agree(n(&s["sent_bytes"]), n(&s["received_bytes"]), 1.0, &what);
                        // Reverse streams: the iperf3 server's retransmits.
                        assert!(s["retransmits"].is_number(), "{what}: {s}");
                    } else {
                        // Packets, not bytes: both ends count datagrams;
                        // none arrives that was not sent, and on loopback
                        // at most a tenth is lost (a receiver stalled a
                        // tenth of a second overflows its socket buffer).
                        let sent = n(&s["sent_packets"]);
                        let received = n(&s["received_packets"]);
                        assert!(received <= sent, "{what}: {s}");
                        assert!(received >= 0.9 * sent, "{what}: {s}");
                        assert!(sent > 1000.0, "{what}: {s}");
                    }
                }
                let per_dir: usize = streams.parse().unwrap();
                assert_eq!(
                    list.len(),
                    if name == "bidir" {
                        2 * per_dir
                    } else {
                        per_dir
                    },
                    "{what}"
                );
            }
        }
    }
}

/// The figures of direction `dir` of a sonde result.
fn dir_sum<'a>(r: &'a serde_json::Value, dir: &str) -> &'a serde_json::Value {
    &r["summary"][dir]
}

/// `-n` and `-k` against an iperf3 server, for both protocols, every
/// direction and both families: the test ends after the volume asked
/// (well before its 10 s time), the sender sends exactly that (sonde's
/// senders) and both ends agree on it.
#[test]
fn sonde_bounded_by_bytes_or_blocks_against_an_iperf3_server() {
    let server = Iperf3Server::start_on(17_211);
    let port = server.port.to_string();
    const MIB: f64 = 1_048_576.0;
    for host in HOSTS {
        for (name, dir) in DIRECTIONS {
            let dirs: &[&str] = match name {
                "forward" => &["forward"],
                "reverse" => &["reverse"],
                _ => &["forward", "reverse"],
            };
            // TCP: 40 MiB at 400 Mbit/s (about 0.8 s), by bytes and as
            // 320 blocks of 128 KiB.
            for volume in [&["-n", "40M"][..], &["-k", "320", "-l", "128K"]] {
                let what = format!("sonde tcp {host} --iperf3 {name} {volume:?}");
                let out = sonde()
                    .args(["tcp", host, "-p", &port, "--iperf3", "-t", "10"])
                    .args(["-b", "400M", "-J"])
                    .args(volume)
                    .args(dir)
                    .output()
                    .unwrap();
                let r = json(&out, &what);
                assert!(n(&r["duration_s"]) < 8.0, "{what}: ran to its time");
                for d in dirs {
                    let f = dir_sum(&r, d);
                    let (sent, received) = (n(&f["sent_bytes"]), n(&f["received_bytes"]));
                    if *d == "forward" {
                        // sonde sends the volume exactly, and waits until
                        // it is acknowledged: the iperf3 server counts it
                        // (none that was not sent; what it had not read
                        // when TEST_END came, a loaded machine's lag, is
                        // within `agree`'s margin).
                        assert_eq!(sent, 40.0 * MIB, "{what}: sonde sent");
                        assert!(received <= sent, "{what}: {received} > {sent}");
                        agree(sent, received, 1.0, &what);
                    } else {
                        // An iperf3 server sends on until it hears the
                        // test is over (as against iperf3's own client):
                        // what it sent past the volume was in flight.
                        assert!(sent >= received, "{what}: {sent} < {received}");
                        // sonde's receivers stop when they have counted
                        // the volume: it, and at most the last reads past
                        // it (a count, not a time).
                        assert!((received - 40.0 * MIB).abs() <= 0.02 * 40.0 * MIB, "{what}");
                    }
                }
            }
            // UDP: 500 datagrams of 1000 bytes at 10 Mbit/s (0.4 s), by
            // blocks and by bytes (500,000 bytes: 500 datagrams).
            for volume in [&["-k", "500"][..], &["-n", "500000"]] {
                let what = format!("sonde udp {host} --iperf3 {name} {volume:?}");
                let out = sonde()
                    .args(["udp", host, "-p", &port, "--iperf3", "-t", "10"])
                    .args(["-b", "10M", "-l", "1000", "-J"])
                    .args(volume)
                    .args(dir)
                    .output()
                    .unwrap();
                let r = json(&out, &what);
                assert!(n(&r["duration_s"]) < 8.0, "{what}: ran to its time");
                for d in dirs {
                    let f = dir_sum(&r, d);
                    common::assert_udp_delivered(f, 500, &what);
                }
            }
        }
    }
}

/// `-O 1` with `--json=iperf3`, as iperf3 3.12 writes it against its own
/// server: the warm-up's interval flagged `"omitted": true` from 0 to 1,
/// then the measured intervals from 0 again, and the summary over the
/// measured time only.
#[test]
fn iperf3_layout_restarts_interval_times_after_the_warm_up() {
    let server = Iperf3Server::start_on(17_212);
    let port = server.port.to_string();
    for host in HOSTS {
        let what = format!("sonde tcp {host} -O 1 --json=iperf3");
        let out = sonde()
            .args(["tcp", host, "-p", &port, "--iperf3", "-t", "2", "-O", "1"])
            .args(["-b", "100M", "--json=iperf3"])
            .output()
            .unwrap();
        let r = json(&out, &what);
        let sums: Vec<&serde_json::Value> = r["intervals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| &i["sum"])
            .collect();
        assert_eq!(sums.len(), 3, "{what}: {sums:?}");
        assert_eq!(sums[0]["omitted"], true, "{what}");
        assert_eq!((n(&sums[0]["start"]), n(&sums[0]["end"])), (0.0, 1.0));
        // Windows are cut at their ticks, not when a thread woke: the
        // measured ones follow on from 0 without a gap, the first is 1 s
        // exactly, and the last closes with the sender's last write,
        // never before the planned end (2) and, but for a loaded
        // machine's late write, soon after (well before 3, where an
        // interval not restarted after the warm-up would end).
        let mut at = 0.0;
        for (i, s) in sums[1..].iter().enumerate() {
            assert_eq!(s["omitted"], false, "{what}");
            let (start, end) = (n(&s["start"]), n(&s["end"]));
            assert!((start - at).abs() < 1e-9, "{what}: {s}");
            if i == 0 {
                assert!((end - 1.0).abs() < 1e-9, "{what}: {s}");
            } else {
                assert!((2.0 - 1e-9..2.5).contains(&end), "{what}: {s}");
            }
            assert!(
                (n(&s["seconds"]) - (end - start)).abs() < 1e-6,
                "{what}: {s}"
            );
            at = end;
        }
        let sent = &r["end"]["sum_sent"];
        assert_eq!(n(&sent["start"]), 0.0, "{what}");
        assert!((n(&sent["end"]) - 2.0).abs() < 0.05, "{what}: {sent}");
        // 100 Mbit/s over the 2 measured seconds, not the 3 sent: the
        // summary is the measured intervals' bytes, the warm-up's left
        // out (they differ by the few bytes written between two reads
        // of the counters, far less than half a second's warm-up).
        let bytes = n(&sent["bytes"]);
        let warm_up = n(&sums[0]["bytes"]);
        let measured: f64 = sums[1..].iter().map(|s| n(&s["bytes"])).sum();
        assert!(warm_up > 0.0, "{what}: {sums:?}");
        assert!(
            (bytes - measured).abs() < 0.5 * warm_up,
            "{what}: {bytes} in the summary, {measured} in the measured intervals, \
             {warm_up} in the warm-up"
        );
        // The pacer never runs ahead: all 3 intervals (every byte written)
        // hold at most 37.5 MB and one 10 ms write (125 kB). A loaded
        // machine only stalls it, and a stall late in the test is not
        // caught up: a tenth of the 2 s measured (25 MB) is the margin.
        assert!(
            warm_up + measured <= 37.5e6 + 125e3,
            "{what}: {warm_up} + {measured}"
        );
        assert!(bytes >= 0.9 * 25e6, "{what}: {bytes}");
    }
}

#[test]
fn sonde_finds_out_that_the_server_is_iperf3() {
    let _server = Iperf3Server::start_on(15_202);
    let out = sonde()
        .args(["tcp", "127.0.0.1", "-p", "15202", "-t", "1", "-J"])
        .output()
        .unwrap();
    let r = json(&out, "sonde tcp without --iperf3");
    assert!(stderr(&out).contains("iperf3 server"), "{}", stderr(&out));
    assert!(n(&r["summary"]["total"]["received_bytes"]) > 0.0);
}

/// Opens an iperf3-style control connection to `port` and sends `bytes`;
/// returns what the server sent back before closing (or 2 s passing).
fn iperf3_handshake(port: u16, bytes: &[u8]) -> Vec<u8> {
    use std::io::{Read, Write};
    let mut s = TcpStream::connect(("::1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let _ = s.write_all(bytes);
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    let end = Instant::now() + Duration::from_secs(2);
    while Instant::now() < end {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    got
}

#[test]
fn a_malformed_iperf3_handshake_is_refused_and_the_server_keeps_serving() {
    let server = ServerProc::start(&["--no-reflector"]);
    let port = server.port;
    let cookie = b"abcdefghijklmnopqrstuvwxyz234567abcd\0";
    let with = |rest: &[u8]| [&cookie[..], rest].concat();
    let params = |json: &str| {
        let mut v = (json.len() as u32).to_be_bytes().to_vec();
        v.extend_from_slice(json.as_bytes());
        with(&v)
    };
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("a short cookie", b"abcdefgh".to_vec()),
        (
            "a cookie of the wrong alphabet",
            [&[0xffu8; 36][..], &[0]].concat(),
        ),
        ("a length prefix of 0", with(&[0, 0, 0, 0])),
        ("a length prefix of 4 GiB", with(&[0xff, 0xff, 0xff, 0xff])),
        (
            "JSON of the wrong types",
            params(r#"{"tcp":true,"time":"ten","parallel":"two"}"#),
        ),
        ("not JSON", params("{{{{")),
    ];
    for (what, bytes) in cases {
        let start = Instant::now();
        let got = iperf3_handshake(port, &bytes);
        // At most PARAM_EXCHANGE (9) comes back, never CREATE_STREAMS (10).
        assert!(!got.contains(&10), "{what}: the server went on: {got:?}");
        assert!(
            start.elapsed() < Duration::from_secs(12),
            "{what}: took {:?}",
            start.elapsed()
        );
    }
    // Still serving sonde and iperf3 clients.
    let ours = sonde()
        .args(["tcp", "::1", "-p", &port.to_string(), "-t", "1s", "-J"])
        .output()
        .unwrap();
    json(&ours, "sonde tcp after the malformed handshakes");
    let theirs = Command::new("iperf3")
        .args(["-c", "::1", "-p", &port.to_string(), "-t", "1", "-J"])
        .output()
        .unwrap();
    let r = json(&theirs, "iperf3 -c after the malformed handshakes");
    assert!(n(&r["end"]["sum_received"]["bytes"]) > 0.0);
}

#[test]
fn iperf3_clients_get_sonde_limits_but_no_busy_server() {
    let server = ServerProc::start(&["--no-reflector", "--max-duration", "3s"]);
    let port = server.port.to_string();
    // A sonde test runs; an iperf3 client is served beside it.
    let busy = sonde()
        .args(["udp", "::1", "-p", &port, "-t", "3s", "-b", "10M", "-J"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(server.wait_for_log("UDP test accepted"), "{}", server.log());
    let beside = Command::new("iperf3")
        .args(["-c", "::1", "-p", &port, "-t", "1", "-J"])
        .output()
        .unwrap();
    let r = json(&beside, "iperf3 beside a sonde test");
    assert!(n(&r["end"]["sum_received"]["bytes"]) > 0.0);
    json(&busy.wait_with_output().unwrap(), "the sonde test");
    // Over the server's max_duration: refused, and the server says why.
    let long = Command::new("iperf3")
        .args(["-c", "::1", "-p", &port, "-t", "10"])
        .output()
        .unwrap();
    assert!(!long.status.success(), "a 10 s test over a 3 s limit ran");
    assert!(
        server.wait_for_log("iperf3 test refused"),
        "{}",
        server.log()
    );
    assert!(
        server.log().contains("max_duration") || server.log().contains("longest"),
        "{}",
        server.log()
    );
}

/// `--get-server-output`: an iperf3 server's own text comes back in the
/// result (`server_output`), in `--json=iperf3` as `server_output_text`,
/// and after the text summary; its receiver line names the bytes the
/// client's JSON says arrived. A sonde server sends none, and says so.
#[test]
fn the_server_output_of_an_iperf3_server() {
    let server = Iperf3Server::start_on(17_213);
    let port = server.port.to_string();
    for (proto, host) in [("tcp", "::1"), ("udp", "127.0.0.1")] {
        let what = format!("sonde {proto} {host} --get-server-output");
        let out = sonde()
            .args([proto, host, "-p", &port, "--iperf3", "-t", "1", "-b", "20M"])
            .args(["--get-server-output", "-J"])
            .output()
            .unwrap();
        let r = json(&out, &what);
        let text = r["server_output"]
            .as_str()
            .unwrap_or_else(|| panic!("{what}: {r}"));
        assert!(text.contains("Accepted connection"), "{what}: {text}");
        let receiver = text
            .lines()
            .rfind(|l| l.trim_end().ends_with("receiver"))
            .unwrap_or_else(|| panic!("{what}: no receiver line in {text}"));
        // 20 Mbit/s for 1 s is 2.38 MBytes; iperf3 prints it in MBytes.
        let mbytes: f64 = receiver
            .split("sec")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{what}: {receiver}"));
        let received = n(&r["summary"]["forward"]["received_bytes"]) / 1_048_576.0;
        assert!(
            (mbytes - received).abs() < 0.02,
            "{what}: {receiver} vs {received}"
        );

        let out = sonde()
            .args([proto, host, "-p", &port, "--iperf3", "-t", "1", "-b", "20M"])
            .args(["--get-server-output", "--json=iperf3"])
            .output()
            .unwrap();
        let doc = json(&out, &what);
        assert!(
            doc["server_output_text"]
                .as_str()
                .is_some_and(|t| t.contains("receiver")),
            "{what}: {doc}"
        );
    }
    drop(server);
    let ours = ServerProc::start(&["--no-reflector"]);
    let out = sonde()
        .args(["tcp", "::1", "-p", &ours.port.to_string(), "-t", "1"])
        .args(["--get-server-output", "-J"])
        .output()
        .unwrap();
    let r = json(&out, "sonde tcp --get-server-output against sonde serve");
    assert!(r.get("server_output").is_none(), "{r}");
    assert!(
        stderr(&out).contains("sends no separate output"),
        "{}",
        stderr(&out)
    );
}
