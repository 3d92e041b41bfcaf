//! The docs' lab walkthroughs, run as written: every block marked
//! `<!-- docs-test: lab -->` in README.md and docs/*.md, its lines in
//! order, from a directory of the test's own (where a topology the
//! walkthrough brings up as `NAME.toml` is the doc's ```toml block named
//! NAME, and `examples/` is the repository's). A line ending in `&` runs
//! in the background until the block ends, and a `sonde serve` so started
//! is waited for until it listens. Every other line must exit 0. The
//! `sonde` a line names, in a node too, is the one this build made, as if
//! installed. Needs root; `SONDE_LAB=skip` skips elsewhere.

use crate::common;
use common::docs::{commands, docs, in_background, root, simple_commands, toml_block, Mark};
use common::lab_cli::{listening_in, serial, KillOnDrop};
use common::{lab_allowed, sonde, stderr};
use std::process::Stdio;

/// The lab and node of `sonde lab exec --lab LAB NODE -- …`.
fn lab_and_node(words: &[String]) -> Option<(String, String)> {
    let lab = words.iter().position(|w| w == "--lab")?;
    Some((words.get(lab + 1)?.clone(), words.get(lab + 2)?.clone()))
}

#[test]
fn the_docs_lab_walkthroughs_run_as_written() {
    if !lab_allowed() {
        return;
    }
    // It measures (an 18 Mbit/s UDP flow through a 9 Mbit/s shaper).
    let _one = serial();
    let dir = common::TempDir::new("lab-docs");
    std::os::unix::fs::symlink(root().join("examples"), dir.join("examples")).unwrap();
    // `sonde` in a node is the one built here, as if installed.
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_sonde"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut ran = 0;
    for (file, text) in docs() {
        let block: Vec<_> = commands(&file, &text)
            .into_iter()
            .filter(|c| c.run == Some(Mark::Lab))
            .collect();
        let mut background = Vec::new();
        let mut labs = Vec::new();
        for cmd in &block {
            for words in simple_commands(&cmd.text) {
                if words.get(1..3) == Some(&["lab".to_string(), "up".to_string()][..]) {
                    let topology = &words[3];
                    let name = topology.trim_end_matches(".toml");
                    if !dir.join(topology).exists() {
                        let body = toml_block(&text, name).unwrap_or_else(|| {
                            panic!("{}: no ```toml block named {name} in {file}", cmd.at)
                        });
                        std::fs::write(dir.join(topology), body).unwrap();
                    }
                    labs.push(name.to_string());
                }
                let mut run = sonde();
                run.args(&words[1..]).current_dir(&dir).env("PATH", &path);
                if in_background(&cmd.text) {
                    let child = run
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .spawn()
                        .unwrap();
                    background.push(KillOnDrop(child));
                    if words.iter().any(|w| w == "serve") {
                        let (lab, node) =
                            lab_and_node(&words).unwrap_or_else(|| panic!("{}: say --lab", cmd.at));
                        listening_in(&lab, &node, 5201);
                    }
                    continue;
                }
                let out = run.output().unwrap();
                eprintln!(
                    "{}: {}\n{}",
                    cmd.at,
                    cmd.text,
                    String::from_utf8_lossy(&out.stdout)
                );
                assert!(
                    out.status.success(),
                    "{}: {}\n{}",
                    cmd.at,
                    cmd.text,
                    stderr(&out)
                );
                ran += 1;
            }
        }
        drop(background);
        // A walkthrough ends with its lab down; one that failed part-way
        // leaves nothing behind either.
        for lab in labs {
            let _ = sonde().args(["lab", "down", &lab]).output();
        }
    }
    assert!(ran >= 4, "{ran} lab lines ran");
}
