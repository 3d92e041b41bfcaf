//! A real nginx (Debian's `/usr/sbin/nginx`, installed by
//! scripts/system-deps.sh) started by a test: its own prefix in a temp dir,
//! in the foreground, on free loopback ports on both `::1` and `127.0.0.1`:
//! plain HTTP/1.1 on one, TLS with HTTP/2 (self-signed certificate made with
//! the `openssl` CLI) on the other. It serves static files of known sizes:
//! `/` (index.html), `/0`, `/1k`, `/100k` and any added with
//! `NginxBuilder::file`. The config is `nginx.conf` beside this file,
//! shared with bench/http-vs-wrk. `NginxBuilder::in_netns` starts it in a
//! lab node instead, on every address of the node (a lab test's server).

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const NGINX: &str = "/usr/sbin/nginx";
const CONF_TEMPLATE: &str = include_str!("nginx.conf");

/// A running nginx; stopped (master and workers) when dropped.
pub struct Nginx {
    child: Child,
    netns: Option<String>,
    dir: PathBuf,
    http_port: u16,
    https_port: u16,
}

/// `Nginx::builder()`: worker processes and the files served.
#[derive(Debug, Clone)]
pub struct NginxBuilder {
    workers: usize,
    files: Vec<(String, usize)>,
    netns: Option<String>,
}

impl Default for NginxBuilder {
    fn default() -> Self {
        let files = [("0", 0), ("1k", 1024), ("100k", 100 * 1024)];
        Self {
            workers: 2,
            files: files.map(|(n, s)| (n.to_string(), s)).to_vec(),
            netns: None,
        }
    }
}

impl NginxBuilder {
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = n;
        self
    }

    /// Serves `/NAME` with `size` bytes.
    pub fn file(mut self, name: &str, size: usize) -> Self {
        self.files
            .push((name.trim_start_matches('/').to_string(), size));
        self
    }

    /// Runs it in network namespace `ns` (a lab node), listening on all
    /// of its addresses.
    pub fn in_netns(mut self, ns: &str) -> Self {
        self.netns = Some(ns.to_string());
        self
    }

    /// Starts nginx, ready to answer on all four addresses when this
    /// returns. Ports are picked free, and picked again if nginx could not
    /// bind them (another process took one in between).
    pub fn start(self) -> Nginx {
        let dir = temp_prefix();
        self.write_files(&dir);
        make_certificate(&dir);
        let mut last_log = String::new();
        for _ in 0..5 {
            let (http_port, https_port) = (free_port(), free_port());
            if http_port == https_port {
                continue;
            }
            std::fs::write(
                dir.join("nginx.conf"),
                self.conf(&dir, http_port, https_port),
            )
            .unwrap();
            let _ = std::fs::remove_file(dir.join("error.log"));
            let mut command = match &self.netns {
                Some(ns) => {
                    let mut c = Command::new("ip");
                    c.args(["netns", "exec", ns, NGINX]);
                    c
                }
                None => Command::new(NGINX),
            };
            let child = command
                .arg("-p")
                .arg(&dir)
                .arg("-c")
                .arg(dir.join("nginx.conf"))
                .arg("-e")
                .arg(dir.join("error.log"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                // Its own group, so that Drop reaches the workers too.
                .process_group(0)
                .spawn()
                .expect("/usr/sbin/nginx (installed by scripts/system-deps.sh)");
            let mut nginx = Nginx {
                child,
                netns: self.netns.clone(),
                dir: dir.clone(),
                http_port,
                https_port,
            };
            if nginx.wait_ready() {
                return nginx;
            }
            last_log = nginx.error_log();
            let in_use = last_log.contains("Address already in use");
            nginx.stop();
            assert!(in_use, "nginx did not start; its error log:\n{last_log}");
            // Keep the directory for the next try: Nginx's Drop removes it.
            std::mem::forget(nginx);
        }
        panic!("nginx found no free ports in 5 tries; last error log:\n{last_log}");
    }

    fn write_files(&self, dir: &Path) {
        let html = dir.join("html");
        std::fs::create_dir_all(&html).unwrap();
        std::fs::create_dir_all(dir.join("tmp")).unwrap();
        std::fs::write(
            html.join("index.html"),
            "<!doctype html><title>sonde</title>\n",
        )
        .unwrap();
        for (name, size) in &self.files {
            std::fs::write(html.join(name), body(*size)).unwrap();
        }
        // Started as root, nginx's workers run as nobody: they must reach
        // html/ whatever the umask.
        for entry in std::fs::read_dir(&html).unwrap() {
            set_mode(&entry.unwrap().path(), 0o644);
        }
        set_mode(&html, 0o755);
        set_mode(dir, 0o755);
    }

    fn conf(&self, dir: &Path, http_port: u16, https_port: u16) -> String {
        let (h2_listen, h2_on) = if nginx_version() >= (1, 25, 1) {
            ("", "http2 on;")
        } else {
            (" http2", "")
        };
        let conf = match self.netns {
            Some(_) => CONF_TEMPLATE
                .replace("listen 127.0.0.1:", "listen 0.0.0.0:")
                .replace("listen [::1]:", "listen [::]:"),
            None => CONF_TEMPLATE.to_string(),
        };
        conf.replace("@PREFIX@", dir.to_str().expect("a UTF-8 temp dir"))
            .replace("@WORKERS@", &self.workers.to_string())
            .replace("@HTTP_PORT@", &http_port.to_string())
            .replace("@HTTPS_PORT@", &https_port.to_string())
            .replace("@H2_LISTEN@", h2_listen)
            .replace("@H2_ON@", h2_on)
    }
}

impl Nginx {
    /// Two workers and the standard files.
    pub fn start() -> Self {
        Self::builder().start()
    }

    pub fn builder() -> NginxBuilder {
        NginxBuilder::default()
    }

    /// `http://[::1]:PORT` + `path`.
    pub fn http_url(&self, path: &str) -> String {
        format!("http://[::1]:{}{path}", self.http_port)
    }

    /// `http://127.0.0.1:PORT` + `path`.
    pub fn http_url_v4(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.http_port)
    }

    /// `https://[::1]:PORT` + `path` (TLS; HTTP/2 by ALPN, or HTTP/1.1).
    pub fn https_url(&self, path: &str) -> String {
        format!("https://[::1]:{}{path}", self.https_port)
    }

    pub fn http_port(&self) -> u16 {
        self.http_port
    }

    pub fn https_port(&self) -> u16 {
        self.https_port
    }

    /// The self-signed certificate (PEM; for `localhost`, `::1`,
    /// `127.0.0.1`), for clients that verify rather than `--insecure`.
    pub fn cert_path(&self) -> PathBuf {
        self.dir.join("cert.pem")
    }

    /// The master's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default()
    }

    /// Up to 10 s for all four listeners; false if nginx exited.
    fn wait_ready(&mut self) -> bool {
        if let Some(ns) = &self.netns {
            // In a lab node, where this process cannot connect: its
            // listeners in the node's socket table.
            for port in [self.http_port, self.https_port] {
                super::ready::wait_listening_in(ns, port);
            }
            return matches!(self.child.try_wait(), Ok(None));
        }
        let addrs: Vec<SocketAddr> = [self.http_port, self.https_port]
            .into_iter()
            .flat_map(|p| {
                [
                    SocketAddr::from((Ipv6Addr::LOCALHOST, p)),
                    SocketAddr::from((Ipv4Addr::LOCALHOST, p)),
                ]
            })
            .collect();
        let end = Instant::now() + Duration::from_secs(10);
        while Instant::now() < end {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return false;
            }
            let timeout = Duration::from_millis(200);
            if addrs
                .iter()
                .all(|a| TcpStream::connect_timeout(a, timeout).is_ok())
            {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "nginx not listening after 10 s; its error log:\n{}",
            self.error_log()
        );
    }

    /// SIGTERM (nginx's fast shutdown: the master stops its workers), up to
    /// 5 s for it, then SIGKILL to the whole group in case any is left.
    fn stop(&mut self) {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let end = Instant::now() + Duration::from_secs(5);
        while Instant::now() < end && matches!(self.child.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{pid}")])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.wait();
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The installed nginx's version, from `nginx -v` (which prints to stderr).
pub fn nginx_version() -> (u32, u32, u32) {
    let out = Command::new(NGINX).arg("-v").output().expect("nginx -v");
    let text = String::from_utf8_lossy(&out.stderr);
    let version = text
        .split("nginx/")
        .nth(1)
        .and_then(|v| v.split_whitespace().next())
        .unwrap_or_else(|| panic!("no version in `nginx -v`: {text}"));
    let mut parts = version.split('.').map(|p| p.parse().unwrap_or(0));
    let mut next = || parts.next().unwrap_or(0);
    (next(), next(), next())
}

/// The bytes of a served file of `size`: printable, and not all alike, so a
/// client that drops or repeats a chunk is seen.
pub fn body(size: usize) -> Vec<u8> {
    (0..size).map(|i| b'a' + (i % 26) as u8).collect()
}

/// A port free on both ::1 and 127.0.0.1 just now.
fn free_port() -> u16 {
    for _ in 0..20 {
        let v6 = TcpListener::bind("[::1]:0").expect("bind [::1]:0");
        let port = v6.local_addr().unwrap().port();
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no port free on both ::1 and 127.0.0.1 in 20 tries");
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn temp_prefix() -> PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    // Nginx's Drop removes it (kept across a start's retries).
    let dir = std::env::temp_dir().join(format!("sonde-nginx-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A self-signed P-256 certificate for localhost, ::1 and 127.0.0.1, not a
/// CA (rustls refuses a CA certificate as a server's own).
fn make_certificate(dir: &Path) {
    let out = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
        ])
        .args(["-nodes", "-days", "7", "-subj", "/CN=localhost"])
        .args([
            "-addext",
            "subjectAltName=DNS:localhost,IP:::1,IP:127.0.0.1",
        ])
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .arg("-keyout")
        .arg(dir.join("key.pem"))
        .arg("-out")
        .arg(dir.join("cert.pem"))
        .output()
        .expect("openssl (installed by scripts/system-deps.sh)");
    assert!(
        out.status.success(),
        "openssl req: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
