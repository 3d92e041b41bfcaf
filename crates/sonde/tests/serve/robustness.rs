//! A server keeps serving whatever clients send: random bytes, truncated
//! messages, oversized length prefixes, stalls and early closes.

use crate::common;
use common::{tcp_json, u, ServerProc};
use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

/// A small deterministic generator (xorshift), so a failure replays.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

fn preamble() -> Vec<u8> {
    b"SOND\x00\x01\x00\x00".to_vec()
}

fn frame(payload: &[u8]) -> Vec<u8> {
    let mut f = (payload.len() as u32).to_be_bytes().to_vec();
    f.extend_from_slice(payload);
    f
}

/// The i-th kind of misbehaviour.
fn garbage(i: usize, rng: &mut Rng) -> Vec<u8> {
    let request = br#"{"type":"test_request","request":{"test":"tcp","spec":{"host":"x","port":1,"time_s":1.0,"interval_s":1.0,"omit_s":0.0,"parallel":1,"direction":"forward","window_bytes":null,"congestion":null,"mss_bytes":null,"length_bytes":1000,"bitrate_bps":null,"dscp":null,"flowlabel":null,"family":"any","title":null}},"env":{"sonde_version":"0","os":"x","kernel":"x","hostname":"x","cpus":1,"default_congestion":null}}"#;
    match i % 10 {
        0 => {
            let n = 1 + (rng.next() % 4096) as usize;
            rng.bytes(n)
        }
        1 => preamble()[..(rng.next() % 8) as usize].to_vec(),
        2 => [preamble(), 0xFFFF_FFFFu32.to_be_bytes().to_vec()].concat(),
        3 => [preamble(), 0u32.to_be_bytes().to_vec()].concat(),
        4 => [preamble(), frame(b"{not json")].concat(),
        5 => [preamble(), frame(&request[..(rng.next() as usize % request.len())])].concat(),
        6 => {
            let full = [preamble(), frame(request)].concat();
            full[..(rng.next() as usize % full.len())].to_vec()
        }
        7 => [preamble(), frame(br#"{"type":"stream_hello","test_id":"00000000000000000000000000000000","stream":0}"#)].concat(),
        8 => [b"SOND\x00\x09\x00\x00".to_vec(), rng.bytes(64)].concat(),
        _ => [preamble(), frame(br#"{"type":"report","report":7}"#)].concat(),
    }
}

#[test]
fn fifty_misbehaving_clients_do_not_stop_the_server() {
    let mut server = ServerProc::start(&[]);
    let mut rng = Rng(0x5eed_1234_abcd_9876);
    let mut open = Vec::new();
    for i in 0..50 {
        let Ok(mut s) = TcpStream::connect(("::1", server.port)) else {
            panic!("server stopped accepting after {i} connections");
        };
        let _ = s.write_all(&garbage(i, &mut rng));
        if i % 3 == 0 {
            open.push(s); // leave it open and silent: the server must time it out
        }
    }
    // A well-formed request abandoned right after being accepted.
    let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    let _ = s.write_all(&[preamble(), frame(&garbage(5, &mut Rng(1))[12..])].concat());
    drop(s);
    std::thread::sleep(Duration::from_millis(200));
    assert!(server.is_running(), "server died:\n{}", server.log());
    let r = tcp_json("::1", server.port, &["-t", "1s"]);
    assert!(u(&r["summary"]["total"]["received_bytes"]) > 0);
    drop(open);
    let r = tcp_json("127.0.0.1", server.port, &["-t", "1s", "-P", "2"]);
    assert!(u(&r["summary"]["total"]["received_bytes"]) > 0);
    assert!(
        server.wait_for_log("connection ended"),
        "misbehaviour is logged"
    );
}
