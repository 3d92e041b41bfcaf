//! Attacking connections for the abuse tests: many connections from one
//! loopback source address that send their handshake slowly or not at
//! all, each watched for how the server ends it.

use crate::common::ServerProc;
use socket2::{Domain, Socket, Type};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// How long an attack goes on: more than a deadline, so that attackers
/// are closed by it and replaced while the valid tests run.
pub const ATTACK: Duration = Duration::from_secs(9);
/// Time between two bytes of a trickling attacker.
const TRICKLE: Duration = Duration::from_millis(1500);
/// iperf3's PARAM_EXCHANGE state byte.
const PARAM_EXCHANGE: u8 = 9;

/// The server's peak resident memory (VmHWM), in KiB.
pub fn peak_rss_kb(server: &ServerProc) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.pid())).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmHWM in {status}"))
}

/// A TCP connection to the server on 127.0.0.1 from source address `src`.
pub fn connect_from(src: &str, port: u16) -> std::io::Result<TcpStream> {
    let s = Socket::new(Domain::IPV4, Type::STREAM, None)?;
    let from: SocketAddr = format!("{src}:0").parse().unwrap();
    s.bind(&from.into())?;
    let to: SocketAddr = ([127, 0, 0, 1], port).into();
    s.connect_timeout(&to.into(), Duration::from_secs(2))?;
    let s: TcpStream = s.into();
    s.set_nonblocking(true)?;
    Ok(s)
}

/// What an attacking connection sends: the first `burst` bytes at once,
/// then the rest one at a time, every [`TRICKLE`] (nothing if empty:
/// idle).
#[derive(Clone, Copy)]
pub struct Script {
    pub bytes: &'static [u8],
    pub burst: usize,
}

/// One byte at a time from the first.
pub const fn trickle(bytes: &'static [u8]) -> Script {
    Script { bytes, burst: 0 }
}

/// One attacking connection, following its script.
struct Attacker {
    stream: TcpStream,
    opened: Instant,
    bytes: &'static [u8],
    sent: usize,
    next: Instant,
}

/// What the attack saw.
#[derive(Debug, Default)]
pub struct Tally {
    pub opened: usize,
    /// How long each connection the server closed without a word was held
    /// (by kind: idle, trickling).
    pub held_idle: Vec<Duration>,
    pub held_trickling: Vec<Duration>,
    /// The bytes each refused connection read.
    pub refused: Vec<Vec<u8>>,
    /// Connections reset by the server.
    pub reset: usize,
    /// iperf3 connections sent PARAM_EXCHANGE after their cookie.
    pub param_exchanges: usize,
}

impl Tally {
    pub fn held(&self) -> impl Iterator<Item = &Duration> {
        self.held_idle.iter().chain(&self.held_trickling)
    }

    pub fn longest_held(&self) -> Duration {
        self.held().max().copied().unwrap_or_default()
    }
}

/// Keeps `target` attacking connections from `src` open for [`ATTACK`],
/// opening a new one for each the server closes; `script(i)` is what
/// the i-th connection sends.
///
/// `opened` hears once, when the first `target` connections are open.
pub fn attack(
    src: &'static str,
    port: u16,
    target: usize,
    script: fn(usize) -> Script,
    opened: std::sync::mpsc::Sender<()>,
) -> Tally {
    let mut tally = Tally::default();
    let mut opened = Some(opened);
    let mut live: Vec<Attacker> = Vec::new();
    let end = Instant::now() + ATTACK;
    let mut scratch = [0u8; 4096];
    while Instant::now() < end {
        while live.len() < target {
            let mut stream = connect_from(src, port).expect("attacker connects");
            let now = Instant::now();
            let Script { bytes, burst } = script(tally.opened);
            stream.write_all(&bytes[..burst]).expect("attacker sends");
            live.push(Attacker {
                stream,
                opened: now,
                bytes,
                sent: burst,
                next: now,
            });
            tally.opened += 1;
        }
        if let Some(first) = opened.take() {
            let _ = first.send(());
        }
        let now = Instant::now();
        live.retain_mut(|a| {
            if a.sent < a.bytes.len() && now >= a.next {
                if a.stream.write_all(&a.bytes[a.sent..=a.sent]).is_err() {
                    tally.reset += 1;
                    return false;
                }
                a.sent += 1;
                a.next = now + TRICKLE;
            }
            match a.stream.read(&mut scratch) {
                Ok(0) if a.bytes.is_empty() => tally.held_idle.push(a.opened.elapsed()),
                Ok(0) => tally.held_trickling.push(a.opened.elapsed()),
                // iperf3's PARAM_EXCHANGE: on to the parameters.
                Ok(1) if scratch[0] == PARAM_EXCHANGE => {
                    tally.param_exchanges += 1;
                    return true;
                }
                Ok(n) => tally.refused.push(scratch[..n].to_vec()),
                Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
                Err(_) => tally.reset += 1,
            }
            false
        });
        std::thread::sleep(Duration::from_millis(100));
    }
    tally
}
