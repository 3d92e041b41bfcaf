//! A webhook receiver on loopback: a real TCP server that keeps every
//! request it is sent (its request line, `Authorization` header and
//! body) and answers `200 OK`, for checking what an alert posts.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct Received {
    pub request_line: String,
    pub authorization: Option<String>,
    pub body: String,
}

pub struct WebhookSink {
    pub port: u16,
    got: Arc<Mutex<Vec<Received>>>,
}

/// Reads one request from `s`: its head and its `Content-Length` body.
fn read_request(s: &mut std::net::TcpStream) -> Option<Received> {
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = s.read(&mut chunk).ok()?;
        if n == 0 || buf.len() > 1 << 20 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let header = |name: &str| {
        head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    };
    let length: usize = header("content-length")?.parse().ok()?;
    while buf.len() < head_end + length {
        let n = s.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some(Received {
        request_line: head.lines().next().unwrap_or_default().to_string(),
        authorization: header("authorization"),
        body: String::from_utf8_lossy(&buf[head_end..head_end + length]).to_string(),
    })
}

impl WebhookSink {
    /// Listens on `[::1]` (a free port) until the test ends.
    pub fn start() -> Self {
        let listener = TcpListener::bind("[::1]:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let got = Arc::new(Mutex::new(Vec::new()));
        let keep = Arc::clone(&got);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut s) = stream else { continue };
                if let Some(r) = read_request(&mut s) {
                    keep.lock().unwrap().push(r);
                    let _ = s.write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    );
                }
            }
        });
        Self { port, got }
    }

    /// Waits up to `secs` for `n` requests; those received by then.
    pub fn wait_for(&self, n: usize, secs: u64) -> Vec<Received> {
        let end = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < end && self.got.lock().unwrap().len() < n {
            std::thread::sleep(Duration::from_millis(100));
        }
        self.got.lock().unwrap().clone()
    }
}
