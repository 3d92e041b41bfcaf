//! Third-party tests on loopback (docs/protocol.md): a client asks agent C
//! (`sonde serve --third-party-allow`) to run a test toward B. C runs it
//! only for allowed clients, only within its own limits, and only when B's
//! own sonde server accepts it; otherwise the client is told why, by name.

use crate::common;
use common::{sonde, stderr, ServerProc};
use std::io::Read;
use std::net::{TcpListener, UdpSocket};
use std::time::{Duration, Instant};

fn agent() -> ServerProc {
    ServerProc::start(&["--no-reflector", "--third-party-allow", "::1/128"])
}

fn via(proto: &str, b_port: u16, c_port: u16, args: &[&str]) -> std::process::Output {
    sonde()
        .args([proto, "::1", "-p", &b_port.to_string()])
        .args(["--via", &format!("[::1]:{c_port}")])
        .args(args)
        .output()
        .expect("run sonde")
}

#[test]
fn an_allowed_client_gets_the_test_run_from_the_agent_toward_the_target() {
    let b = ServerProc::start(&["--no-reflector"]);
    let c = agent();
    let out = via("udp", b.port, c.port, &["-t", "2s", "-b", "5M", "-J"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let fwd = &doc["summary"]["forward"];
    let received = fwd["received_packets"].as_u64().unwrap_or(0);
    // 5 Mbit/s of 1400-byte payloads for 2 s: 893 packets.
    assert!(
        (880..=900).contains(&received),
        "received {received} packets: {fwd}"
    );
    assert_eq!(doc["spec"]["port"], b.port);
    assert!(c.wait_for_log("third-party test"), "{}", c.log());
    // B served it, as a test from the agent.
    assert!(b.wait_for_log("client"), "{}", b.log());
    // TCP too, with the intervals relayed live to the text output.
    let out = via("tcp", b.port, c.port, &["-t", "2s"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(text.contains("1.00-2.00"), "{text}");
    assert!(text.contains("receiver"), "{text}");
}

#[test]
fn a_client_outside_the_agents_allow_list_is_refused() {
    let b = ServerProc::start(&["--no-reflector"]);
    // Third-party tests are off by default.
    let c = ServerProc::start(&["--no-reflector"]);
    let out = via("tcp", b.port, c.port, &["-t", "1s"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("not in third_party_allow"), "{err}");
    // One that allows another prefix refuses ::1 as well.
    let c = ServerProc::start(&["--no-reflector", "--third-party-allow", "2001:db8::/32"]);
    let err = stderr(&via("tcp", b.port, c.port, &["-t", "1s"]));
    assert!(err.contains("client ::1 may not ask"), "{err}");
}

#[test]
fn a_target_without_a_sonde_server_gets_no_traffic() {
    let c = agent();
    // Nothing listens: the agent cannot connect, and says so.
    let free = TcpListener::bind("[::1]:0").unwrap();
    let closed = free.local_addr().unwrap().port();
    drop(free);
    let out = via("udp", closed, c.port, &["-t", "1s"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("toward [::1]:{closed}")) && err.contains("connect"),
        "{err}"
    );
    // Something that is not a sonde server listens on TCP, with a UDP
    // socket on the same port: the agent's request gets no sonde answer,
    // so not one test packet is sent.
    let listener = TcpListener::bind("[::1]:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let udp = UdpSocket::bind(("::1", port)).unwrap();
    udp.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let tcp_bytes = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut seen = Vec::new();
        let _ = conn.read_to_end(&mut seen);
        seen.len()
    });
    let out = via("udp", port, c.port, &["-t", "1s", "-b", "10M"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let mut datagrams = 0;
    let end = Instant::now() + Duration::from_millis(500);
    let mut buf = [0u8; 2048];
    while Instant::now() < end {
        if udp.recv(&mut buf).is_ok() {
            datagrams += 1;
        }
    }
    assert_eq!(
        datagrams, 0,
        "test packets reached a host that did not agree"
    );
    // Only the agent's request came over TCP (a preamble and one message).
    let n = tcp_bytes.join().unwrap();
    assert!(n > 0 && n < 16 * 1024, "{n} bytes");
}

#[test]
fn the_targets_refusal_and_the_agents_own_limits_are_relayed_by_name() {
    let b = ServerProc::start(&["--no-reflector", "--max-duration", "2s"]);
    let c = agent();
    let out = via("tcp", b.port, c.port, &["-t", "3s"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("third-party agent") && err.contains("max_duration is 2s"),
        "{err}"
    );
    // The agent's own limits apply to what it sends.
    let b = ServerProc::start(&["--no-reflector"]);
    let c = ServerProc::start(&[
        "--no-reflector",
        "--third-party-allow",
        "::1/128",
        "--max-duration",
        "1s",
    ]);
    let err = stderr(&via("tcp", b.port, c.port, &["-t", "3s"]));
    assert!(
        err.contains("refused the test: max_duration is 1s"),
        "{err}"
    );
    // A ping is not run for others.
    let err = stderr(
        &sonde()
            .args(["ping", "::1", "-c", "1"])
            .args(["--via", &format!("[::1]:{}", c.port)])
            .output()
            .unwrap(),
    );
    assert!(err.contains("--via"), "{err}");
}
