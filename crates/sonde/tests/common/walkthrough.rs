//! A docs lab walkthrough, run as written: the command lines of a block
//! marked `<!-- docs-test: lab -->` (run by tests/lab/lab_docs.rs) or
//! `<!-- docs-test: lab NAME -->` (run by the lab test that checks its
//! measurements: `Walkthrough::named("docs/methods.md", "stesta")`), in
//! order, from a directory of the test's own where `examples/` is the
//! repository's and a topology brought up as `NAME.toml` is the doc's
//! ```toml block named NAME.
//!
//! A line ending in `&` runs in the background until the walkthrough is
//! dropped, and a `sonde serve` so started is waited for until it listens
//! (on its `-p`, else 5201). Every other line must exit 0. The `sonde` a
//! line names, in a node too, is the one this build made, as if
//! installed. What a transcript shows after a line (`$ sonde …`) must be
//! among what it printed, numbers and ids aside. A test that reads a
//! measurement asks for `-J` on the lines of the subcommands it names
//! (`run(&["sweep"])`): the same command, its result as JSON. Dropped,
//! the walkthrough's labs go down.

use super::docs::{
    commands, docs, in_background, root, shows, simple_commands, toml_block, DocCmd, Mark,
};
use super::lab_cli::{listening_in, KillOnDrop};
use super::{sonde, stderr, TempDir};
use serde_json::Value;
use std::process::Stdio;

/// The lab and node of `sonde lab exec --lab LAB NODE -- …`.
fn lab_and_node(words: &[String]) -> Option<(String, String)> {
    let lab = words.iter().position(|w| w == "--lab")?;
    Some((words.get(lab + 1)?.clone(), words.get(lab + 2)?.clone()))
}

/// The sonde subcommand a line runs, in a node or here (`sweep` of
/// `sonde lab exec --lab L a -- sonde sweep …`).
fn subcommand(words: &[String]) -> Option<&str> {
    let inner = match words.iter().position(|w| w == "--") {
        Some(k) if words.get(k + 1).is_some_and(|w| w == "sonde") => &words[k + 1..],
        Some(_) => return None,
        None => words,
    };
    inner.get(1).map(String::as_str)
}

/// The port a `sonde serve` line listens on.
fn serve_port(words: &[String]) -> u16 {
    words
        .iter()
        .position(|w| w == "-p" || w == "--port")
        .and_then(|k| words.get(k + 1)?.parse().ok())
        .unwrap_or(5201)
}

pub struct Walkthrough {
    pub file: String,
    doc: String,
    pub lines: Vec<DocCmd>,
}

/// One foreground line run, and what it printed.
pub struct Ran {
    pub at: String,
    pub words: Vec<String>,
    pub stdout: String,
}

impl Ran {
    /// The JSON the line printed (it was given `-J`).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("{}: not JSON ({e}): {}", self.at, self.stdout))
    }
}

/// A walkthrough that ran: what each line printed; its background
/// processes are killed and its labs brought down when it drops.
pub struct Walked {
    pub ran: Vec<Ran>,
    background: Vec<KillOnDrop>,
    labs: Vec<String>,
    pub dir: TempDir,
}

impl Walked {
    /// The lines that ran `sonde SUB`, in order.
    pub fn of(&self, sub: &str) -> Vec<&Ran> {
        self.ran
            .iter()
            .filter(|r| subcommand(&r.words) == Some(sub))
            .collect()
    }
}

impl Drop for Walked {
    fn drop(&mut self) {
        self.background.clear();
        for lab in &self.labs {
            let _ = sonde().args(["lab", "down", lab]).output();
        }
    }
}

impl Walkthrough {
    /// Every walkthrough of the docs with `mark`.
    pub fn marked(mark: &Mark) -> Vec<Walkthrough> {
        let mut out = Vec::new();
        for (file, doc) in docs() {
            let mut blocks: Vec<Vec<DocCmd>> = Vec::new();
            let mut last_at = None;
            for cmd in commands(&file, &doc) {
                if cmd.run.as_ref() != Some(mark) {
                    continue;
                }
                // Lines of one block are consecutive commands; a block of
                // its own starts where a `lab up` does.
                let starts = simple_commands(&cmd.text)
                    .iter()
                    .any(|w| w.get(1..3) == Some(&["lab".into(), "up".into()][..]));
                if starts || last_at.is_none() {
                    blocks.push(Vec::new());
                }
                last_at = Some(cmd.at.clone());
                blocks.last_mut().unwrap().push(cmd);
            }
            out.extend(blocks.into_iter().map(|lines| Walkthrough {
                file: file.clone(),
                doc: doc.clone(),
                lines,
            }));
        }
        out
    }

    /// The walkthrough marked `<!-- docs-test: lab NAME -->` in `file`
    /// (its blocks so marked, in order).
    pub fn named(file: &str, name: &str) -> Walkthrough {
        let mark = Mark::Lab(Some(name.to_string()));
        let mut parts = Walkthrough::marked(&mark)
            .into_iter()
            .filter(|w| w.file == file);
        let mut all = parts
            .next()
            .unwrap_or_else(|| panic!("no walkthrough marked `docs-test: lab {name}` in {file}"));
        for more in parts {
            all.lines.extend(more.lines);
        }
        all
    }

    /// Runs every line in order, giving `-J` to the lines of the sonde
    /// subcommands in `json`; panics, with the lab down, on a line that
    /// fails.
    pub fn run(&self, json: &[&str]) -> Walked {
        let dir = TempDir::new("walkthrough");
        std::os::unix::fs::symlink(root().join("examples"), dir.join("examples")).unwrap();
        let bin = std::path::Path::new(env!("CARGO_BIN_EXE_sonde"));
        let path = format!(
            "{}:{}",
            bin.parent().unwrap().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut walked = Walked {
            ran: Vec::new(),
            background: Vec::new(),
            labs: Vec::new(),
            dir,
        };
        let dir = walked.dir.to_path_buf();
        for cmd in &self.lines {
            for mut words in simple_commands(&cmd.text) {
                if words.get(1..3) == Some(&["lab".to_string(), "up".to_string()][..]) {
                    let topology = &words[3];
                    let name = topology.trim_end_matches(".toml");
                    if !dir.join(topology).exists() {
                        let body = toml_block(&self.doc, name).unwrap_or_else(|| {
                            panic!("{}: no ```toml block named {name} in {}", cmd.at, self.file)
                        });
                        std::fs::write(dir.join(topology), body).unwrap();
                    }
                    let text = std::fs::read_to_string(dir.join(topology)).unwrap();
                    walked
                        .labs
                        .push(lab_name(&text).unwrap_or(name).to_string());
                }
                if subcommand(&words).is_some_and(|s| json.contains(&s)) {
                    words.push("-J".into());
                }
                let mut run = sonde();
                run.args(&words[1..]).current_dir(&dir).env("PATH", &path);
                if in_background(&cmd.text) {
                    let child = run
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .spawn()
                        .unwrap();
                    walked.background.push(KillOnDrop(child));
                    if subcommand(&words) == Some("serve") {
                        let (lab, node) =
                            lab_and_node(&words).unwrap_or_else(|| panic!("{}: say --lab", cmd.at));
                        listening_in(&lab, &node, serve_port(&words));
                    }
                    continue;
                }
                let began = std::time::Instant::now();
                let out = run.output().unwrap();
                let stdout = String::from_utf8_lossy(&out.stdout).to_string();
                // Each line's time, for the suite's budget.
                eprintln!(
                    "{}: {} ({:.1} s)\n{stdout}",
                    cmd.at,
                    cmd.text,
                    began.elapsed().as_secs_f64()
                );
                assert!(
                    out.status.success(),
                    "{}: {}\n{}",
                    cmd.at,
                    cmd.text,
                    stderr(&out)
                );
                // What the doc shows after a line run as written is
                // what it printed, numbers aside (a line given -J prints
                // JSON instead: its figures are the test's to check).
                if words.last().is_none_or(|w| w != "-J") {
                    if let Err(e) = shows(&cmd.shown, &stdout) {
                        panic!("{}: {}\n{e}", cmd.at, cmd.text);
                    }
                }
                walked.ran.push(Ran {
                    at: cmd.at.clone(),
                    words,
                    stdout,
                });
            }
        }
        walked
    }
}

/// The lab's own name in a topology's text (`name = "…"` before its
/// first table).
fn lab_name(topology: &str) -> Option<&str> {
    let head = topology.split("\n[").next()?;
    head.lines()
        .find_map(|l| l.trim().strip_prefix("name = \"")?.split('"').next())
}
