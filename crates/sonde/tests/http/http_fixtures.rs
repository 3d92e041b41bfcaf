//! The peers `sonde http` is tested against, checked on their own with
//! plain sockets and curl: nginx answers on ::1 and 127.0.0.1, over TLS with
//! HTTP/2; the in-process server's programmed delays arrive as programmed
//! (within 1 ms: that is what the later tests rely on), its workers cap its
//! throughput, and a stall holds its answers.

use crate::common;
use common::timing;

use common::http_server::HttpServer;
use common::nginx::{self, Nginx};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

/// One response read off a raw socket: status, body, and when the headers
/// and the body's first byte arrived.
struct Answer {
    status: u16,
    body: Vec<u8>,
    headers_at: Instant,
    first_byte_at: Instant,
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect to the fixture");
    s.set_nodelay(true).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// Writes a GET for `target` and reads one Content-Length-framed answer.
fn get(s: &mut TcpStream, target: &str, close: bool) -> (Instant, Answer) {
    let conn = if close { "close" } else { "keep-alive" };
    let request = format!("GET {target} HTTP/1.1\r\nHost: fixture\r\nConnection: {conn}\r\n\r\n");
    // Before the write: the server cannot start its clock earlier.
    let sent = Instant::now();
    s.write_all(request.as_bytes()).unwrap();
    (sent, read_answer(s))
}

fn read_answer(s: &mut TcpStream) -> Answer {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 64 * 1024];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = s.read(&mut chunk).expect("read the answer's head");
        assert!(
            n > 0,
            "closed before the head ended: {:?}",
            String::from_utf8_lossy(&buf)
        );
        buf.extend_from_slice(&chunk[..n]);
    };
    let headers_at = Instant::now();
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map(|v| v.trim().parse().unwrap())
        .expect("Content-Length framing");
    let mut body = buf.split_off(head_end);
    let mut first_byte_at = headers_at;
    if body.is_empty() && length > 0 {
        let n = s.read(&mut chunk).expect("read the body");
        assert!(n > 0, "closed before the body");
        first_byte_at = Instant::now();
        body.extend_from_slice(&chunk[..n]);
    }
    while body.len() < length {
        let n = s.read(&mut chunk).expect("read the body");
        assert!(n > 0, "closed after {} of {length} body bytes", body.len());
        body.extend_from_slice(&chunk[..n]);
    }
    Answer {
        status,
        body,
        headers_at,
        first_byte_at,
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// curl's `-w` figures for one request; panics if curl fails.
fn curl(args: &[&str], url: &str) -> String {
    let out = Command::new("curl")
        .args(["-sS", "-o", "/dev/null", "--max-time", "10"])
        .args(["-w", "%{http_version} %{http_code} %{size_download}"])
        .args(args)
        .arg(url)
        .output()
        .expect("curl (installed by scripts/system-deps.sh)");
    assert!(
        out.status.success(),
        "curl {args:?} {url}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn nginx_serves_its_files_on_v6_and_v4() {
    let nginx = Nginx::start();
    for host in ["::1", "127.0.0.1"] {
        let addr = SocketAddr::new(host.parse().unwrap(), nginx.http_port());
        let mut s = connect(addr);
        // One connection, kept alive across the three.
        for (path, size) in [("/0", 0), ("/1k", 1024), ("/100k", 100 * 1024)] {
            let (_, a) = get(&mut s, path, false);
            assert_eq!(a.status, 200, "{host} {path}");
            assert_eq!(a.body, nginx::body(size), "{host} {path}");
        }
        let (_, a) = get(&mut s, "/", true);
        assert_eq!(a.status, 200);
        assert!(String::from_utf8_lossy(&a.body).contains("<title>sonde</title>"));
        let (_, missing) = get(&mut connect(addr), "/nothing", true);
        assert_eq!(missing.status, 404);
    }
    assert_eq!(curl(&[], &nginx.http_url_v4("/1k")), "1.1 200 1024");
}

#[test]
fn nginx_speaks_tls_and_http2() {
    let nginx = Nginx::builder().file("/1m", 1 << 20).start();
    let url = nginx.https_url("/1m");
    assert_eq!(curl(&["--http2", "-k"], &url), "2 200 1048576");
    // Its certificate verifies for ::1 and 127.0.0.1 when trusted.
    let cert = nginx.cert_path();
    let cacert = ["--cacert", cert.to_str().unwrap()];
    assert_eq!(
        curl(&[&["--http2"][..], &cacert].concat(), &url),
        "2 200 1048576"
    );
    let v4 = url.replace("[::1]", "127.0.0.1");
    assert_eq!(
        curl(&[&["--http1.1"][..], &cacert].concat(), &v4),
        "1.1 200 1048576"
    );
}

#[test]
fn nginx_stops_with_its_workers() {
    let nginx = Nginx::builder().workers(3).start();
    let pid = nginx.pid();
    // The master forks its workers after it listens: give them a moment.
    let end = Instant::now() + Duration::from_secs(5);
    while process_group(pid) < 4 && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(process_group(pid), 4, "a master and 3 workers");
    drop(nginx);
    assert_eq!(process_group(pid), 0, "nothing of nginx is left");
}

/// How many processes are in process group `pgrp` (field 5 of
/// /proc/PID/stat, after the command name in parentheses).
fn process_group(pgrp: u32) -> usize {
    let want = pgrp.to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("stat")).ok())
        .filter(|stat| {
            let fields = stat.rsplit_once(") ").map_or("", |(_, rest)| rest);
            fields.split_whitespace().nth(2) == Some(want.as_str())
        })
        .count()
}

#[test]
fn delays_arrive_as_programmed_within_a_millisecond() {
    let _one_at_a_time = timing();
    let server = HttpServer::start();
    let mut s = connect(server.addr());
    let cases = [
        (20.0, 10.0, 1000),
        (5.0, 0.0, 1),
        (0.0, 30.0, 200_000),
        (2.5, 1.5, 10),
    ];
    // Never early, and under a millisecond late at best. A shared machine's
    // scheduler only ever adds delay, so the quickest of the tries is the
    // fixture's own timing: a fixture late every time (a timer's rounding,
    // headers not flushed) fails, and so does one early even once; a busy
    // spell on the machine only costs more tries.
    const MAX_TRIES: usize = 30;
    let mut requests = 0;
    for (ttfb, transfer, size) in cases {
        let target = format!("/delay?ttfb_ms={ttfb}&transfer_ms={transfer}&size={size}");
        let (mut to_headers, mut to_body) = (Vec::new(), Vec::new());
        let on_time = |got: &[f64], want: f64| got.iter().any(|&t| t < want + 1.0);
        while to_headers.len() < MAX_TRIES
            && !(on_time(&to_headers, ttfb) && on_time(&to_body, ttfb + transfer))
        {
            let (sent, a) = get(&mut s, &target, false);
            requests += 1;
            assert_eq!((a.status, a.body.len()), (200, size));
            let (h, b) = (ms(a.headers_at - sent), ms(a.first_byte_at - sent));
            // To the body's first byte: the rest is the bytes' own time.
            assert!(
                h >= ttfb && b >= ttfb + transfer,
                "{target}: early: {h:.3} {b:.3} ms"
            );
            to_headers.push(h);
            to_body.push(b);
        }
        assert!(
            on_time(&to_headers, ttfb),
            "{target}: headers after {to_headers:.3?} ms"
        );
        let want = ttfb + transfer;
        assert!(
            on_time(&to_body, want),
            "{target}: body after {to_body:.3?} ms, want {want}"
        );
    }
    assert_eq!(server.served(), requests);
    assert_eq!(server.connections(), 1, "kept alive");
}

#[test]
fn connection_close_is_honoured_and_status_is_set() {
    let server = HttpServer::start();
    let mut s = connect(server.addr());
    let (_, a) = get(&mut s, "/?status=503&size=3", true);
    assert_eq!((a.status, a.body.len()), (503, 3));
    let mut rest = Vec::new();
    assert_eq!(
        s.read_to_end(&mut rest).unwrap(),
        0,
        "closed after the answer"
    );
    // The same port on 127.0.0.1.
    assert_eq!(curl(&[], &server.url_v4("/?size=9")), "1.1 200 9");
    assert_eq!(server.connections(), 2);
}

#[test]
fn eight_workers_of_five_ms_cap_the_rate_near_1600() {
    let _one_at_a_time = timing();
    let server = HttpServer::builder()
        .workers(8)
        .work(Duration::from_millis(5))
        .start();
    let addr = server.addr();
    let run = Duration::from_secs(2);
    let start = Instant::now();
    // 32 clients, not 16: on a busy machine 16 slow-woken clients can fail
    // to keep 8 workers' queue full, and then it is the clients measured.
    let clients: Vec<_> = (0..32)
        .map(|_| {
            std::thread::spawn(move || {
                let mut s = connect(addr);
                while start.elapsed() < run {
                    get(&mut s, "/knee", false);
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    let rate = server.served() as f64 / start.elapsed().as_secs_f64();
    // The cap is the fixture's own: 8 workers queued in time, 5 ms each,
    // never serve more than 1,600 a second (plus one each at the end:
    // 4 more a second over 2 s), however the machine runs.
    assert!(rate <= 1600.0 * 1.01, "{rate:.0} req/s");
    // And all 8 work at once: three quarters of the cap (fewer than 6
    // workers could not reach it), the rest a margin for clients a
    // loaded machine wakes too late to keep the queue full.
    assert!(rate >= 1200.0, "{rate:.0} req/s");
}

#[test]
fn a_stall_holds_answers_until_it_ends() {
    let _one_at_a_time = timing();
    let server = HttpServer::start();
    let mut s = connect(server.addr());
    let (_, warm) = get(&mut s, "/", false);
    assert_eq!(warm.status, 200);
    // The stall runs 500 ms from the call: the answer is never sooner
    // (counted from before the call, as the fixture counts it), and comes
    // when it ends; the upper bound only guards against a stall that
    // holds on (twice as long), a loaded machine's wake-ups only add.
    let stalled_at = Instant::now();
    server.stall(Duration::from_millis(500));
    let (_, a) = get(&mut s, "/?size=100", false);
    let waited = ms(a.headers_at - stalled_at);
    assert!(
        (500.0..1000.0).contains(&waited),
        "headers after {waited:.1} ms"
    );
    // Over: the next answers at once, well within half the stall.
    let (sent, _) = get(&mut s, "/", false);
    let next = ms(Instant::now() - sent);
    assert!(next < 250.0, "the next answer after {next:.1} ms");
}

#[test]
fn the_delay_server_speaks_tls_http2_and_h2c() {
    let server = HttpServer::start();
    let cert_dir = common::TempDir::new("fixture");
    let cert = cert_dir.join("fixture.pem");
    std::fs::write(&cert, server.cert_pem()).unwrap();
    let cacert = ["--cacert", cert.to_str().unwrap()];
    let url = server.https_url("/?size=5000&ttfb_ms=1");
    assert_eq!(
        curl(&[&["--http2"][..], &cacert].concat(), &url),
        "2 200 5000"
    );
    assert_eq!(
        curl(&[&["--http1.1"][..], &cacert].concat(), &url),
        "1.1 200 5000"
    );
    let h2c = server.url("/?size=7");
    assert_eq!(curl(&["--http2-prior-knowledge"], &h2c), "2 200 7");
    let _ = std::fs::remove_file(cert);
    assert_eq!(server.served(), 3);
}

#[test]
fn delays_hold_over_tls_and_http2() {
    let _one_at_a_time = timing();
    let server = HttpServer::start();
    let url = server.https_url("/?ttfb_ms=100&transfer_ms=100&size=1000");
    for version in ["--http2", "--http1.1"] {
        // curl's clocks: TLS done, first response byte, last byte (seconds).
        let args = [
            version,
            "-k",
            "-w",
            " %{time_appconnect} %{time_starttransfer} %{time_total}",
        ];
        let out = Command::new("curl")
            .args(["-sS", "-o", "/dev/null", "--max-time", "10"])
            .args(args)
            .arg(&url)
            .output()
            .expect("curl");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let t: Vec<f64> = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(|x| x.parse::<f64>().unwrap() * 1e3)
            .collect();
        let (waited, transferred) = (t[1] - t[0], t[2] - t[1]);
        // Never early (the delays run from the request, after curl's TLS
        // was done): 100 ms to the headers, 200 ms to the end. curl is a
        // process of its own on a shared machine, and reading the headers
        // late shortens the transfer it measures, so the transfer's own
        // lower bound is the whole one's; the upper bounds leave a loaded
        // machine 150 ms of late wake-ups. The exact check is
        // delays_arrive_as_programmed_within_a_millisecond.
        assert!(
            (99.0..250.0).contains(&waited),
            "{version}: headers after {waited:.1} ms"
        );
        assert!(
            t[2] - t[0] >= 199.0,
            "{version}: done {:.1} ms after TLS",
            t[2] - t[0]
        );
        assert!(
            transferred < 250.0,
            "{version}: body after {transferred:.1} ms"
        );
    }
}
