//! Running the real `sonde` binary in tests: a server process on loopback
//! and client runs against it.
#![allow(dead_code)]

pub mod auth;
pub mod cli;
pub mod docs;
pub mod http;
pub mod http_server;
pub mod iperf3_client;
pub mod lab_cli;
pub mod nginx;
pub mod ready;
pub mod schema;
pub mod smtp;
pub mod svg;
pub mod walkthrough;
pub mod webhook;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A directory of the test's own, new and empty, removed with all it
/// holds when dropped (also when the test panics). Named
/// `sonde-test-PID-N-NAME` under the system's temporary directory (N
/// counts this process's directories, so two tests may use one NAME), and
/// a test that leaves something behind (a killed run) is found by its
/// name. Reads as a `Path`: `dir.join("a.db")`, `dir.display()`.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(name: &str) -> Self {
        static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("sonde-test-{}-{n}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        Self(dir)
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A file of the test's own, written with `contents` in a [`TempDir`] of
/// its own, removed when dropped. Reads as a `Path`.
pub struct TempFile {
    path: PathBuf,
    _dir: TempDir,
}

impl TempFile {
    pub fn new(file_name: &str, contents: impl AsRef<[u8]>) -> Self {
        let dir = TempDir::new(file_name);
        let path = dir.join(file_name);
        std::fs::write(&path, contents).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        Self { path, _dir: dir }
    }
}

impl std::ops::Deref for TempFile {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for TempFile {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

static TIMING: Mutex<()> = Mutex::new(());

/// Held by a test that checks a time or a rate to within a few per cent
/// (`sonde http`'s phases and knees, the fixtures' own delays): such tests
/// of one binary run one at a time, so that one's load is not the noise
/// another measures. Lab tests hold [`lab_cli::serial`] instead.
pub fn timing() -> std::sync::MutexGuard<'static, ()> {
    TIMING.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn sonde() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sonde"));
    c.env_remove("SONDE_LOG").env_remove("SONDE_SERVE_CONFIG");
    c
}

/// A `sonde serve` process; killed when dropped.
pub struct ServerProc {
    child: Child,
    pub port: u16,
    log: Arc<Mutex<Vec<String>>>,
}

impl ServerProc {
    /// Starts `sonde serve` on ::1 and 127.0.0.1 with a free port.
    pub fn start(extra: &[&str]) -> Self {
        Self::start_with(sonde(), &["--bind", "::1", "--bind", "127.0.0.1"], extra)
    }

    pub fn start_with(mut cmd: Command, bind: &[&str], extra: &[&str]) -> Self {
        // A server's default archive is this test process's, never the
        // machine's (as root, /var/lib/sonde/sonde.db, which the package
        // test installs and checks byte for byte while other tests run).
        if !cmd.get_envs().any(|(k, _)| k == "SONDE_ARCHIVE") {
            cmd.env(
                "SONDE_ARCHIVE",
                std::env::temp_dir()
                    .join(format!("sonde-test-{}-default", std::process::id()))
                    .join("sonde.db"),
            );
        }
        let mut child = cmd
            .args(["serve", "-p", "0"])
            .args(bind)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start sonde serve");
        let stderr = child.stderr.take().expect("server stderr");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let sink = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                // `listening addr=…`, or with `--log-format json` a line
                // whose event is `listening`.
                let addr = match serde_json::from_str::<serde_json::Value>(&line) {
                    Ok(v) if v["event"] == "listening" => v["addr"].as_str().map(str::to_string),
                    _ => line.split("addr=").nth(1).map(str::to_string),
                };
                if let Some(a) = addr.and_then(|a| a.trim().parse::<SocketAddr>().ok()) {
                    let _ = tx.send(a.port());
                }
                sink.lock().unwrap().push(line);
            }
        });
        let port = rx
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| {
                panic!(
                    "server did not report its address; log: {:?}",
                    log.lock().unwrap()
                )
            });
        Self { child, port, log }
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    /// Waits for a log line containing `needle`: true as soon as one is
    /// there, false after 20 s (a bound for a loaded machine, not a
    /// speed: most lines come within milliseconds).
    pub fn wait_for_log(&self, needle: &str) -> bool {
        let end = Instant::now() + Duration::from_secs(20);
        while Instant::now() < end {
            if self.log().contains(needle) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// The port of the server's STAMP reflector, from its log (start the
    /// server with `--reflector-port 0`).
    pub fn reflector_port(&self) -> u16 {
        assert!(self.wait_for_log("reflector="), "{}", self.log());
        let log = self.log();
        log.split("reflector=")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|a| a.parse::<SocketAddr>().ok())
            .map(|a| a.port())
            .unwrap_or_else(|| panic!("no reflector address in {log}"))
    }

    /// The server's process id (for /proc/PID/status).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Stops the server as an operator does (SIGTERM) and returns how it
    /// exited; `None` if it was still running 10 s later.
    pub fn terminate(&mut self) -> Option<std::process::ExitStatus> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let end = std::time::Instant::now() + Duration::from_secs(10);
        while std::time::Instant::now() < end {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for ServerProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `sonde tcp HOST -p PORT ARGS -J` and returns the exit status,
/// parsed stdout (if JSON) and stderr.
pub fn tcp(host: &str, port: u16, args: &[&str]) -> Output {
    sonde()
        .args(["tcp", host, "-p", &port.to_string()])
        .args(args)
        .output()
        .expect("run sonde tcp")
}

/// A successful JSON run; panics with stderr otherwise.
pub fn tcp_json(host: &str, port: u16, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["-J"];
    all.extend_from_slice(args);
    let out = tcp(host, port, &all);
    assert!(
        out.status.success(),
        "sonde tcp {host} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("sonde tcp -J prints JSON")
}

/// A UDP direction of a whole test (`summary.forward` and the like) asked
/// for `asked` datagrams: exactly that many sent, which the sender fixes;
/// each one received or counted lost, but for the few still in flight
/// when the test ended; and at most a tenth lost. On loopback that last
/// is the machine's speed, not sonde's: a receiver stalled for a tenth of
/// a second on a loaded machine overflows its socket buffer.
pub fn assert_udp_delivered(f: &serde_json::Value, asked: u64, what: &str) {
    let count = |k: &str| {
        f[k].as_u64()
            .unwrap_or_else(|| panic!("{what}: no {k} in {f}"))
    };
    let (sent, received, lost) = (
        count("sent_packets"),
        count("received_packets"),
        count("lost_packets"),
    );
    assert_eq!(sent, asked, "{what}: sent, in {f}");
    assert!(received + lost <= sent, "{what}: {f}");
    assert!(
        received * 10 >= sent * 9,
        "{what}: more than a tenth lost: {f}"
    );
}

pub fn u(v: &serde_json::Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Whether the program `tool` runs here (`tool --version`, or `-c true`
/// for a shell). Where it does not, a check that needs it is left out
/// with a word on stderr, but under CI (`CI` set, as `.ci/run` is) the
/// test fails naming the tool: scripts/system-deps.sh installs every one,
/// and a check that silently did not run is no check.
pub fn tool_present(tool: &str, probe: &[&str]) -> bool {
    let runs = Command::new(tool)
        .args(probe)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if !runs {
        assert!(
            std::env::var_os("CI").is_none(),
            "{tool} is not installed (scripts/system-deps.sh installs it), and CI is set"
        );
        eprintln!("{tool} is not installed: the check that needs it is left out");
    }
    runs
}

/// Whether lab tests (network namespaces) can run: as root, yes; without
/// root they fail unless `SONDE_LAB=skip` says to skip them. With
/// `SONDE_LAB=elsewhere` they are left to another process: scripts/test.sh
/// runs the lab binary on its own beside the rest.
pub fn lab_allowed() -> bool {
    if std::env::var("SONDE_LAB").as_deref() == Ok("elsewhere") {
        eprintln!("lab test left to the lab's own run (SONDE_LAB=elsewhere)");
        return false;
    }
    if sonde_lab::is_root() {
        return true;
    }
    assert_eq!(
        std::env::var("SONDE_LAB").as_deref(),
        Ok("skip"),
        "lab tests need root; run as root or set SONDE_LAB=skip"
    );
    eprintln!("lab test skipped: not root and SONDE_LAB=skip");
    false
}

/// A `sonde serve` inside a lab namespace, bound to the given addresses.
pub fn lab_server(ns: &sonde_lab::Netns, addrs: &[&str]) -> ServerProc {
    let mut cmd = ns.command(env!("CARGO_BIN_EXE_sonde"));
    cmd.env_remove("SONDE_LOG");
    let bind: Vec<&str> = addrs.iter().flat_map(|a| ["--bind", *a]).collect();
    ServerProc::start_with(cmd, &bind, &[])
}

/// Runs `sonde SUBCOMMAND HOST -p PORT ARGS -J` inside `ns`.
pub fn lab_json(
    ns: &sonde_lab::Netns,
    sub: &str,
    host: &str,
    port: u16,
    args: &[&str],
) -> serde_json::Value {
    let mut cmd = ns.command(env!("CARGO_BIN_EXE_sonde"));
    cmd.args([sub, host, "-p", &port.to_string(), "-J"])
        .args(args);
    let out = cmd.output().expect("run sonde in the lab");
    assert!(
        out.status.success(),
        "sonde {sub} {host} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON output")
}

/// Sends SIGINT (Ctrl-C) to `child` after `after` and returns what it
/// printed; the caller checks the exit code.
pub fn interrupt_after(child: Child, after: Duration) -> Output {
    std::thread::sleep(after);
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    child
        .wait_with_output()
        .expect("wait for the interrupted child")
}

/// A stock `iperf3 -s` on a free loopback port, for results with figures
/// the peer does not report; killed when dropped.
pub struct Iperf3Server {
    child: std::process::Child,
    pub port: u16,
}

impl Iperf3Server {
    /// On a free port.
    pub fn start() -> Self {
        let port = std::net::TcpListener::bind("[::1]:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        Self::start_on(port)
    }

    /// On `port` (one per test: an iperf3 server serves one test at a
    /// time), ready when this returns.
    pub fn start_on(port: u16) -> Self {
        Self::start_bin("iperf3", port)
    }

    /// The iperf3 binary `bin` (a path, or a name on PATH) on `port`.
    pub fn start_bin(bin: &str, port: u16) -> Self {
        let child = std::process::Command::new(bin)
            .args(["-s", "-p", &port.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("iperf3 (installed by scripts/system-deps.sh)");
        // Found in the socket table, not by connecting: iperf3 serves one
        // client at a time, and a probe connection would be one.
        ready::wait_listening(port);
        Self { child, port }
    }
}

impl Drop for Iperf3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Field `key` of a /proc `status` file's text (`Uid`, `CapEff`, …),
/// trimmed.
pub fn status_field<'a>(status: &'a str, key: &str) -> &'a str {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .unwrap_or_else(|| panic!("no {key} in {status}"))
        .trim()
}
