//! The stock iperf3 client (the system's, and the one named by
//! `SONDE_IPERF3_NEWER` if set) against `sonde serve`, over IPv6 and
//! IPv4 loopback: TCP and UDP each way, `-O`, `-n`, `-k`,
//! `--get-server-output`, and refusals in iperf3's own words. The
//! server's own flags (`-1`, `-D`, ...) are in serve_flags.rs.

use crate::common;
use common::iperf3_client::{clients, iperf3, json, n, text};
use common::{sonde, ServerProc};
use serde_json::Value;

/// Sent and received bytes within 5 % (plus 64 KiB per stream): what a
/// sender counts includes what sat in socket buffers when the receiver
/// stopped reading at its clock's end. For a test bounded by volume,
/// whose ends count the same bytes; a timed test's sums go through
/// [`sums_agree`]. The faults this guards against were off by a third
/// or more.
fn agree(sent: f64, received: f64, streams: f64, what: &str) {
    agree_within(0.05, sent, received, streams, what);
}

/// Sent and received bytes within `share` (plus 64 KiB per stream).
fn agree_within(share: f64, sent: f64, received: f64, streams: f64, what: &str) {
    assert!(
        sent > 0.0 && received > 0.0,
        "{what}: sent {sent}, received {received}"
    );
    let slack = share * sent + 65_536.0 * streams;
    assert!(
        (sent - received).abs() <= slack,
        "{what}: sent {sent}, received {received}"
    );
}

/// One direction's sums (`sum_sent`, `sum_received` and the like) agree
/// on the bytes but for what was still in flight or unread when the
/// receiver's clock ended: a tenth of a second at the sender's rate (a
/// loaded machine's stall: 10 % of a 1 s test, never under 5 %) and a
/// socket buffer (64 KiB) per stream. The faults this guards against
/// were off by a third or more.
fn sums_agree(end: &Value, sent_key: &str, received_key: &str, streams: f64, what: &str) {
    let tail_share = 0.1 / n(&end[sent_key]["seconds"]);
    agree_within(
        tail_share.max(0.05),
        n(&end[sent_key]["bytes"]),
        n(&end[received_key]["bytes"]),
        streams,
        what,
    );
}

/// A UDP summary: the sender counted datagrams, and every one it sent is
/// in the receiver's total (received + lost), but for the tail still in
/// flight or unread when the test ended: at most a tenth of a second of
/// datagrams at the sender's rate (a loaded receiver's stall), or 4.
fn udp_counts_agree(end: &Value, sent_key: &str, received_key: &str, what: &str) {
    let sent = n(&end[sent_key]["packets"]);
    let total = n(&end[received_key]["packets"]);
    assert!(sent > 0.0, "{what}: the sender counted no datagrams: {end}");
    let tail = (0.1 * sent / n(&end[sent_key]["seconds"])).max(4.0);
    assert!(
        sent >= total && sent - total <= tail,
        "{what}: {sent} sent ({sent_key}), the receiver's total is {total}"
    );
}

const HOSTS: [&str; 2] = ["::1", "127.0.0.1"];

const DIRECTIONS: [(&str, &[&str]); 3] = [
    ("forward", &[]),
    ("reverse", &["-R"]),
    ("bidir", &["--bidir"]),
];

#[test]
fn the_matrix_over_ipv6_and_ipv4() {
    // The default bind: one dual-stack socket, IPv4 clients v4-mapped.
    let server = ServerProc::start_with(sonde(), &[], &["--no-reflector"]);
    for bin in clients() {
        for host in HOSTS {
            for udp in [false, true] {
                for (name, dir) in DIRECTIONS {
                    for streams in ["1", "4"] {
                        let what = format!("{bin} {host} udp={udp} {name} -P {streams}");
                        let mut args = vec!["-t", "1", "-P", streams];
                        args.extend_from_slice(if udp {
                            &["-u", "-b", "10M", "-l", "1400"]
                        } else {
                            &["-b", "200M"]
                        });
                        args.extend_from_slice(dir);
                        let r = json(&bin, host, server.port, &args);
                        let end = &r["end"];
                        let p: f64 = streams.parse().unwrap();
                        sums_agree(end, "sum_sent", "sum_received", p, &what);
                        if udp {
                            udp_counts_agree(end, "sum_sent", "sum_received", &what);
                        }
                        if name == "bidir" {
                            let (s, r) = ("sum_sent_bidir_reverse", "sum_received_bidir_reverse");
                            sums_agree(end, s, r, p, &what);
                            if udp {
                                udp_counts_agree(end, s, r, &what);
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(!server.log().contains("WARN"), "{}", server.log());
}

#[test]
fn omitted_seconds_are_left_out_on_both_ends() {
    let server = ServerProc::start(&["--no-reflector"]);
    for host in HOSTS {
        for dir in [&[][..], &["-R"][..]] {
            let what = format!("-O 1 {host} {dir:?}");
            let mut args = vec!["-t", "2", "-O", "1", "-b", "500M"];
            args.extend_from_slice(dir);
            let end = &json("iperf3", host, server.port, &args)["end"];
            // Each end starts its omit clock on its own: they agree to a
            // few percent (counted through the omitted second, the
            // receiver had half as much again).
            sums_agree(end, "sum_sent", "sum_received", 1.0, &what);
        }
        let end = &json(
            "iperf3",
            host,
            server.port,
            &["-u", "-b", "10M", "-t", "2", "-O", "1"],
        )["end"];
        let what = format!("-u -O 1 {host}");
        sums_agree(end, "sum_sent", "sum_received", 1.0, &what);
        // The receiver's line spans the 2 measured seconds, not 3.
        let span = n(&end["sum_received"]["end"]);
        assert!(span < 2.5, "{what}: the receiver's line spans {span} s");
        udp_counts_agree(end, "sum_sent", "sum_received", &what);
    }
}

#[test]
fn tests_bounded_by_bytes_or_blocks_are_served() {
    let server = ServerProc::start(&["--no-reflector"]);
    // -k counts blocks of -l bytes.
    let cases: [(&[&str], f64); 2] = [
        (&["-n", "200M"], 200.0 * 1_048_576.0),
        (&["-k", "1000", "-l", "128K"], 1000.0 * 131_072.0),
    ];
    for host in HOSTS {
        for (bound, want) in cases {
            for dir in [&[][..], &["-R"][..]] {
                let what = format!("{host} {bound:?} {dir:?}");
                let mut args = bound.to_vec();
                args.extend_from_slice(dir);
                let end = &json("iperf3", host, server.port, &args)["end"];
                let received = n(&end["sum_received"]["bytes"]);
                // The sender stops once the count is reached; a server
                // sending (-R) stops when the client says it has it all.
                // A receiving iperf3 client counts each read as a block,
                // and reads can be short: with -k -R it stops early (so
                // it does against iperf3's own server).
                let least = if bound[0] == "-k" && !dir.is_empty() {
                    0.25
                } else {
                    0.99
                };
                assert!(
                    received >= least * want && received <= 1.1 * want,
                    "{what}: {received} bytes received, {want} asked"
                );
                let sent = n(&end["sum_sent"]["bytes"]);
                if dir.is_empty() {
                    agree(sent, received, 1.0, &what);
                } else {
                    // sonde's server, sending, has no count of its own: it
                    // goes on until the client's TEST_END reaches it, so it
                    // sent what the client read and what was under way:
                    // half as much again, or what a fifth of a second at
                    // the rate the client read adds (TEST_END late on a
                    // loaded machine; at loopback's Gbit/s that is more
                    // than half). A server that ran on to its time (10 s)
                    // sends tens of times more.
                    let rate = received / n(&end["sum_received"]["seconds"]);
                    assert!(
                        sent >= received && sent - received <= (0.5 * received).max(0.2 * rate),
                        "{what}: sent {sent}, received {received}"
                    );
                }
            }
        }
    }
    assert!(!server.log().contains("refused"), "{}", server.log());
}

#[test]
fn a_reversed_udp_test_shows_the_servers_datagram_count() {
    let server = ServerProc::start(&["--no-reflector"]);
    for host in HOSTS {
        let out = iperf3(
            "iperf3",
            host,
            server.port,
            &["-u", "-R", "-b", "10M", "-t", "1"],
        );
        let t = text(&out);
        assert!(out.status.success(), "{t}");
        let sender = t
            .lines()
            .find(|l| l.ends_with("sender"))
            .unwrap_or_else(|| panic!("no sender line: {t}"));
        assert!(!sender.contains("0/0 "), "{host}: {sender}");
        let end = &json(
            "iperf3",
            host,
            server.port,
            &["-u", "-R", "-b", "10M", "-t", "1"],
        )["end"];
        udp_counts_agree(end, "sum_sent", "sum_received", host);
        // What iperf3 3.21 reads: the sender's count is `packets` less
        // `omitted_packets`, and a result without `omitted_packets` is
        // taken as all omitted (its "0/0"). 3.12 prints the results it
        // got with --debug.
        let out = iperf3(
            "iperf3",
            host,
            server.port,
            &["-u", "-R", "-b", "10M", "-t", "1", "--debug"],
        );
        let theirs = server_results(&text(&out));
        let s = &theirs["streams"][0];
        let counted = n(&s["packets"]) - n(&s["omitted_packets"]);
        assert!(counted > 0.0, "{host}: {theirs}");
        assert_eq!(n(&s["errors"]), 0.0, "{host}: {theirs}");
    }
}

/// The server's results as an iperf3 client prints them with `--debug`.
fn server_results(debug: &str) -> Value {
    let from = debug
        .split_once("get_results\n")
        .unwrap_or_else(|| panic!("no results in {debug}"))
        .1;
    let end = from.find("\n}\n").unwrap_or_else(|| panic!("{from}")) + 2;
    serde_json::from_str(&from[..end]).unwrap_or_else(|e| panic!("{e}: {from}"))
}

/// The "Transfer" column of the first line ending in `role`.
fn transfer(text: &str, role: &str) -> String {
    let line = text
        .lines()
        .find(|l| l.trim_end().ends_with(role))
        .unwrap_or_else(|| panic!("no {role} line in {text}"));
    let after = line.split("sec").nth(1).unwrap_or_default();
    after
        .split("Bytes")
        .next()
        .unwrap_or_default()
        .trim()
        .to_string()
}

#[test]
fn the_server_output_comes_with_the_results() {
    let server = ServerProc::start(&["--no-reflector"]);
    for host in HOSTS {
        for udp in [&[][..], &["-u", "-b", "10M"][..]] {
            let mut args = vec!["-t", "1", "--get-server-output"];
            args.extend_from_slice(udp);
            let out = iperf3("iperf3", host, server.port, &args);
            let t = text(&out);
            assert!(out.status.success(), "{t}");
            let (client, server_part) = t
                .split_once("Server output:")
                .unwrap_or_else(|| panic!("no server output: {t}"));
            assert!(server_part.contains("Accepted connection from"), "{t}");
            // The client prints the server's bytes as its receiver line;
            // the server's own line must say the same.
            assert_eq!(
                transfer(client, "receiver"),
                transfer(server_part, "receiver"),
                "{t}"
            );
        }
        let r = json(
            "iperf3",
            host,
            server.port,
            &["-t", "1", "--get-server-output"],
        );
        let out = r["server_output_text"]
            .as_str()
            .unwrap_or_else(|| panic!("no server_output_text: {r}"));
        assert!(out.contains("receiver"), "{out}");
    }
}

#[test]
fn refusals_reach_the_client_in_iperf3s_words() {
    let server = ServerProc::start(&[
        "--no-reflector",
        "--max-duration",
        "3s",
        "--max-rate",
        "20M",
        "--max-streams",
        "4",
    ]);
    let cases: [(&[&str], &str); 3] = [
        (&["-t", "10", "-b", "1M"], "test duration too long"),
        (
            &["-t", "1", "-b", "50M"],
            "total required bandwidth is larger than server limit",
        ),
        (
            &["-t", "1", "-b", "1M", "-P", "8"],
            "number of parallel streams too large",
        ),
    ];
    for host in HOSTS {
        for (args, says) in cases {
            let out = iperf3("iperf3", host, server.port, args);
            let t = text(&out);
            assert!(!out.status.success(), "{args:?} ran: {t}");
            assert!(t.contains(says), "{args:?}: {t}");
            assert!(!t.contains("busy"), "{args:?}: {t}");
        }
    }
    // A newer client knows the server's own duration error.
    for bin in clients().iter().skip(1) {
        let t = text(&iperf3(bin, "::1", server.port, &["-t", "10", "-b", "1M"]));
        assert!(t.contains("maximum permitted limit"), "{bin}: {t}");
    }
    assert!(
        server.wait_for_log("iperf3 test refused"),
        "{}",
        server.log()
    );
}
