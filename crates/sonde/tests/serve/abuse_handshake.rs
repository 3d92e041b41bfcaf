//! `sonde serve` against clients that never finish their handshake
//! (issue 12, faults 1 and 2), on loopback with real sockets: an iperf3
//! cookie trickled one byte at a time by more connections than the
//! per-source cap, and idle and trickling native connections. In each,
//! valid sonde and iperf3 tests from other sources run during the attack
//! and succeed, the attackers are closed by the handshake deadline, a
//! client over the cap is told the server is full in its own protocol,
//! and the server's memory stays small.
//!
//! The attackers come from 127.0.0.2 and 127.0.0.3 (each its own source
//! for the cap); the valid clients from 127.0.0.1 and ::1.

use crate::attack;
use crate::common;
use attack::{attack, connect_from, peak_rss_kb, trickle, Script, Tally, ATTACK};
use common::iperf3_client::{self, text};
use common::{stderr, tcp, tcp_json, u, ServerProc};
use std::io::Read;
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Handshakes one source may have under way (the server's cap here).
const CAP: u32 = 4;
/// The server's handshake deadline (`HANDSHAKE_DEADLINE`).
const DEADLINE: Duration = Duration::from_secs(5);
/// The memory bound the server must stay under (issue 12).
const RSS_MAX_KB: u64 = 64 * 1024;

/// A server whose per-source cap is [`CAP`], set in its configuration
/// file, or with the flag.
fn server(name: &str, by_flag: bool) -> ServerProc {
    let cap = CAP.to_string();
    if by_flag {
        return ServerProc::start(&["--max-handshakes-per-source", &cap]);
    }
    let path_dir = common::TempDir::new(&format!("abuse-{name}"));
    let path = path_dir.join("abuse.toml");
    std::fs::write(
        &path,
        format!("[limits]\nmax_handshakes_per_source = {cap}\n"),
    )
    .unwrap();
    ServerProc::start(&["--config", path.to_str().unwrap()])
}

/// What the valid clients got during an attack.
struct Valid {
    sonde_bytes: u64,
    iperf3_bytes: f64,
}

/// A valid `sonde tcp -t 1` and a valid `iperf3 -c … -t 1`, from sources
/// other than the attackers'.
fn valid_tests(port: u16) -> Valid {
    let r = tcp_json("127.0.0.1", port, &["-t", "1"]);
    let sonde_bytes = u(&r["summary"]["total"]["received_bytes"]);
    let j = iperf3_client::json("iperf3", "::1", port, &["-t", "1"]);
    let iperf3_bytes = iperf3_client::n(&j["end"]["sum_received"]["bytes"]);
    Valid {
        sonde_bytes,
        iperf3_bytes,
    }
}

/// A sonde client and an iperf3 client from `src`, whose handshakes are
/// over the cap: each must be told the server is full.
fn over_the_cap(src: &str, port: u16) {
    let out = tcp("127.0.0.1", port, &["-B", src, "-t", "1"]);
    let err = stderr(&out);
    assert!(!out.status.success(), "a client over the cap ran: {err}");
    assert!(
        err.contains("max_handshakes_per_source") && err.contains("server is full"),
        "the refusal does not say the server is full: {err}"
    );
    let out = iperf3_client::iperf3("iperf3", "127.0.0.1", port, &["-B", src, "-t", "1"]);
    let said = text(&out);
    assert!(
        !out.status.success(),
        "an iperf3 client over the cap ran: {said}"
    );
    assert!(
        said.contains("busy"),
        "iperf3 was not told the server is busy: {said}"
    );
}

/// Runs `attack` on a thread, and meanwhile the over-the-cap clients and
/// the valid tests; checks and prints what each saw.
fn under_attack(
    name: &str,
    src: &'static str,
    target: usize,
    script: fn(usize) -> Script,
) -> Tally {
    let server = server(name, src.ends_with(".3"));
    let port = server.port;
    let (opened, all_open) = std::sync::mpsc::channel();
    let attacker = std::thread::spawn(move || attack(src, port, target, script, opened));
    // The attackers take their handshakes first: all connected, and all
    // accepted (and so counted against their source) by the server.
    all_open
        .recv_timeout(Duration::from_secs(10))
        .expect("the attackers connected");
    common::ready::wait_accepted(port);
    over_the_cap(src, port);
    let started = Instant::now();
    let valid = valid_tests(port);
    let took = started.elapsed();
    let tally = attacker.join().expect("attack thread");
    let rss = peak_rss_kb(&server);
    eprintln!(
        "{name}: {} attacking connections from {src} over {ATTACK:?}; \
         closed by the server without a word: {} idle (held {:?}), {} trickling (held {:?}); \
         refused: {}; reset: {}; longest held {:?}",
        tally.opened,
        tally.held_idle.len(),
        tally.held_idle,
        tally.held_trickling.len(),
        tally.held_trickling,
        tally.refused.len(),
        tally.reset,
        tally.longest_held(),
    );
    eprintln!(
        "{name}: valid tests during the attack: sonde tcp -t 1 received {} bytes, \
         iperf3 -t 1 received {} bytes (both in {took:?}); server peak RSS {} KiB",
        valid.sonde_bytes, valid.iperf3_bytes, rss
    );
    assert!(valid.sonde_bytes > 0 && valid.iperf3_bytes > 0.0);
    // The valid tests ran while the attack went on.
    assert!(took < ATTACK, "the valid tests outlasted the attack");
    // Every attacker that began a handshake is closed by the deadline
    // (generously bounded), none left to trickle on.
    assert!(
        tally.held().count() >= CAP as usize,
        "the server closed fewer attackers than it held: {tally:?}\n{}",
        server.log()
    );
    assert!(
        tally.longest_held() < DEADLINE + Duration::from_secs(3),
        "an attacker was held past the deadline: {tally:?}"
    );
    assert!(rss < RSS_MAX_KB, "server peak RSS {rss} KiB");
    tally
}

/// An iperf3 cookie (36 base32 characters and a NUL).
const COOKIE: &[u8; 37] = b"abcdefghijklmnopqrstuvwxyz234567abcd\0";

#[test]
fn an_iperf3_cookie_slow_loris_over_the_cap_holds_no_one_out() {
    let tally = under_attack("iperf3-cookie", "127.0.0.2", 2 * CAP as usize, |_| {
        trickle(COOKIE)
    });
    // The attackers over the cap were refused as iperf3 is:
    // ACCESS_DENIED, a single state byte (-1).
    assert!(
        !tally.refused.is_empty(),
        "no attacker was refused: {tally:?}"
    );
    for r in &tally.refused {
        assert_eq!(r, &[0xff], "not ACCESS_DENIED: {r:?}");
    }
    assert_eq!(
        tally.reset, 0,
        "an attacker was reset, not closed: {tally:?}"
    );
}

/// sonde's preamble and a frame header promising a 600-byte message.
const NATIVE_OPENING: &[u8] = b"SOND\x00\x02\x00\x00\x00\x00\x02\x58{\"type\":";

#[test]
fn idle_and_trickling_native_connections_are_closed_by_the_deadline() {
    let tally = under_attack("native-idle-trickle", "127.0.0.3", CAP as usize, |i| {
        trickle(if i % 2 == 0 { &[] } else { NATIVE_OPENING })
    });
    assert!(
        !tally.held_idle.is_empty() && !tally.held_trickling.is_empty(),
        "both kinds are closed: {tally:?}"
    );
}

#[test]
fn over_max_connections_a_client_is_told_the_server_is_full() {
    let server = ServerProc::start(&["--max-connections", "3"]);
    let port = server.port;
    let opened = Instant::now();
    let idle: Vec<TcpStream> = (0..3)
        .map(|_| connect_from("127.0.0.4", port).expect("connect"))
        .collect();
    common::ready::wait_accepted(port);
    let out = tcp("127.0.0.1", port, &["-t", "1"]);
    let err = stderr(&out);
    assert!(
        !out.status.success(),
        "a client over max_connections ran: {err}"
    );
    assert!(
        err.contains("max_connections is 3") && err.contains("server is full"),
        "the refusal does not say the server is full: {err}"
    );
    let out = iperf3_client::iperf3("iperf3", "::1", port, &["-t", "1"]);
    assert!(
        text(&out).contains("busy"),
        "iperf3 was not told: {}",
        text(&out)
    );
    // The idle connections go at the deadline, and with them the cap.
    let mut held = Vec::new();
    for mut s in idle {
        s.set_nonblocking(false).unwrap();
        s.set_read_timeout(Some(DEADLINE * 2)).unwrap();
        let got = s.read(&mut [0u8; 64]);
        assert!(matches!(got, Ok(0)), "not closed by the deadline: {got:?}");
        held.push(opened.elapsed());
    }
    let r = tcp_json("127.0.0.1", port, &["-t", "1"]);
    eprintln!(
        "max_connections 3: idle connections held {held:?}; then a test received {} bytes",
        u(&r["summary"]["total"]["received_bytes"])
    );
}

/// A cookie, then iperf3's parameters: a length promising 64 bytes of
/// JSON, and the JSON's start.
const COOKIE_THEN_PARAMS: &[u8] = b"abcdefghijklmnopqrstuvwxyz234567abcd\0\0\0\0\x40{\"tcp\":true,";

#[test]
fn an_iperf3_client_trickling_its_parameters_is_closed_by_the_deadline() {
    let tally = under_attack("iperf3-params", "127.0.0.5", CAP as usize, |_| Script {
        bytes: COOKIE_THEN_PARAMS,
        burst: COOKIE.len(),
    });
    assert!(
        tally.refused.is_empty(),
        "refused within the cap: {tally:?}"
    );
    assert!(
        tally.param_exchanges >= CAP as usize,
        "the cookies were not answered with PARAM_EXCHANGE: {tally:?}"
    );
    assert_eq!(
        tally.reset, 0,
        "an attacker was reset, not closed: {tally:?}"
    );
}

/// Reads one native frame's payload (its length first).
fn read_frame(s: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len)?;
    let mut payload = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut payload)?;
    Ok(payload)
}

/// A test accepted, then no data connection (TCP) or UDP hello from its
/// client: the server gives up by the handshake deadline, counted from
/// accept, tells the client why, and the slot is free again.
#[test]
fn a_test_whose_client_never_connects_its_streams_ends_by_the_deadline() {
    use sonde_model::{HostEnv, Rate, TcpSpec, TestSpec, UdpSpec};
    use sonde_wire::{encode_message, ClientMessage, Preamble, ServerMessage};
    use std::io::Write;
    let server = ServerProc::start(&["--max-concurrent-tests", "1"]);
    let tcp = TestSpec::Tcp(TcpSpec {
        host: "127.0.0.1".into(),
        time: Duration::from_secs(1),
        ..TcpSpec::default()
    });
    let udp = TestSpec::Udp(UdpSpec {
        host: "127.0.0.1".into(),
        time: Duration::from_secs(1),
        bitrate: Rate::from_bps(1_000_000),
        ..UdpSpec::default()
    });
    for (what, spec, why) in [("TCP", tcp, "data connection"), ("UDP", udp, "UDP hello")] {
        let request = ClientMessage::TestRequest {
            request: spec,
            env: HostEnv::default(),
            live_intervals: false,
            accepts_cuts: false,
        };
        let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
        let opened = Instant::now();
        s.write_all(&Preamble::CURRENT.encode()).unwrap();
        s.write_all(&encode_message(&request).unwrap()).unwrap();
        s.set_read_timeout(Some(DEADLINE * 4)).unwrap();
        s.read_exact(&mut [0u8; 8]).unwrap();
        let accepted: ServerMessage =
            sonde_wire::decode_message(&read_frame(&mut s).unwrap()).unwrap();
        assert!(
            matches!(accepted, ServerMessage::Accepted { .. }),
            "{what}: {accepted:?}"
        );
        let ended = read_frame(&mut s);
        let held = opened.elapsed();
        let Ok(abort) = ended else {
            panic!("{what}: closed without an abort: {ended:?}");
        };
        let abort: ServerMessage = sonde_wire::decode_message(&abort).unwrap();
        eprintln!("a {what} test with no {why}: its slot held {held:?}, then {abort:?}");
        assert!(
            format!("{abort:?}").contains(why),
            "{what}: not an abort for the missing {why}: {abort:?}"
        );
        assert!(
            held < DEADLINE + Duration::from_secs(3),
            "{what}: the test slot was held {held:?}"
        );
        // Its slot is free again.
        tcp_json("127.0.0.1", server.port, &["-t", "1"]);
    }
}
