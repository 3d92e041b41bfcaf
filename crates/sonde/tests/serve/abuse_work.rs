//! `max_duration` bounds the work and one connection bounds the memory
//! (docs/serve.md, "What each limit bounds"): raw protocol clients that
//! keep sending after their time, go silent in a reverse test, vanish
//! after their request, or send a maximal report frame. Each attack is
//! followed by a valid test that must get the server's only slot.
//! Measured figures go to stderr (`--nocapture`).

use crate::common;
use common::{tcp, ServerProc};
use sonde_engine::control::Control;
use sonde_engine::host_env::host_env;
use sonde_model::{Direction, TcpSpec, TestSpec};
use sonde_wire::{ClientMessage, ServerMessage, TestId, HANDSHAKE_FRAME_MAX};
use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// The longest any attack here may hold the slot: the test's time, the
/// server's 5 s grace and a wide margin (before the bound: 33 s, 43 s).
const SLOT_BOUND: Duration = Duration::from_secs(20);

fn spec(port: u16, time: f64, parallel: u16, direction: Direction) -> TcpSpec {
    TcpSpec {
        host: "::1".into(),
        port,
        time: Duration::from_secs_f64(time),
        parallel,
        direction,
        ..TcpSpec::default()
    }
}

/// Sends the request; returns the control connection and the server's
/// answer.
fn request(port: u16, s: &TcpSpec) -> (Control, ServerMessage) {
    let mut c = Control::new(TcpStream::connect(("::1", port)).unwrap());
    c.send_preamble().unwrap();
    c.send(&ClientMessage::TestRequest {
        request: TestSpec::Tcp(s.clone()),
        env: host_env(),
        live_intervals: false,
        accepts_cuts: false,
    })
    .unwrap();
    c.recv_preamble(Duration::from_secs(10)).unwrap();
    let answer = c
        .recv(HANDSHAKE_FRAME_MAX, Duration::from_secs(10), "the answer")
        .unwrap();
    (c, answer)
}

/// An admitted test with its data connections open and started.
fn started(port: u16, s: &TcpSpec) -> (Control, Vec<TcpStream>) {
    let (mut c, answer) = request(port, s);
    let ServerMessage::Accepted { test_id, .. } = answer else {
        panic!("not accepted: {answer:?}");
    };
    let data = (0..s.parallel)
        .map(|i| data_stream(port, test_id, i))
        .collect();
    let start: ServerMessage = c
        .recv(HANDSHAKE_FRAME_MAX, Duration::from_secs(10), "start")
        .unwrap();
    assert!(matches!(start, ServerMessage::Start), "{start:?}");
    (c, data)
}

fn data_stream(port: u16, test_id: TestId, stream: u16) -> TcpStream {
    let mut d = Control::new(TcpStream::connect(("::1", port)).unwrap());
    d.send_preamble().unwrap();
    d.send(&ClientMessage::StreamHello { test_id, stream })
        .unwrap();
    d.into_stream()
}

/// Runs valid 1 s tests until one gets the slot (others are refused as
/// busy); returns how long after `since` that one started, and how many
/// were refused first.
fn slot_free_after(port: u16, since: Instant) -> (Duration, u32) {
    let mut busy = 0;
    loop {
        let at = since.elapsed();
        let o = tcp("::1", port, &["-t", "1s"]);
        if o.status.success() {
            return (at, busy);
        }
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(err.contains("max_concurrent_tests"), "{err}");
        assert!(at < SLOT_BOUND, "slot still held after {at:?}");
        busy += 1;
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn rss_kb(pid: u32, key: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in /proc/{pid}/status"))
}

#[test]
fn a_client_that_keeps_sending_is_cut_off_after_its_time_and_grace() {
    let server = ServerProc::start(&["--max-concurrent-tests", "1"]);
    let (_control, mut data) = started(server.port, &spec(server.port, 2.0, 1, Direction::Forward));
    let start = Instant::now();
    let mut d = data.remove(0);
    d.set_write_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let chunk = vec![0u8; 128 * 1024];
    let (mut sent, mut last_ok) = (0u64, Duration::ZERO);
    // Pushes for at most 30 s; the server stops reading at 2 s + 5 s.
    while start.elapsed() < Duration::from_secs(30) {
        match d.write(&chunk) {
            Ok(n) => {
                sent += n as u64;
                last_ok = start.elapsed();
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => break,
        }
        if start.elapsed() - last_ok > Duration::from_secs(3) {
            break; // nothing taken for 3 s: the server no longer reads
        }
    }
    eprintln!(
        "keep-sending (-t 2): last write taken at {:.1} s, {} MB pushed",
        last_ok.as_secs_f64(),
        sent / 1_000_000
    );
    assert!(last_ok < SLOT_BOUND, "still read at {last_ok:?}");
    let (free, busy) = slot_free_after(server.port, start);
    eprintln!(
        "keep-sending: slot free {:.1} s after start ({busy} valid tests refused as busy first)",
        free.as_secs_f64()
    );
}

#[test]
fn a_silent_reverse_client_frees_the_slot_after_its_time_and_grace() {
    let server = ServerProc::start(&["--max-concurrent-tests", "1"]);
    let (_control, _data) = started(server.port, &spec(server.port, 2.0, 1, Direction::Reverse));
    let start = Instant::now();
    // Never reads, never reports.
    let (free, busy) = slot_free_after(server.port, start);
    eprintln!(
        "silent reverse (-t 2 -R): slot free {:.1} s after start ({busy} valid tests refused first)",
        free.as_secs_f64()
    );
    assert!(free >= Duration::from_secs(2), "freed before its time");
}

#[test]
fn requests_abandoned_before_their_start_do_not_hold_the_slot() {
    let server = ServerProc::start(&["--max-concurrent-tests", "1"]);
    let mut held = Vec::new();
    let mut since = Instant::now();
    for _ in 0..8 {
        // Accepted as soon as the server has seen the last one vanish.
        let c = loop {
            let (c, answer) = request(server.port, &spec(server.port, 2.0, 1, Direction::Forward));
            match answer {
                ServerMessage::Accepted { .. } => break c,
                ServerMessage::Refused { .. } if since.elapsed() < SLOT_BOUND => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                other => panic!("{other:?} {:?} after a disconnect", since.elapsed()),
            }
        };
        held.push(since.elapsed());
        drop(c);
        since = Instant::now();
    }
    let since = Instant::now();
    let (free, busy) = slot_free_after(server.port, since);
    let worst = held.iter().max().unwrap();
    eprintln!(
        "request-then-disconnect x8: slot held at most {:.2} s after a disconnect; \
         valid test after {:.2} s ({busy} busy first)",
        worst.as_secs_f64(),
        free.as_secs_f64()
    );
    assert!(*worst < Duration::from_secs(5), "held {worst:?}");
}

#[test]
fn a_test_the_server_ends_tells_the_client_why_and_closes_without_a_reset() {
    let server = ServerProc::start(&[]);
    let (mut c, _data) = started(server.port, &spec(server.port, 3.0, 1, Direction::Forward));
    // Another message where the report belongs, then more bytes the
    // server will not read: closing on them would reset the connection
    // and discard the server's reason before the client reads it.
    let id = TestId([7; 16]);
    c.send(&ClientMessage::StreamHello {
        test_id: id,
        stream: 0,
    })
    .unwrap();
    let mut s = c.stream().try_clone().unwrap();
    s.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
    let _ = s.write_all(&[0x55; 32 * 1024]);
    let answer: ServerMessage = c
        .recv(HANDSHAKE_FRAME_MAX, Duration::from_secs(10), "the abort")
        .unwrap_or_else(|e| panic!("no abort: {e}\n{}", server.log()));
    let ServerMessage::Abort { reason } = answer else {
        panic!("{answer:?}");
    };
    assert!(reason.contains("the client's report"), "{reason}");
    // Then an orderly close.
    let end = c.recv::<ServerMessage>(HANDSHAKE_FRAME_MAX, Duration::from_secs(10), "the close");
    assert!(
        matches!(end, Err(sonde_engine::EngineError::Closed { .. })),
        "{end:?}"
    );
    // A valid test gets the slot.
    let r = tcp("::1", server.port, &["-t", "1s", "-J"]);
    assert!(r.status.success(), "{}", common::stderr(&r));
}

#[test]
fn a_maximal_report_frame_is_refused_by_name_within_the_memory_bound() {
    let mut server = ServerProc::start(&[]);
    let port = server.port;
    // What the report-frame cap used to grow with: refused up front.
    let o = tcp("::1", port, &["-P", "128", "-t", "290", "-i", "0.1"]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("report_size is 24 MiB"), "{err}");
    let mut huge = spec(port, 290.0, 128, Direction::Forward);
    huge.interval = Duration::from_millis(100);
    let (_, answer) = request(port, &huge);
    assert!(
        matches!(&answer, ServerMessage::Refused { refusal } if refusal.to_string().contains("report_size")),
        "{answer:?}"
    );

    let before = rss_kb(server.pid(), "VmRSS:");
    // About the largest test admitted: 128 streams, 32.3 s, 0.1 s
    // intervals (a report of up to 23.9 MiB).
    let mut big = spec(port, 32.3, 128, Direction::Forward);
    big.interval = Duration::from_millis(100);
    let cap = sonde_engine::tcp::protocol::report_frame_cap(&big);
    assert!(cap > sonde_engine::tcp::protocol::MAX_REPORT_FRAME * 99 / 100);
    // A header over the cap, then a frame of the cap filled with junk.
    for (len, junk) in [(cap + 1, 0usize), (cap, cap)] {
        let (c, _data) = started(port, &big);
        let mut s = c.into_stream();
        s.write_all(&u32::try_from(len).unwrap().to_be_bytes())
            .unwrap();
        let filler = vec![b'['; 1 << 20];
        let mut left = junk;
        while left > 0 {
            let n = left.min(filler.len());
            if s.write_all(&filler[..n]).is_err() {
                break;
            }
            left -= n;
        }
        let mut c = Control::new(s);
        let reply: ServerMessage = c
            .recv(HANDSHAKE_FRAME_MAX, Duration::from_secs(20), "the refusal")
            .unwrap();
        let ServerMessage::Abort { reason } = reply else {
            panic!("{reply:?}");
        };
        eprintln!("report frame of {len} bytes: {reason}");
        if junk == 0 {
            assert!(reason.contains("over the"), "{reason}");
        } else {
            assert!(reason.contains("malformed"), "{reason}");
        }
    }
    let peak = rss_kb(server.pid(), "VmHWM:");
    eprintln!(
        "maximal report frame ({:.1} MiB cap): server RSS {:.1} MB before, peak {:.1} MB",
        cap as f64 / 1048576.0,
        before as f64 / 1000.0,
        peak as f64 / 1000.0
    );
    assert!(peak < 64_000, "peak RSS {peak} kB");
    assert!(server.is_running());
    let r = common::tcp_json("::1", port, &["-t", "1s"]);
    assert!(common::u(&r["summary"]["total"]["received_bytes"]) > 0);
}

/// Reads iperf3 state bytes until `want` (or panics at another end).
fn iperf3_state(c: &mut TcpStream, want: i8) -> Instant {
    use std::io::Read;
    let mut b = [0u8; 1];
    c.read_exact(&mut b).unwrap();
    assert_eq!(b[0] as i8, want, "iperf3 state");
    Instant::now()
}

const COOKIE: &[u8; 37] = b"abusework0123456789abcdefghijklmnopq\0";

/// An iperf3 TCP test of 2 s asked for and admitted (CREATE_STREAMS
/// read): its control connection.
fn iperf3_admitted(port: u16) -> TcpStream {
    let mut c = TcpStream::connect(("::1", port)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    c.write_all(COOKIE).unwrap();
    iperf3_state(&mut c, 9); // PARAM_EXCHANGE
    let params = br#"{"tcp":true,"omit":0,"time":2,"num":0,"blockcount":0,"parallel":1,"len":131072,"pacing_timer":1000,"client_version":"3.12"}"#;
    c.write_all(&(params.len() as u32).to_be_bytes()).unwrap();
    c.write_all(params).unwrap();
    iperf3_state(&mut c, 10); // CREATE_STREAMS
    c
}

#[test]
fn an_iperf3_client_gone_before_its_streams_frees_the_slot() {
    let server = ServerProc::start(&["--max-concurrent-tests", "1"]);
    let mut worst = Duration::ZERO;
    for _ in 0..4 {
        drop(iperf3_admitted(server.port));
        let (free, _) = slot_free_after(server.port, Instant::now());
        worst = worst.max(free);
    }
    eprintln!(
        "iperf3 request-then-disconnect x4: valid test got the slot at most {:.2} s after",
        worst.as_secs_f64()
    );
    assert!(worst < Duration::from_secs(5), "held {worst:?}");
}

#[test]
fn an_iperf3_test_that_outlives_its_time_is_ended_by_the_server() {
    let server = ServerProc::start(&["--max-concurrent-tests", "1"]);
    let port = server.port;
    let mut c = iperf3_admitted(port);
    let mut d = TcpStream::connect(("::1", port)).unwrap();
    d.write_all(COOKIE).unwrap();
    iperf3_state(&mut c, 1); // TEST_START
    let start = iperf3_state(&mut c, 2); // TEST_RUNNING
                                         // Sends, and never says TEST_END.
    let pusher = std::thread::spawn(move || {
        let chunk = vec![0u8; 128 * 1024];
        let _ = d.set_write_timeout(Some(Duration::from_secs(5)));
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(30) && d.write_all(&chunk).is_ok() {}
        t.elapsed()
    });
    let ended = iperf3_state(&mut c, 11); // SERVER_TERMINATE
    let ended = ended.duration_since(start);
    let pushed = pusher.join().unwrap();
    eprintln!(
        "iperf3 -t 2 without TEST_END: SERVER_TERMINATE at {:.1} s, data refused after {:.1} s",
        ended.as_secs_f64(),
        pushed.as_secs_f64()
    );
    // Its time, the 5 s grace, and 4 s to spare (before the grace: 12 s).
    assert!(
        ended >= Duration::from_secs(2) && ended < Duration::from_secs(11),
        "{ended:?}"
    );
    let (free, busy) = slot_free_after(port, start);
    eprintln!(
        "iperf3 outliving its time: slot free {:.1} s after start ({busy} busy first)",
        free.as_secs_f64()
    );
}
