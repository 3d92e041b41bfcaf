//! `--help` of every command against the copy checked in under
//! tests/snapshots/, so that a flag added, renamed or reworded shows up
//! in review. After a deliberate change, rewrite the copies with
//!
//!     SONDE_BLESS=1 cargo test -p sonde --test cli help_snapshots
//!
//! and commit them with the change (docs/development.md).

use crate::common;
use common::{sonde, stderr};
use std::path::PathBuf;

const COMMANDS: [&str; 17] = [
    "", "tcp", "udp", "ping", "trace", "serve", "run", "lab", "sweep", "ndr", "qos", "overhead",
    "tune", "results", "campaign", "compare", "report",
];

fn snapshot(command: &str) -> PathBuf {
    let name = if command.is_empty() { "sonde" } else { command };
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(format!("help-{name}.txt"))
}

fn help(command: &str) -> String {
    let mut cmd = sonde();
    if !command.is_empty() {
        cmd.arg(command);
    }
    // clap wraps to the terminal's width only with a feature sonde does
    // not use; COLUMNS is set anyway so that the text never depends on it.
    let o = cmd.arg("--help").env("COLUMNS", "100").output().unwrap();
    assert!(o.status.success(), "sonde {command} --help: {}", stderr(&o));
    String::from_utf8(o.stdout).expect("UTF-8 help")
}

#[test]
fn help_matches_the_checked_in_snapshots() {
    let bless = std::env::var_os("SONDE_BLESS").is_some_and(|v| v == "1");
    let mut changed = Vec::new();
    for command in COMMANDS {
        let (now, file) = (help(command), snapshot(command));
        if bless {
            std::fs::write(&file, &now).unwrap();
            continue;
        }
        let before = std::fs::read_to_string(&file).unwrap_or_default();
        if before != now {
            let first = before
                .lines()
                .zip(now.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(before.lines().count().min(now.lines().count()));
            changed.push(format!(
                "`sonde {command} --help` differs from {} from line {}:\n  was: {:?}\n  now: {:?}",
                file.display(),
                first + 1,
                before.lines().nth(first).unwrap_or("<end>"),
                now.lines().nth(first).unwrap_or("<end>"),
            ));
        }
    }
    assert!(
        changed.is_empty(),
        "{}\nIf the change is meant, run: SONDE_BLESS=1 cargo test -p sonde --test cli help_snapshots",
        changed.join("\n")
    );
}

#[test]
fn the_snapshots_name_the_flags_iperf3_users_reach_for() {
    // A snapshot blessed by mistake without them would pass the test
    // above: these stay whatever else changes.
    let tcp = std::fs::read_to_string(snapshot("tcp")).unwrap();
    for flag in [
        "-V, --verbose",
        "-f, --format",
        "--logfile",
        "-T, --title",
        "-J, --json",
    ] {
        assert!(tcp.contains(flag), "help-tcp.txt lacks {flag}");
    }
    let top = std::fs::read_to_string(snapshot("")).unwrap();
    assert!(
        top.contains("--version") && top.contains("completions"),
        "{top}"
    );
}
