//! `sonde serve`'s own flags, with the stock iperf3 client as its
//! client: `-1`, `-D` with `-I`, `--idle-timeout`, `--logfile`.

use crate::common;
use common::iperf3_client::{iperf3, json, text};
use common::{sonde, ServerProc};
use std::path::Path;
use std::time::{Duration, Instant};

/// Waits up to 20 s for `cond`.
fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + Duration::from_secs(20);
    while Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

#[test]
fn one_off_serves_one_test_then_exits() {
    let mut server = ServerProc::start(&["--no-reflector", "-1"]);
    // A refused test does not count.
    let refused = iperf3("iperf3", "::1", server.port, &["-t", "999"]);
    assert!(!refused.status.success());
    assert!(server.is_running(), "{}", server.log());
    json("iperf3", "127.0.0.1", server.port, &["-t", "1"]);
    assert!(eventually(|| !server.is_running()), "{}", server.log());
    assert!(server.wait_for_log("reason=OneOff"), "{}", server.log());
}

#[test]
fn a_plain_server_keeps_no_archive_and_makes_no_directory_for_one() {
    // The default archive, where this test can see it (as root it is
    // /var/lib/sonde/sonde.db): a server with no campaigns, alerts,
    // forwarding or readings serves a test and leaves it unmade.
    let dir = common::TempDir::new("plain-serve");
    let archive = dir.join("var-lib-sonde").join("sonde.db");
    let mut cmd = sonde();
    cmd.env("SONDE_ARCHIVE", &archive);
    let mut server = ServerProc::start_with(cmd, &["--bind", "::1"], &["--no-reflector", "-1"]);
    json("iperf3", "::1", server.port, &["-t", "1"]);
    assert!(eventually(|| !server.is_running()), "{}", server.log());
    assert!(
        !dir.join("var-lib-sonde").exists(),
        "a plain `sonde serve` made {}",
        archive.display()
    );
}

#[test]
fn an_idle_server_exits_after_its_timeout() {
    let mut server = ServerProc::start(&["--no-reflector", "--idle-timeout", "2s"]);
    json("iperf3", "::1", server.port, &["-t", "1"]);
    assert!(eventually(|| !server.is_running()), "{}", server.log());
    // The log reader may lag the exit: wait for its last lines.
    assert!(server.wait_for_log("reason=Idle"), "{}", server.log());
    assert!(server.wait_for_log("iperf3 test done"), "{}", server.log());
}

/// Whether process `pid` is gone (or a zombie no one has reaped yet).
fn gone(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

#[test]
fn a_daemon_writes_its_pidfile_and_removes_it_on_exit() {
    let dir = common::TempDir::new("daemon");
    let pidfile = dir.join("serve.pid");
    let logfile = dir.join("serve.log");
    let port = 17_150u16;
    let out = sonde()
        .args(["serve", "--no-reflector", "-p", &port.to_string()])
        .args(["--bind", "::1", "--bind", "127.0.0.1", "-D", "-1", "-I"])
        .arg(&pidfile)
        .arg("--logfile")
        .arg(&logfile)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    // The first process returned once the server was up: its pid is in
    // the file, and it serves.
    let pid = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .to_string();
    assert!(
        pid.parse::<u32>().is_ok() && !gone(&pid),
        "pidfile: {pid:?}"
    );
    assert_ne!(pid, out.status.to_string());
    json("iperf3", "127.0.0.1", port, &["-t", "1"]);
    assert!(
        eventually(|| !Path::new(&pidfile).exists()),
        "pidfile stayed"
    );
    assert!(eventually(|| gone(&pid)), "daemon {pid} still running");
    let log = std::fs::read_to_string(&logfile).unwrap();
    assert!(log.contains("iperf3 test done"), "{log}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_log_file_that_cannot_be_opened_is_a_usage_error() {
    let out = sonde()
        .args([
            "serve",
            "-p",
            "0",
            "--logfile",
            "/nonexistent-dir/serve.log",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("/nonexistent-dir/serve.log"),
        "{}",
        text(&out)
    );
}

/// Under a service manager (`$NOTIFY_SOCKET`, systemd's `Type=notify`):
/// `READY=1` once the server listens, naming where, and `STOPPING=1`
/// when SIGTERM stops it.
#[test]
fn a_service_manager_is_told_when_the_server_is_ready_and_when_it_stops() {
    use std::os::unix::net::UnixDatagram;
    let dir = common::TempDir::new("notify");
    let path = dir.join("notify.sock");
    let manager = UnixDatagram::bind(&path).unwrap();
    manager
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut cmd = sonde();
    cmd.env("NOTIFY_SOCKET", &path);
    let mut server = ServerProc::start_with(cmd, &["--bind", "::1"], &["--no-reflector"]);
    let mut buf = [0u8; 1024];
    let n = manager.recv(&mut buf).expect("READY=1 within 20 s");
    let told = String::from_utf8_lossy(&buf[..n]).into_owned();
    assert!(told.lines().any(|l| l == "READY=1"), "{told}");
    assert!(
        told.contains(&format!("STATUS=serving on [::1]:{}", server.port)),
        "{told}"
    );
    // Ready means serving.
    json("iperf3", "::1", server.port, &["-t", "1"]);
    assert!(server.terminate().is_some_and(|s| s.success()));
    let n = manager.recv(&mut buf).expect("STOPPING=1 within 20 s");
    let told = String::from_utf8_lossy(&buf[..n]).into_owned();
    assert!(told.lines().any(|l| l == "STOPPING=1"), "{told}");
    assert!(told.contains("STATUS=stopping: Signal"), "{told}");
}
