//! A real SMTP server for the tests: aiosmtpd (PyPI, installed by
//! scripts/python-deps.sh) on a free loopback port, keeping every mail it
//! receives in a Maildir; stopped when dropped.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

pub struct SmtpSink {
    child: Child,
    pub port: u16,
    maildir: PathBuf,
}

/// One mail as received: its headers (names lowercase) and body.
#[derive(Debug, Clone)]
pub struct Received {
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

impl SmtpSink {
    /// Starts aiosmtpd on 127.0.0.1, its mail kept under `dir`.
    pub fn start(dir: &Path) -> Self {
        let maildir = dir.join("maildir");
        let _ = std::fs::remove_dir_all(&maildir);
        // A free port: bound, read, let go (aiosmtpd takes it at once).
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("python3")
            .args(["-m", "aiosmtpd", "-n", "-l", &format!("127.0.0.1:{port}")])
            .args(["-c", "aiosmtpd.handlers.Mailbox"])
            .arg(&maildir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 -m aiosmtpd (scripts/python-deps.sh installs it)");
        let sink = Self {
            child,
            port,
            maildir,
        };
        assert!(
            super::http::wait_for(15, || TcpStream::connect(("127.0.0.1", port)).is_ok()),
            "aiosmtpd did not listen on 127.0.0.1:{port} (is it installed? scripts/python-deps.sh)"
        );
        sink
    }

    pub fn server(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Every mail received so far, oldest first: by the order the
    /// Maildir's file names give (`SECONDS.M<µs>P<pid>Q<count>.host`,
    /// the microseconds not zero-padded, so read as numbers).
    pub fn received(&self) -> Vec<Received> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(self.maildir.join("new"))
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        files.sort_by_key(|f| arrival(f));
        files
            .iter()
            .filter_map(|f| std::fs::read_to_string(f).ok())
            .map(|text| parse(&text))
            .collect()
    }
}

fn parse(text: &str) -> Received {
    let text = text.replace("\r\n", "\n");
    let (head, body) = text.split_once("\n\n").unwrap_or((&text, ""));
    let mut headers: Vec<(String, String)> = Vec::new();
    for line in head.lines() {
        if line.starts_with([' ', '\t']) {
            if let Some(last) = headers.last_mut() {
                last.1.push(' ');
                last.1.push_str(line.trim());
            }
        } else if let Some((n, v)) = line.split_once(':') {
            headers.push((n.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    Received {
        headers,
        body: body.to_string(),
    }
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A Maildir file's arrival: its seconds, microseconds and the writer's
/// count, as numbers.
fn arrival(file: &Path) -> (u64, u64, u64) {
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let number_after = |mark: char| -> u64 {
        name.split_once(mark)
            .map(|(_, rest)| {
                rest.chars()
                    .take_while(char::is_ascii_digit)
                    .collect::<String>()
            })
            .and_then(|d| d.parse().ok())
            .unwrap_or(0)
    };
    let seconds = name
        .split('.')
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (seconds, number_after('M'), number_after('Q'))
}
