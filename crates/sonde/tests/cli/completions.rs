//! `sonde completions SHELL` and `sonde man`: generated from the flags
//! the command line parses, and readable by the shells and roff. The
//! shells' own syntax checks run where the shell is installed
//! (scripts/system-deps.sh installs zsh and fish).

use crate::common;
use common::{sonde, stderr};
use std::process::Command;

fn generated(args: &[&str]) -> String {
    let o = sonde().args(args).output().unwrap();
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    String::from_utf8(o.stdout).expect("UTF-8")
}

/// `shell` checks the syntax of `script` without running it, if installed.
fn parses(shell: &str, check: &[&str], script: &str) {
    if !common::tool_present(shell, &["-c", "true"]) {
        return;
    }
    let file =
        std::env::temp_dir().join(format!("sonde-completion-{}.{shell}", std::process::id()));
    std::fs::write(&file, script).unwrap();
    let o = Command::new(shell).args(check).arg(&file).output().unwrap();
    assert!(
        o.status.success(),
        "{shell} refuses the script: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn completions_name_every_command_and_flag() {
    let bash = generated(&["completions", "bash"]);
    for word in [
        "--bitrate",
        "--json",
        "--logfile",
        "--format",
        "tcp",
        "udp",
        "ping",
        "serve",
    ] {
        assert!(bash.contains(word), "bash completion lacks {word}");
    }
    parses("bash", &["-n"], &bash);
    let zsh = generated(&["completions", "zsh"]);
    assert!(
        zsh.starts_with("#compdef sonde"),
        "{}",
        &zsh[..80.min(zsh.len())]
    );
    assert!(zsh.contains("--bitrate"));
    parses("zsh", &["-n"], &zsh);
    let fish = generated(&["completions", "fish"]);
    assert!(fish.contains("complete -c sonde"));
    assert!(
        fish.contains("-l bitrate"),
        "fish completion lacks --bitrate"
    );
    parses("fish", &["--no-execute"], &fish);
    // An unknown shell is a usage error naming it.
    let o = sonde().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("'tcsh'"), "{}", stderr(&o));
}

/// groff's warnings on `roff` (empty: none), or None where groff is
/// not installed (outside CI: see `common::tool_present`).
fn groff_warnings(roff: &str) -> Option<String> {
    use std::io::Write;
    use std::process::Stdio;
    if !common::tool_present("groff", &["--version"]) {
        return None;
    }
    let mut child = Command::new("groff")
        .args(["-k", "-man", "-Tutf8", "-ww", "-z"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    child.stdin.take()?.write_all(roff.as_bytes()).ok()?;
    let o = child.wait_with_output().ok()?;
    assert!(o.status.success(), "groff failed");
    Some(String::from_utf8_lossy(&o.stderr).into_owned())
}

#[test]
fn the_man_pages_are_roff_for_every_command() {
    let man = generated(&["man"]);
    assert!(man.contains(".TH sonde 1"), "no .TH line");
    for see in [
        "sonde\\-tcp(1)",
        "sonde\\-udp(1)",
        "sonde\\-ping(1)",
        "sonde\\-serve(1)",
    ] {
        assert!(man.contains(see), "sonde(1) does not point to {see}");
    }
    let pages = [
        "tcp",
        "udp",
        "ping",
        "serve",
        "run",
        "lab",
        "completions",
        "man",
    ];
    for page in pages {
        let roff = generated(&["man", page]);
        assert!(
            roff.contains(&format!(".TH sonde-{page} 1")),
            "sonde man {page}"
        );
        assert!(
            roff.contains(&format!("\\fBsonde {page}\\fR")),
            "synopsis of {page}"
        );
        if let Some(w) = groff_warnings(&roff) {
            assert!(w.is_empty(), "groff warns on sonde-{page}(1): {w}");
        }
    }
    assert!(generated(&["man", "tcp"]).contains("\\-\\-bitrate"));
    // --dir writes every page.
    let dir = common::TempDir::new("man");
    generated(&["man", "--dir", dir.to_str().unwrap()]);
    for page in pages {
        let file = dir.join(format!("sonde-{page}.1"));
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file:?}: {e}"));
        assert_eq!(text, generated(&["man", page]));
    }
    assert!(dir.join("sonde.1").exists());
    // A page that does not exist is a usage error listing the others.
    let o = sonde().args(["man", "nope"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("sonde-tcp"), "{}", stderr(&o));
}
