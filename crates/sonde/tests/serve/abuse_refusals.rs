//! `sonde serve` against a hostile client's malformed input (issue 12,
//! faults 5 and 6), on loopback with real sockets: every malformed
//! native request is refused with a frame naming the field; malformed
//! iperf3 parameters get iperf3's error number; a flood from many
//! source addresses is answered by the STAMP reflector at no more than
//! its overall cap; a trace, ping or HTTP test asked of the control port
//! is refused and sends nothing. After each, the server still runs valid tests.

use crate::common;
use common::ServerProc;
use sonde_wire::iperf3::{errno, ServerError, State};
use sonde_wire::stamp::{ErrorEstimate, Mode, NtpTimestamp, SenderPacket, TimestampFormat};
use sonde_wire::{
    decode_message, encode_frame, Preamble, Refusal, ServerMessage, FRAME_HEADER_LEN, PREAMBLE_LEN,
};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

const ENV: &str = r#"{"sonde_version":"0.1.0","os":"linux","kernel":"6","hostname":"h","cpus":2,"default_congestion":null}"#;

fn request(spec: &str) -> Vec<u8> {
    format!(r#"{{"type":"test_request","request":{spec},"env":{ENV}}}"#).into_bytes()
}

fn connect(port: u16) -> TcpStream {
    let s = TcpStream::connect(("::1", port)).expect("connect to the server");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// The server's answer on `s`: its preamble, then one message.
fn answer(mut s: TcpStream) -> ServerMessage {
    let mut preamble = [0u8; PREAMBLE_LEN];
    s.read_exact(&mut preamble)
        .expect("the server answers with its preamble, not a silent close");
    let mut header = [0u8; FRAME_HEADER_LEN];
    s.read_exact(&mut header).expect("a frame header");
    let mut payload = vec![0u8; u32::from_be_bytes(header) as usize];
    s.read_exact(&mut payload).expect("the frame");
    decode_message(&payload).expect("a server message")
}

/// What a connection sends: the preamble's reserved bytes, then raw bytes.
struct Case {
    name: &'static str,
    reserved: [u8; 2],
    bytes: Vec<u8>,
    /// Half-close after sending (a frame cut short).
    close: bool,
    field: &'static str,
}

fn frame(payload: &[u8]) -> Vec<u8> {
    encode_frame(payload).unwrap()
}

fn case(name: &'static str, payload: &[u8], field: &'static str) -> Case {
    Case {
        name,
        reserved: [0, 0],
        bytes: frame(payload),
        close: false,
        field,
    }
}

fn native_cases() -> Vec<Case> {
    let mut truncated = 100u32.to_be_bytes().to_vec();
    truncated.extend_from_slice(br#"{"type":"test_req"#);
    vec![
        case(
            "wrong type",
            &request(r#"{"test":"tcp","host":"::1","parallel":"two"}"#),
            "parallel",
        ),
        case(
            "over u16",
            &request(r#"{"test":"tcp","host":"::1","parallel":70000}"#),
            "parallel",
        ),
        case(
            "negative duration",
            &request(r#"{"test":"tcp","host":"::1","time_s":-5}"#),
            "time_s",
        ),
        case(
            "spec rule: no streams",
            &request(r#"{"test":"tcp","host":"::1","parallel":0}"#),
            "parallel",
        ),
        case(
            "udp length of the wrong type",
            &request(r#"{"test":"udp","host":"::1","length_bytes":[1]}"#),
            "length_bytes",
        ),
        case(
            "unknown field",
            &request(r#"{"test":"tcp","host":"::1","colour":"red"}"#),
            "colour",
        ),
        case("unknown test", &request(r#"{"test":"quic"}"#), "test"),
        case("request not an object", &request("42"), "request"),
        case(
            "env of the wrong type",
            &format!(
                r#"{{"type":"test_request","request":{{"test":"tcp","host":"::1"}},"env":{}}}"#,
                ENV.replace("\"cpus\":2", "\"cpus\":\"many\"")
            )
            .into_bytes(),
            "env.cpus",
        ),
        case(
            "no env",
            br#"{"type":"test_request","request":{"test":"tcp","host":"::1"}}"#,
            "env",
        ),
        case("type of the wrong type", br#"{"type":7}"#, "type"),
        case("unknown type", br#"{"type":"hello"}"#, "type"),
        case("no type", br#"{"request":{}}"#, "type"),
        case("stop first", br#"{"type":"stop"}"#, "type"),
        case(
            "bad test id",
            br#"{"type":"stream_hello","test_id":"zz","stream":0}"#,
            "test_id",
        ),
        case(
            "negative stream",
            br#"{"type":"stream_hello","test_id":"00000000000000000000000000000000","stream":-1}"#,
            "stream",
        ),
        case("not JSON", br#"{"type":"#, "message"),
        case("not an object", b"[1,2,3]", "message"),
        Case {
            name: "reserved preamble bytes",
            reserved: [0xff, 0xff],
            bytes: frame(&request(r#"{"test":"tcp","host":"::1"}"#)),
            close: false,
            field: "preamble.reserved",
        },
        Case {
            name: "truncated frame",
            reserved: [0, 0],
            bytes: truncated,
            close: true,
            field: "frame",
        },
        Case {
            name: "empty frame",
            reserved: [0, 0],
            bytes: 0u32.to_be_bytes().to_vec(),
            close: false,
            field: "frame",
        },
        Case {
            name: "frame over the cap",
            reserved: [0, 0],
            bytes: (1u32 << 30).to_be_bytes().to_vec(),
            close: false,
            field: "frame",
        },
    ]
}

#[test]
fn each_malformed_native_request_is_refused_by_its_field() {
    let server = ServerProc::start(&["--no-reflector"]);
    let cases = native_cases();
    let mut named = 0;
    for c in &cases {
        let mut s = connect(server.port);
        let mut preamble = Preamble::CURRENT;
        preamble.reserved = c.reserved;
        s.write_all(&preamble.encode()).unwrap();
        s.write_all(&c.bytes).unwrap();
        if c.close {
            s.shutdown(Shutdown::Write).unwrap();
        }
        match answer(s) {
            ServerMessage::Refused {
                refusal: Refusal::InvalidSpec { field, detail },
            } => {
                eprintln!("{:<30} refused: {field}: {detail}", c.name);
                assert_eq!(field, c.field, "{}: {detail}", c.name);
                assert!(!detail.is_empty(), "{}", c.name);
                named += 1;
            }
            other => panic!("{}: not a named refusal: {other:?}", c.name),
        }
    }
    eprintln!(
        "{named} of {} malformed requests refused by name",
        cases.len()
    );
    // The server serves on.
    let ok = common::tcp_json("::1", server.port, &["-t", "1"]);
    assert!(
        common::u(&ok["summary"]["forward"]["received_bytes"]) > 0,
        "{ok}"
    );
}

/// A hostile client asks the control port for what it does not run:
/// a trace (UDP probes to port 33434, Paris traceroute's), a ping, an
/// HTTP benchmark, each aimed at a socket of this test. Each is refused as
/// unavailable, named, and nothing reaches the sockets: the server sends
/// no probe, no echo, no request on a client's word.
#[test]
fn tests_the_control_port_does_not_run_are_refused_and_send_nothing() {
    let server = ServerProc::start(&["--no-reflector"]);
    let probes = UdpSocket::bind("[::1]:33434").expect("port 33434 on ::1 for the trace's probes");
    probes.set_nonblocking(true).unwrap();
    let web = std::net::TcpListener::bind("[::1]:0").unwrap();
    web.set_nonblocking(true).unwrap();
    let url = format!("http://[::1]:{}/", web.local_addr().unwrap().port());
    let cases = [
        (
            r#"{"test":"trace","host":"::1","proto":"udp","queries":3}"#.to_string(),
            "traces",
        ),
        (r#"{"test":"ping","host":"::1"}"#.to_string(), "ping tests"),
        (
            format!(r#"{{"test":"http","url":"{url}","time_s":2}}"#),
            "http tests",
        ),
    ];
    for (spec, named) in &cases {
        let mut s = connect(server.port);
        s.write_all(&Preamble::CURRENT.encode()).unwrap();
        s.write_all(&frame(&request(spec))).unwrap();
        match answer(s) {
            ServerMessage::Refused {
                refusal: Refusal::Unavailable { what },
            } => assert!(what.starts_with(named), "{spec}: {what}"),
            other => panic!("{spec}: not refused as unavailable: {other:?}"),
        }
    }
    // Time for anything started to arrive; then nothing has.
    std::thread::sleep(Duration::from_secs(1));
    let mut buf = [0u8; 2048];
    assert!(
        probes.recv_from(&mut buf).is_err(),
        "a trace probe reached port 33434"
    );
    assert!(web.accept().is_err(), "an HTTP request reached {url}");
    // The server serves on.
    let ok = common::tcp_json("::1", server.port, &["-t", "1"]);
    assert!(
        common::u(&ok["summary"]["forward"]["received_bytes"]) > 0,
        "{ok}"
    );
}

/// An iperf3 client's exchange up to its parameters, by hand: cookie,
/// PARAM_EXCHANGE, then `params` as iperf3 frames them. The answer: the
/// state byte, and the error codes after a SERVER_ERROR.
fn iperf3_params(port: u16, n: usize, params: &[u8]) -> (u8, Option<ServerError>) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut cookie = format!("abuserefusals{n:0>23}").into_bytes();
    cookie.push(0);
    assert_eq!(cookie.len(), 37);
    s.write_all(&cookie).unwrap();
    let mut state = [0u8; 1];
    s.read_exact(&mut state).unwrap();
    assert_eq!(state[0], State::ParamExchange.to_byte());
    s.write_all(&(params.len() as u32).to_be_bytes()).unwrap();
    s.write_all(params).unwrap();
    s.read_exact(&mut state)
        .expect("an answer to the parameters, not a silent close");
    if state[0] != State::ServerError.to_byte() {
        return (state[0], None);
    }
    let mut codes = [0u8; 8];
    s.read_exact(&mut codes).unwrap();
    (state[0], Some(ServerError::decode(&codes).unwrap()))
}

#[test]
fn malformed_iperf3_parameters_get_an_iperf3_error_number() {
    let server = ServerProc::start(&["--no-reflector"]);
    let cases: [(&str, &[u8], i32); 8] = [
        (
            "parallel of the wrong type",
            br#"{"tcp":true,"parallel":"many"}"#,
            errno::IENUMSTREAMS,
        ),
        (
            "negative time",
            br#"{"tcp":true,"time":-3}"#,
            errno::IEDURATION,
        ),
        (
            "len as a string",
            br#"{"tcp":true,"len":"big"}"#,
            errno::IEBLOCKSIZE,
        ),
        (
            "omit as an array",
            br#"{"udp":true,"omit":[1]}"#,
            errno::IEOMIT,
        ),
        (
            "title as a number",
            br#"{"tcp":true,"title":5}"#,
            errno::IERECVPARAMS,
        ),
        (
            "two protocols",
            br#"{"tcp":true,"udp":true}"#,
            errno::IERECVPARAMS,
        ),
        ("not JSON", b"{tcp", errno::IERECVPARAMS),
        ("not an object", b"[]", errno::IERECVPARAMS),
    ];
    for (i, (name, params, want)) in cases.iter().enumerate() {
        let (state, error) = iperf3_params(server.port, i, params);
        let error = error.unwrap_or_else(|| panic!("{name}: state {state}, not SERVER_ERROR"));
        eprintln!(
            "{name:<28} answered {} ({})",
            error.i_errno,
            error.name().unwrap_or("?")
        );
        assert_eq!(error.i_errno, *want, "{name}");
    }
    // A real iperf3 client still tests.
    let out = std::process::Command::new("/usr/bin/iperf3")
        .args(["-c", "127.0.0.1", "-p", &server.port.to_string(), "-t", "1"])
        .output()
        .expect("run iperf3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

fn stamp_request(seq: u32) -> Vec<u8> {
    SenderPacket {
        seq,
        timestamp: NtpTimestamp::from_unix_nanos(1_700_000_000_000_000_000),
        error_estimate: ErrorEstimate {
            synchronized: false,
            format: TimestampFormat::Ntp,
            scale: 0,
            multiplier: 1,
        },
        len: 44,
    }
    .encode(&Mode::Unauthenticated)
    .unwrap()
}

/// 20 source addresses (127.0.0.2 to 127.0.0.21), 1000 requests each
/// over about a second: each source is within its own limit (1000/s),
/// so only the overall cap (2000/s, a burst of 200) holds them back.
#[test]
fn a_many_source_flood_is_answered_at_no_more_than_the_overall_cap() {
    const SOURCES: u8 = 20;
    const EACH: u32 = 1000;
    const CAP: f64 = 2000.0;
    const BURST: f64 = 200.0;
    let dir = common::TempDir::new("abuse-refusals");
    let config = dir.join("serve.toml");
    std::fs::write(&config, "[reflector]\ntotal_rate_limit = 2000\n").unwrap();
    let server = ServerProc::start(&[
        "--config",
        config.to_str().unwrap(),
        "--reflector-port",
        "0",
    ]);
    let port = server.reflector_port();
    let senders: Vec<UdpSocket> = (0..SOURCES)
        .map(|i| {
            let s = UdpSocket::bind(("127.0.0.".to_string() + &(i + 2).to_string(), 0))
                .expect("bind a loopback source address");
            s.connect(("127.0.0.1", port)).unwrap();
            s.set_nonblocking(true).unwrap();
            s
        })
        .collect();
    let packet = stamp_request(1);
    let mut buf = [0u8; 256];
    let mut answers = 0u64;
    let mut drain = |senders: &[UdpSocket], answers: &mut u64| {
        for s in senders {
            while s.recv(&mut buf).is_ok() {
                *answers += 1;
            }
        }
    };
    let start = Instant::now();
    let mut sent = 0u64;
    for i in 0..EACH {
        for s in &senders {
            if s.send(&packet).is_ok() {
                sent += 1;
            }
        }
        // Paced to 1000 rounds a second.
        let due = start + Duration::from_millis(u64::from(i + 1));
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        drain(&senders, &mut answers);
    }
    let elapsed = start.elapsed().as_secs_f64();
    let end = Instant::now() + Duration::from_millis(300);
    while Instant::now() < end {
        drain(&senders, &mut answers);
        std::thread::sleep(Duration::from_millis(10));
    }
    // Answers may still leave for 0.3 s after the last request.
    let allowed = BURST + CAP * (elapsed + 0.3);
    eprintln!(
        "reflector flood: {sent} requests from {SOURCES} sources in {elapsed:.2} s, \
         {answers} answered (cap {CAP}/s: at most {allowed:.0})"
    );
    assert!(
        sent >= u64::from(SOURCES) * u64::from(EACH) * 9 / 10,
        "{sent} sent"
    );
    assert!(
        (answers as f64) <= allowed,
        "{answers} answers over the cap"
    );
    assert!(answers as f64 >= BURST, "the burst is answered: {answers}");
    assert!(server.wait_for_log("overall rate cap"), "{}", server.log());
    assert!(server.wait_for_log("over_total="), "{}", server.log());
    let _ = std::fs::remove_dir_all(&dir);
}
