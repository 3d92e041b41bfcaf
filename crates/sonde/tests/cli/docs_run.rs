//! Docs that run: every `sonde` command line in README.md and docs/*.md
//! (in a code block) is checked against the command line there is, and
//! the blocks marked `<!-- docs-test: run -->` are run as written, their
//! shown output compared with what they print. A doc that drifts from the
//! CLI fails here.
//!
//! - A command as a user would copy it (`sonde tcp server.example -P 8`)
//!   is read by sonde's own parser and nothing else (`SONDE_PARSE_ONLY`):
//!   every subcommand, flag and flag value must read. A command given to
//!   `sonde lab exec … --` is read too, when it is sonde.
//! - A form (`sonde results list [--test tcp|udp|ping]`, `sonde ping HOST`)
//!   is not copied as is: its subcommand must exist and every flag it
//!   names must be in that subcommand's `--help`.
//! - A run block runs on this machine alone, against a fresh archive
//!   (`SONDE_ARCHIVE`), from the repository's root. In a transcript (`$ `
//!   before each command) the lines after a command are what it prints:
//!   each must be among the lines it printed, numbers and ids aside (a
//!   JSON document: the same top-level keys).

use crate::common::{sonde, TempDir};
use std::path::{Path, PathBuf};

/// Placeholders a form uses for what the user fills in.
const PLACEHOLDERS: [&str; 27] = [
    "HOST",
    "FILE",
    "PLAN",
    "NAME",
    "ID",
    "URL",
    "DIR",
    "STACK",
    "RESULT",
    "ADDR",
    "PORT",
    "NODE",
    "CMD",
    "LINK",
    "AGENT",
    "SELECTION",
    "BYTES",
    "RATE",
    "SIZE",
    "CC",
    "N",
    "DURATION",
    "K",
    "PATH",
    "T",
    "KEY",
    "START",
];

/// One command line of a doc.
#[derive(Debug)]
struct DocCmd {
    at: String,
    text: String,
    /// In a block marked to run: the exit code it must give.
    run: Option<i32>,
    /// A transcript's lines after the command: what it prints.
    shown: Vec<String>,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn docs() -> Vec<(String, String)> {
    let mut files = vec![root().join("README.md")];
    let mut more: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    more.sort();
    files.extend(more);
    files
        .into_iter()
        .map(|p| {
            let name = p.strip_prefix(root()).unwrap_or(&p).display().to_string();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

/// The run marker before a block: `<!-- docs-test: run -->`, or `<!--
/// docs-test: run, exits 1 -->` for a block that shows a failure.
fn marker(line: &str) -> Option<i32> {
    let m = line.trim().strip_prefix("<!-- docs-test: run")?;
    let m = m.strip_suffix("-->")?.trim();
    Some(match m.strip_prefix(", exits ") {
        Some(code) => code.trim().parse().ok()?,
        None => 0,
    })
}

/// Every command line in `text`'s code blocks (fenced, or indented by
/// four spaces), continuation lines joined.
fn commands(file: &str, text: &str) -> Vec<DocCmd> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let mut run_next = None;
    while i < lines.len() {
        if let Some(code) = marker(lines[i]) {
            run_next = Some(code);
            i += 1;
            continue;
        }
        // A block: a fence to its end, or a run of indented lines.
        let (end, body_from, next) = if lines[i].trim_start().starts_with("```") {
            let end = (i + 1..lines.len())
                .find(|&j| lines[j].trim_start().starts_with("```"))
                .unwrap_or(lines.len());
            (end, i + 1, end + 1)
        } else if lines[i].starts_with("    ") && lines[i].trim_start().starts_with(['$', 's']) {
            let end = (i..lines.len())
                .find(|&j| !(lines[j].starts_with("    ") || lines[j].trim().is_empty()))
                .unwrap_or(lines.len());
            (end, i, end)
        } else {
            i += 1;
            continue;
        };
        let body: Vec<&str> = lines[body_from..end].iter().map(|l| l.trim()).collect();
        let transcript = body.iter().any(|l| l.starts_with("$ sonde"));
        let run = run_next.take();
        let mut j = 0;
        while j < body.len() {
            let line = body[j];
            let cmd = if transcript {
                line.strip_prefix("$ ")
            } else {
                Some(line)
            };
            let Some(cmd) = cmd.filter(|c| c.starts_with("sonde ")) else {
                j += 1;
                continue;
            };
            let at = format!("{file}:{}", body_from + j + 1);
            let mut text = cmd.to_string();
            while text.ends_with('\\') && j + 1 < body.len() {
                j += 1;
                text = format!("{} {}", text.trim_end_matches('\\').trim_end(), body[j]);
            }
            j += 1;
            let mut shown = Vec::new();
            while transcript && j < body.len() && !body[j].starts_with("$ ") {
                shown.push(body[j].to_string());
                j += 1;
            }
            out.push(DocCmd {
                at,
                text,
                run,
                shown,
            });
        }
        i = next;
    }
    out
}

/// The line without its shell comment (a `#` after a space, outside
/// quotes).
fn without_comment(line: &str) -> &str {
    let (mut single, mut double) = (false, false);
    let mut prev = ' ';
    for (k, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && prev.is_whitespace() => return &line[..k],
            _ => {}
        }
        prev = c;
    }
    line
}

/// The simple commands of a line (`a && b`), each as its words, with
/// redirections and a trailing `&` left out.
fn simple_commands(line: &str) -> Vec<Vec<String>> {
    let words = shlex::split(without_comment(line)).unwrap_or_default();
    let mut out = vec![Vec::new()];
    let mut skip = false;
    for w in words {
        if skip {
            skip = false;
            continue;
        }
        match w.as_str() {
            "&&" | ";" => out.push(Vec::new()),
            "&" => {}
            ">" | ">>" | "2>" | "<" => skip = true,
            _ if w.starts_with('>') => {}
            _ => out.last_mut().unwrap().push(w),
        }
    }
    out.retain(|c| c.first().is_some_and(|w| w == "sonde"));
    out
}

/// The command given to `sonde lab exec … --`, if it is sonde.
fn inner(words: &[String]) -> Option<Vec<String>> {
    let dashes = words.iter().position(|w| w == "--")?;
    let rest = words[dashes + 1..].to_vec();
    (words.get(1).is_some_and(|w| w == "lab") && rest.first().is_some_and(|w| w == "sonde"))
        .then_some(rest)
}

/// Whether a word is a form's: an optional part, alternatives, an
/// ellipsis, or a placeholder (alone, as a flag's value, or before a
/// suffix: `HOST`, `--dir=DIR`, `PLAN.toml`, `NAME=ADDR`).
fn is_form_word(w: &str) -> bool {
    let address = w.contains("://") || w.contains("::");
    if !address && (w.starts_with('[') || w.ends_with(']') || w.contains('|')) {
        return true;
    }
    if w.contains('…') || w.contains("...") {
        return true;
    }
    let value = match w.split_once('=') {
        Some((flag, v)) if flag.starts_with('-') => v,
        _ => w,
    };
    value
        .split(['=', '.', ':'])
        .next()
        .is_some_and(|head| PLACEHOLDERS.contains(&head))
}

/// Whether `help` names `flag` (not as the start of a longer one).
fn mentions(help: &str, flag: &str) -> bool {
    help.match_indices(flag).any(|(k, _)| {
        help[k + flag.len()..]
            .chars()
            .next()
            .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
    })
}

/// `sonde WORDS` read by sonde's parser only: its error, if any.
fn parse_error(words: &[String]) -> Option<String> {
    let out = sonde()
        .args(&words[1..])
        .env("SONDE_PARSE_ONLY", "1")
        .output()
        .unwrap();
    (!out.status.success()).then(|| String::from_utf8_lossy(&out.stderr).to_string())
}

/// A form's subcommand, and the flags it names missing from its help.
fn form_error(words: &[String]) -> Option<String> {
    let path: Vec<&String> = words[1..]
        .iter()
        .take_while(|w| {
            w.chars().all(|c| c.is_ascii_lowercase() || c == '-') && !w.starts_with('-')
        })
        .collect();
    let help = sonde()
        .args(&path)
        .arg("--help")
        .env("SONDE_PARSE_ONLY", "1")
        .output()
        .unwrap();
    if !help.status.success() {
        return Some(format!("sonde {path:?} --help failed"));
    }
    let help = String::from_utf8_lossy(&help.stdout);
    let missing: Vec<String> = words
        .iter()
        .map(|w| w.trim_start_matches('['))
        .filter(|w| w.starts_with('-') && *w != "--")
        .map(|w| w.split(['=', ']', '|']).next().unwrap_or(w).to_string())
        .filter(|flag| !mentions(&help, flag))
        .collect();
    (!missing.is_empty()).then(|| format!("not in `sonde {path:?} --help`: {missing:?}"))
}

/// A line with its numbers, ids and spacing made alike.
fn shape(line: &str) -> String {
    let mut out = String::new();
    let mut number = false;
    for c in line.chars() {
        if c.is_ascii_digit() || (number && (c == '.' || c.is_ascii_hexdigit())) {
            if !number {
                out.push('#');
            }
            number = true;
        } else {
            number = false;
            out.push(c);
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether `printed` shows what the doc shows.
fn shows(shown: &[String], printed: &str) -> Result<(), String> {
    let shown: Vec<&String> = shown
        .iter()
        .filter(|l| !l.trim().is_empty() && !l.contains('…'))
        .collect();
    if shown.first().is_some_and(|l| l.starts_with('{')) {
        let doc: serde_json::Value = serde_json::from_str(
            &shown
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        )
        .map_err(|e| format!("the doc's JSON does not read: {e}"))?;
        let got: serde_json::Value =
            serde_json::from_str(printed).map_err(|e| format!("not JSON: {e}\n{printed}"))?;
        for key in doc.as_object().into_iter().flat_map(|o| o.keys()) {
            if got.get(key).is_none() {
                return Err(format!("no key {key} in\n{printed}"));
            }
        }
        return Ok(());
    }
    let got: Vec<String> = printed.lines().map(shape).collect();
    for line in shown {
        if !got.contains(&shape(line)) {
            return Err(format!(
                "the doc shows\n  {line}\nwhich it did not print:\n{printed}"
            ));
        }
    }
    Ok(())
}

#[test]
fn every_command_the_docs_show_reads_and_the_marked_ones_run_as_shown() {
    let archive = TempDir::new("docs-run");
    let (mut parsed, mut forms, mut ran) = (0, 0, 0);
    let mut wrong = Vec::new();
    for (file, text) in docs() {
        for cmd in commands(&file, &text) {
            for words in simple_commands(&cmd.text) {
                let mut each = vec![words.clone()];
                each.extend(inner(&words));
                for w in &each {
                    let err = if w.iter().any(|x| is_form_word(x)) {
                        forms += 1;
                        form_error(w)
                    } else {
                        parsed += 1;
                        parse_error(w)
                    };
                    if let Some(e) = err {
                        wrong.push(format!("{}: {}\n  {}", cmd.at, cmd.text, e.trim()));
                    }
                }
                let Some(code) = cmd.run else { continue };
                ran += 1;
                let out = sonde()
                    .args(&words[1..])
                    .current_dir(root())
                    .env("SONDE_ARCHIVE", archive.join("docs.db"))
                    .output()
                    .unwrap();
                let printed = format!(
                    "{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
                if out.status.code() != Some(code) {
                    wrong.push(format!(
                        "{}: {}\n  exited {:?}, not {code}:\n{printed}",
                        cmd.at,
                        cmd.text,
                        out.status.code()
                    ));
                } else if let Err(e) = shows(&cmd.shown, &String::from_utf8_lossy(&out.stdout)) {
                    wrong.push(format!("{}: {}\n  {e}", cmd.at, cmd.text));
                }
            }
        }
    }
    eprintln!("docs: {parsed} command lines read, {forms} forms checked, {ran} run");
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
    // The docs have commands (a reader that found none would pass).
    assert!(
        parsed > 100 && forms > 30 && ran >= 10,
        "{parsed} {forms} {ran}"
    );
}

#[test]
fn the_readers_of_doc_blocks_find_what_is_there() {
    let md = "Text.\n\n<!-- docs-test: run -->\n```\nsonde token new --name ops   # a token\n\
              sonde tcp ::1 \\\n  -t 1\n```\n\n    $ sonde overhead ipv6/udp\n    [1] ipv6/udp\n\n\
              sonde prose line\n";
    let cmds = commands("x.md", md);
    let texts: Vec<&str> = cmds.iter().map(|c| c.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "sonde token new --name ops   # a token",
            "sonde tcp ::1 -t 1",
            "sonde overhead ipv6/udp"
        ]
    );
    assert_eq!(
        (cmds[0].run, cmds[1].run, cmds[2].run),
        (Some(0), Some(0), None)
    );
    assert_eq!(cmds[2].shown, ["[1] ipv6/udp", ""]);
    assert_eq!(
        simple_commands("sonde lab up p.toml && sonde lab exec a -- sonde udp ::1 > r.json &"),
        [
            vec!["sonde", "lab", "up", "p.toml"],
            vec!["sonde", "lab", "exec", "a", "--", "sonde", "udp", "::1"]
        ]
    );
    for form in [
        "HOST",
        "[--archive=PATH|URL]",
        "FILE…",
        "PLAN.toml",
        "--dir=DIR",
        "tcp|udp",
    ] {
        assert!(is_form_word(form), "{form}");
    }
    for word in [
        "::1",
        "'http://[::1]:8080/'",
        "B",
        "A=2001:2::1",
        "1/100",
        "http://[::1]:8080/",
    ] {
        assert!(!is_form_word(word), "{word}");
    }
    assert_eq!(shape("run   1  IPv6  loss 0.000 %"), "run # IPv# loss # %");
    assert!(shows(&["run 2 IPv6".into()], "run 1 IPv6\n").is_ok());
    assert!(shows(&["run 2 IPv6 loss".into()], "run 1 IPv6 rtt\n").is_err());
}
