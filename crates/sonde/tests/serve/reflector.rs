//! The STAMP reflector of `sonde serve`, from the outside: answers of
//! exactly the request's length (a TWAMP-Light sender's shorter packet:
//! the base size), a per-source rate limit, malformed and
//! wrongly keyed packets ignored and counted, and the server serving on
//! afterwards; `sonde ping --proto udp` against it.

use crate::common;
use common::{sonde, stderr, ServerProc};
use sonde_wire::stamp::{
    ErrorEstimate, HmacKey, Mode, NtpTimestamp, ReflectorPacket, SenderPacket, TimestampFormat,
};
use std::net::UdpSocket;
use std::time::{Duration, Instant};

/// A server with its reflector on a free port; (server, reflector port).
fn reflector(extra: &[&str]) -> (ServerProc, u16) {
    let mut args = vec!["--reflector-port", "0"];
    args.extend(extra);
    let server = ServerProc::start(&args);
    let port = server.reflector_port();
    (server, port)
}

/// How long an answer that should come is waited for: on a loaded
/// machine a reply can be late by far more than loopback's microseconds,
/// and one that comes returns at once.
const ANSWER_WAIT: Duration = Duration::from_secs(5);

/// How long silence is listened to where no answer should come: a wrong
/// answer on loopback would be there well within it (and one later still
/// would be the next read, with the wrong length).
const SILENCE: Duration = Duration::from_millis(300);

fn client(port: u16) -> UdpSocket {
    let s = UdpSocket::bind("[::1]:0").unwrap();
    s.connect(("::1", port)).unwrap();
    s.set_read_timeout(Some(ANSWER_WAIT)).unwrap();
    s
}

fn request(seq: u32, len: usize, mode: &Mode) -> Vec<u8> {
    let mut p = SenderPacket {
        seq,
        timestamp: NtpTimestamp::from_unix_nanos(1_700_000_000_000_000_000),
        error_estimate: ErrorEstimate {
            synchronized: false,
            format: TimestampFormat::Ntp,
            scale: 0,
            multiplier: 1,
        },
        len,
    }
    .encode(mode)
    .unwrap();
    // Recognisable padding.
    let base = mode.base_len();
    for (i, b) in p.iter_mut().enumerate().skip(base) {
        *b = i as u8;
    }
    p
}

/// The length of the answer to `packet`, if one comes within `wait`.
fn answer_len_within(s: &UdpSocket, packet: &[u8], wait: Duration) -> Option<usize> {
    s.set_read_timeout(Some(wait)).unwrap();
    s.send(packet).unwrap();
    let mut buf = [0u8; 65_536];
    s.recv(&mut buf).ok()
}

/// The length of the answer to `packet`, where one should come.
fn answer_len(s: &UdpSocket, packet: &[u8]) -> Option<usize> {
    answer_len_within(s, packet, ANSWER_WAIT)
}

/// The length of an answer to `packet`, where none should come.
fn unexpected_answer(s: &UdpSocket, packet: &[u8]) -> Option<usize> {
    answer_len_within(s, packet, SILENCE)
}

#[test]
fn an_answer_is_never_longer_than_its_request() {
    let (server, port) = reflector(&[]);
    let s = client(port);
    let mode = Mode::Unauthenticated;
    for len in [44, 45, 100, 1400, 9000] {
        let p = request(7, len, &mode);
        assert_eq!(answer_len(&s, &p), Some(len), "request of {len} bytes");
        let mut buf = vec![0u8; len];
        s.send(&p).unwrap();
        let n = s.recv(&mut buf).unwrap();
        let r = ReflectorPacket::decode(&buf[..n], &mode).unwrap();
        assert_eq!(r.sender_seq, 7);
        // Loopback: the request arrived with the sender's hop limit (64).
        assert_eq!(r.sender_ttl, 64, "the TTL the request came with");
        // RFC 8762 §4.3: padding is copied back.
        assert_eq!(&buf[44..n], &p[44..], "padding of a {len}-byte request");
        assert!(
            r.timestamp.0 >= r.receive_timestamp.0,
            "sent after received"
        );
    }
    // Too short to be STAMP or TWAMP-Light (14 bytes at least): no
    // answer at all, and counted.
    for short in [0usize, 1, 13] {
        assert_eq!(
            unexpected_answer(&s, &vec![0u8; short]),
            None,
            "{short} bytes"
        );
    }
    assert!(server.wait_for_log("malformed=3"), "{}", server.log());
    // Still serving.
    assert_eq!(answer_len(&s, &request(8, 44, &mode)), Some(44));
}

/// A TWAMP-Light session-sender's unauthenticated test packet (RFC 5357
/// §4.1.2): sequence number, timestamp, error estimate, then `padding`
/// zero bytes (RFC 6038 recommends 27).
fn twamp_light_request(seq: u32, padding: usize) -> Vec<u8> {
    let mut p = seq.to_be_bytes().to_vec();
    p.extend_from_slice(&0xe8a3_1c00_4000_0000u64.to_be_bytes());
    // S = 1, scale 2, multiplier 9.
    p.extend_from_slice(&[0x82, 0x09]);
    p.resize(14 + padding, 0);
    p
}

#[test]
fn a_twamp_light_senders_short_packets_are_answered_at_the_base_size() {
    let (server, port) = reflector(&[]);
    let s = client(port);
    let mode = Mode::Unauthenticated;
    for (seq, padding) in [(3u32, 0usize), (4, 27), (5, 29)] {
        let p = twamp_light_request(seq, padding);
        s.send(&p).unwrap();
        let mut buf = [0u8; 2048];
        let n = s.recv(&mut buf).expect("an answer");
        // RFC 8762 §4.6: a STAMP reflector's base-size answer, which a
        // TWAMP-Light sender reads as a reflector packet with padding.
        assert_eq!(n, 44, "a {}-byte request", p.len());
        let r = ReflectorPacket::decode(&buf[..n], &mode).unwrap();
        assert_eq!(r.sender_seq, seq);
        assert_eq!(r.sender_timestamp, NtpTimestamp(0xe8a3_1c00_4000_0000));
        assert_eq!(r.sender_error_estimate.to_bits(), 0x8209);
        assert_eq!(r.sender_ttl, 64, "the hop limit the request came with");
        assert!(r.timestamp.0 >= r.receive_timestamp.0);
        assert_eq!(&buf[41..44], &[0, 0, 0], "MBZ");
    }
    drop(server);

    // Turned off, they are dropped and counted as STAMP drops them.
    let dir = common::TempDir::new("twamp-light-off");
    let config = dir.join("serve.toml");
    std::fs::write(&config, "[reflector]\ntwamp_light = false\n").unwrap();
    let (server, port) = reflector(&["--config", config.to_str().unwrap()]);
    let s = client(port);
    for padding in [0, 27] {
        assert_eq!(
            unexpected_answer(&s, &twamp_light_request(9, padding)),
            None
        );
    }
    assert!(server.wait_for_log("malformed=2"), "{}", server.log());
    assert_eq!(answer_len(&s, &request(10, 44, &mode)), Some(44));
}

#[test]
fn a_flood_above_the_rate_limit_is_dropped_not_answered() {
    // STAMP's 44-byte requests, then TWAMP-Light's 14-byte ones, whose
    // 44-byte answers are the most the reflector amplifies (3.1 times).
    for p in [
        request(1, 44, &Mode::Unauthenticated),
        twamp_light_request(1, 0),
    ] {
        // 200 answers a second per source, a burst of 20.
        let (server, port) = reflector(&["--reflector-rate", "200"]);
        let s = client(port);
        s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        let start = Instant::now();
        let mut sent = 0u32;
        while sent < 5000 && start.elapsed() < Duration::from_millis(500) {
            s.send(&p).unwrap();
            sent += 1;
        }
        let elapsed = start.elapsed().as_secs_f64();
        let (mut answers, mut bytes) = (0u32, 0usize);
        let mut buf = [0u8; 128];
        while let Ok(n) = s.recv(&mut buf) {
            answers += 1;
            bytes += n;
        }
        // The reflector refills its bucket by the time it handles a
        // packet, not when it arrived: after a stall it works through its
        // backlog later than the client sent it, so allow 0.3 s more (as
        // abuse_refusals does).
        let allowed = 20.0 + 200.0 * (elapsed + 0.3);
        eprintln!(
            "flood of {} bytes: {sent} requests in {elapsed:.3} s, {answers} answered \
             (at most {allowed:.0}), {bytes} bytes back",
            p.len()
        );
        assert!(f64::from(answers) <= allowed, "{answers} answers");
        assert!(answers >= 20, "the burst is answered: {answers}");
        assert_eq!(bytes, 44 * answers as usize, "no answer above 44 bytes");
        assert!(server.wait_for_log("rate_limited="), "{}", server.log());
    }
}

#[test]
fn hostile_tlvs_are_answered_at_their_length_and_padding_is_not_read_as_tlvs() {
    let (_server, port) = reflector(&[]);
    let s = client(port);
    let mode = Mode::Unauthenticated;
    let ask = |extra: &[u8]| -> Vec<u8> {
        let mut p = request(5, 44, &mode);
        p.extend_from_slice(extra);
        s.send(&p).unwrap();
        let mut buf = [0u8; 2048];
        let n = s.recv(&mut buf).expect("an answer");
        assert_eq!(n, p.len(), "an answer of the request's length");
        buf[44..n].to_vec()
    };
    // A TLV that claims 65,535 bytes of value: padding, not a TLV; back
    // as it went.
    let claims = [0x80, 4, 0xff, 0xff, 1, 2, 3, 4];
    assert_eq!(ask(&claims), claims);
    // A Class of Service TLV of the wrong length: M set, nothing filled.
    assert_eq!(ask(&[0x80, 4, 0, 2, 0xb8, 0]), [0x40, 4, 0, 2, 0xb8, 0]);
    // A type nobody knows: U kept, its value untouched.
    assert_eq!(ask(&[0x80, 200, 0, 3, 9, 9, 9]), [0x80, 200, 0, 3, 9, 9, 9]);
}

#[test]
fn authenticated_mode_answers_only_the_right_key() {
    let dir = common::TempDir::new("stamp");
    let (good, bad) = (dir.join("good.key"), dir.join("bad.key"));
    std::fs::write(
        &good,
        "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n",
    )
    .unwrap();
    std::fs::write(
        &bad,
        "ff112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n",
    )
    .unwrap();
    let (server, port) = reflector(&["--reflector-key-file", good.to_str().unwrap()]);
    let key = |path: &std::path::Path| {
        let text = std::fs::read_to_string(path).unwrap();
        let bytes: Vec<u8> = (0..64)
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
            .collect();
        Mode::Authenticated(HmacKey::new(&bytes).unwrap())
    };
    let s = client(port);
    assert_eq!(answer_len(&s, &request(1, 112, &key(&good))), Some(112));
    assert_eq!(unexpected_answer(&s, &request(2, 112, &key(&bad))), None);
    assert!(server.wait_for_log("bad_hmac=1"), "{}", server.log());
    // An unauthenticated request is too short for authenticated mode.
    assert_eq!(
        unexpected_answer(&s, &request(3, 44, &Mode::Unauthenticated)),
        None
    );

    let ping = |keyfile: &std::path::Path| {
        sonde()
            .args([
                "ping",
                "::1",
                "--proto",
                "udp",
                "-p",
                &port.to_string(),
                "-c",
                "3",
                "-i",
                "10ms",
                "-W",
                "2s",
                "-J",
            ])
            .args(["--key-file", keyfile.to_str().unwrap()])
            .output()
            .unwrap()
    };
    let o = ping(&good);
    assert!(o.status.success(), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["env"]["method"], "stamp-authenticated");
    assert_eq!(r["summary"]["round_trip"]["received_packets"], 3, "{r}");
    let o = ping(&bad);
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["summary"]["round_trip"]["received_packets"], 0, "{r}");
}

#[test]
fn sonde_ping_over_udp_reports_rtt_one_way_delays_and_dwell() {
    let (_server, port) = reflector(&[]);
    for host in ["::1", "127.0.0.1"] {
        let o = sonde()
            .args([
                "ping",
                host,
                "--proto",
                "udp",
                "-p",
                &port.to_string(),
                "-c",
                "20",
                "-i",
                "5ms",
                "--sizes",
                "44,1000",
                "--clock-synced",
                "-J",
            ])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(r["env"]["method"], "stamp");
        assert_eq!(r["summary"]["round_trip"]["sent_packets"], 40);
        assert_eq!(r["summary"]["round_trip"]["received_packets"], 40, "{r}");
        for s in r["series"].as_array().unwrap() {
            let rtt = s["rtt_ms"]["avg"].as_f64().unwrap();
            let ow = &s["one_way"];
            let (f, b) = (
                ow["forward_ms"]["avg"].as_f64().unwrap(),
                ow["backward_ms"]["avg"].as_f64().unwrap(),
            );
            assert_eq!(ow["clock_synced"], true);
            // One clock: out + back is the RTT net of the reflector's dwell.
            assert!((f + b - rtt).abs() < 0.01, "{f} + {b} vs {rtt}");
            assert!(ow["dwell_ms"]["avg"].as_f64().unwrap() >= 0.0);
        }
    }
}

#[test]
fn bad_ping_flags_are_usage_errors() {
    for (args, needle) in [
        (vec!["ping", "::1", "-i", "0ms"], "at least 1ms"),
        (
            vec!["ping", "::1", "--proto", "udp", "-s", "20"],
            "-s/--size or --sizes: 20 bytes",
        ),
        (
            vec!["ping", "::1", "--key-file", "/nonexistent"],
            "--key-file: a key is for STAMP (proto udp)",
        ),
        (vec!["ping", "::1", "--proto", "tcp"], "'tcp'"),
        (
            vec![
                "ping",
                "::1",
                "--proto",
                "udp",
                "--key-file",
                "/nonexistent/key",
            ],
            "/nonexistent/key",
        ),
    ] {
        let o = sonde().args(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
}
