//! The Debian package (scripts/package.sh, docs/install.md), built from
//! the binary under test and installed on this machine with `dpkg -i`:
//! its files, user and permissions, its unit checked by
//! `systemd-analyze verify`, the binary started as the unit starts it
//! (the `sonde` user, the unit's capabilities, through setpriv) and
//! serving a TCP, a UDP, an ICMP and a STAMP test; an upgrade (the same
//! version again, then the next over an archive of the schema's first
//! version, which the new binary migrates) keeps the
//! edited config and backs the archive up; removal keeps config and
//! archive, purge takes them and the user.

use crate::common;
use common::{sonde, ServerProc};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `cmd`, panicking with its output if it fails; its stdout.
fn must(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The package of the binary under test (of `version`, else Cargo's),
/// built into `out` by scripts/package.sh: its path.
fn package(root: &Path, out: &Path, version: Option<&str>) -> String {
    let mut cmd = Command::new("bash");
    cmd.arg(root.join("scripts/package.sh"))
        .args([
            "--binary",
            env!("CARGO_BIN_EXE_sonde"),
            "--compress",
            "gzip",
        ])
        .arg("--out")
        .arg(out);
    if let Some(v) = version {
        cmd.args(["--version", v]);
    }
    must(&mut cmd).trim().to_string()
}

/// Purges the package when the test ends, however it ends.
struct Installed;

impl Drop for Installed {
    fn drop(&mut self) {
        let _ = Command::new("dpkg").args(["--purge", "sonde"]).output();
    }
}

fn mode(p: &str) -> u32 {
    std::fs::metadata(p)
        .unwrap_or_else(|e| panic!("{p}: {e}"))
        .permissions()
        .mode()
        & 0o7777
}

/// `key=` lines of the unit.
fn unit_values<'a>(unit: &'a str, key: &str) -> Vec<&'a str> {
    unit.lines()
        .filter_map(|l| l.strip_prefix(key)?.strip_prefix('='))
        .collect()
}

fn status_field(pid: u32, key: &str) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    common::status_field(&status, key).to_string()
}

#[test]
fn the_package_installs_runs_as_its_unit_upgrades_and_purges() {
    for tool in ["dpkg-deb", "systemd-analyze", "setpriv"] {
        if !common::tool_present(tool, &["--version"]) {
            return;
        }
    }
    let before = Command::new("dpkg").args(["-s", "sonde"]).output().unwrap();
    assert!(
        !before.status.success(),
        "a sonde package is installed on this machine: this test would replace it"
    );
    let dir = common::TempDir::new("package");
    let out = dir.join("dist");
    let root: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let deb = package(&root, &out, None);
    let listing = must(Command::new("dpkg-deb").args(["-c", &deb]));
    for (path, perms) in [
        ("./usr/bin/sonde", "-rwxr-xr-x"),
        ("./etc/sonde/serve.toml", "-rw-r-----"),
        ("./lib/systemd/system/sonde.service", "-rw-r--r--"),
        ("./usr/share/man/man1/sonde-serve.1.gz", "-rw-r--r--"),
        (
            "./usr/share/bash-completion/completions/sonde",
            "-rw-r--r--",
        ),
        ("./usr/share/zsh/vendor-completions/_sonde", "-rw-r--r--"),
        (
            "./usr/share/fish/vendor_completions.d/sonde.fish",
            "-rw-r--r--",
        ),
    ] {
        assert!(
            listing
                .lines()
                .any(|l| l.starts_with(perms) && l.contains(" root/root ") && l.ends_with(path)),
            "{path} {perms} root/root not in {listing}"
        );
    }

    let _installed = Installed;
    must(Command::new("dpkg").args(["-i", &deb]));
    let passwd = must(Command::new("getent").args(["passwd", "sonde"]));
    let fields: Vec<&str> = passwd.trim().split(':').collect();
    let uid: u32 = fields[2].parse().unwrap();
    assert!(uid < 1000, "a system user: {passwd}");
    assert_eq!(fields[5], "/var/lib/sonde");
    assert_eq!(fields[6], "/usr/sbin/nologin");
    let state = std::fs::metadata("/var/lib/sonde").unwrap();
    assert_eq!((mode("/var/lib/sonde"), state.uid()), (0o700, uid));
    assert_eq!(mode("/usr/bin/sonde"), 0o755);
    let gid: u32 = fields[3].parse().unwrap();
    let conf = std::fs::metadata("/etc/sonde/serve.toml").unwrap();
    assert_eq!(
        (mode("/etc/sonde/serve.toml"), conf.uid(), conf.gid()),
        (0o640, 0, gid),
        "the configuration may hold secrets: root:sonde 0640"
    );
    let unit_path = "/lib/systemd/system/sonde.service";
    must(Command::new("systemd-analyze").args(["verify", unit_path]));
    let unit = std::fs::read_to_string(unit_path).unwrap();
    assert_eq!(unit_values(&unit, "User"), ["sonde"]);
    let caps: Vec<String> = unit_values(&unit, "AmbientCapabilities")[0]
        .split_whitespace()
        .map(|c| c.trim_start_matches("CAP_").to_lowercase())
        .collect();
    assert_eq!(caps, ["net_raw", "net_bind_service"]);
    for hardening in [
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "ProtectHome=yes",
        "PrivateTmp=yes",
        "StateDirectory=sonde",
        "CapabilityBoundingSet=CAP_NET_RAW CAP_NET_BIND_SERVICE",
    ] {
        assert!(
            unit.lines().any(|l| l == hardening),
            "{hardening} in {unit}"
        );
    }

    // Started as the unit starts it: its user, its capabilities, its
    // command line (on free ports here, beside the other tests).
    let exec: Vec<String> = unit_values(&unit, "ExecStart")[0]
        .split_whitespace()
        .map(str::to_string)
        .collect();
    assert_eq!(exec[..2], ["/usr/bin/sonde", "serve"]);
    let plus: Vec<String> = caps.iter().map(|c| format!("+{c}")).collect();
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid=sonde", "--regid=sonde", "--init-groups"])
        .arg(format!("--inh-caps=-all,{}", plus.join(",")))
        .arg(format!("--ambient-caps=-all,{}", plus.join(",")))
        .arg(format!("--bounding-set=-all,{}", plus.join(",")))
        .args(["--no-new-privs", "--", "/usr/bin/sonde"]);
    let server = ServerProc::start_with(
        cmd,
        &[
            "--bind",
            "::1",
            "--bind",
            "127.0.0.1",
            "--reflector-port",
            "0",
        ],
        &exec[2..].iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let pid = server.pid();
    assert_eq!(
        status_field(pid, "Uid"),
        format!("{uid}\t{uid}\t{uid}\t{uid}")
    );
    let held = u64::from_str_radix(&status_field(pid, "CapEff"), 16).unwrap();
    assert_eq!(held, (1 << 13) | (1 << 10), "CapEff {held:#x}");
    let port = server.port.to_string();
    let run = |args: &[&str]| -> serde_json::Value {
        let out = must(sonde().args(args).arg("-J"));
        serde_json::from_str(&out).unwrap()
    };
    let tcp = run(&["tcp", "::1", "-p", &port, "-t", "1"]);
    assert!(
        tcp["summary"]["forward"]["received_bytes"]
            .as_u64()
            .unwrap()
            > 0
    );
    let udp = run(&["udp", "127.0.0.1", "-p", &port, "-b", "1M", "-t", "1"]);
    assert!(
        udp["summary"]["forward"]["received_packets"]
            .as_u64()
            .unwrap()
            > 0
    );
    let icmp = run(&["ping", "::1", "-c", "3", "-i", "0.05"]);
    assert_eq!(
        icmp["summary"]["round_trip"]["received_packets"], 3,
        "{icmp}"
    );
    let reflector = server.reflector_port().to_string();
    let stamp = run(&[
        "ping", "::1", "--proto", "udp", "-p", &reflector, "-c", "3", "-i", "0.05",
    ]);
    assert_eq!(
        stamp["summary"]["round_trip"]["received_packets"], 3,
        "{stamp}"
    );
    drop(server);

    // An archive and an edited config, then the same package again (an
    // upgrade as dpkg runs one): the config as edited, the archive
    // backed up first.
    let result = dir.join("tcp.json");
    std::fs::write(&result, tcp.to_string()).unwrap();
    must(
        sonde()
            .args(["results", "--archive=/var/lib/sonde/sonde.db", "import"])
            .arg(&result),
    );
    std::fs::write(
        "/etc/sonde/serve.toml",
        std::fs::read_to_string("/etc/sonde/serve.toml").unwrap() + "# edited here\n",
    )
    .unwrap();
    let archive = std::fs::read("/var/lib/sonde/sonde.db").unwrap();
    must(Command::new("dpkg").args(["-i", "--force-confold", &deb]));
    assert!(std::fs::read_to_string("/etc/sonde/serve.toml")
        .unwrap()
        .ends_with("# edited here\n"));
    let version = deb.rsplit('/').next().unwrap().split('_').nth(1).unwrap();
    let backup = format!("/var/lib/sonde/sonde.db.before-{version}");
    assert_eq!(std::fs::read(&backup).unwrap(), archive, "{backup}");
    assert_eq!(
        std::fs::metadata("/var/lib/sonde/sonde.db").unwrap().uid(),
        uid
    );

    // The next version over an archive of the schema's first version (as
    // sonde's first release left it): dpkg backs the archive up before
    // it unpacks, and the new binary's first open migrates it, keeping
    // its result.
    let next = package(&root, &out, Some(&format!("{version}+next")));
    let _ = std::fs::remove_file("/var/lib/sonde/sonde.db");
    let id = tcp["id"].as_str().unwrap().to_string();
    {
        let db = rusqlite::Connection::open("/var/lib/sonde/sonde.db").unwrap();
        db.execute_batch(sonde_archive::schema::VERSION_TABLE)
            .unwrap();
        db.execute_batch(sonde_archive::schema::MIGRATIONS[0])
            .unwrap();
        db.execute_batch("INSERT INTO sonde_schema (version) VALUES (1)")
            .unwrap();
        db.execute(
            "INSERT INTO results (id, test, target, start_ns, duration_s, interrupted, \
             throughput_bps, doc) VALUES (?1, 'tcp', '::1', 1, 1.0, FALSE, 1.0, ?2)",
            rusqlite::params![id, tcp.to_string()],
        )
        .unwrap();
    }
    must(Command::new("chown").args(["sonde:sonde", "/var/lib/sonde/sonde.db"]));
    let first = std::fs::read("/var/lib/sonde/sonde.db").unwrap();
    must(Command::new("dpkg").args(["-i", "--force-confold", &next]));
    let backup = format!("/var/lib/sonde/sonde.db.before-{version}");
    assert_eq!(std::fs::read(&backup).unwrap(), first, "{backup}");
    let listed = must(
        Command::new("setpriv")
            .args(["--reuid=sonde", "--regid=sonde", "--init-groups", "--"])
            .args([
                "/usr/bin/sonde",
                "results",
                "--archive=/var/lib/sonde/sonde.db",
                "list",
            ]),
    );
    assert!(listed.contains(&id[..8]), "{listed}");
    // Read as a file, not through a Store (which would migrate it).
    let version_now: i64 = rusqlite::Connection::open("/var/lib/sonde/sonde.db")
        .unwrap()
        .query_row("SELECT MAX(version) FROM sonde_schema", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version_now, i64::from(sonde_archive::schema::current()));
    assert_eq!(
        std::fs::metadata("/var/lib/sonde/sonde.db").unwrap().uid(),
        uid,
        "migrated by the sonde user, still its own"
    );

    // Removed: the binary goes, config and archive stay. Purged: all go.
    must(Command::new("dpkg").args(["-r", "sonde"]));
    assert!(!Path::new("/usr/bin/sonde").exists());
    assert!(Path::new("/etc/sonde/serve.toml").exists());
    assert!(Path::new("/var/lib/sonde/sonde.db").exists());
    must(Command::new("dpkg").args(["--purge", "sonde"]));
    assert!(!Path::new("/etc/sonde").exists());
    assert!(!Path::new("/var/lib/sonde").exists());
    let gone = Command::new("getent")
        .args(["passwd", "sonde"])
        .output()
        .unwrap();
    assert!(!gone.status.success(), "the sonde user is gone");
    let kept = Command::new("dpkg-statoverride")
        .args(["--list", "/etc/sonde/serve.toml"])
        .output()
        .unwrap();
    assert!(!kept.status.success(), "the statoverride is gone");
}
