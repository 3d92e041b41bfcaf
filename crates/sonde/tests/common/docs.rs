//! The docs' command lines, as the docs tests read them
//! (tests/cli/docs_run.rs reads and runs them on this machine,
//! tests/lab/lab_docs.rs runs the lab walkthroughs): README.md and
//! docs/*.md, their code blocks, the run markers before a block, and a
//! line's simple commands as a shell splits them.

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
pub struct DocCmd {
    pub at: String,
    pub text: String,
    /// In a block marked to run: the exit code it must give.
    pub run: Option<Mark>,
    /// A transcript's lines after the command: what it prints.
    pub shown: Vec<String>,
}

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn docs() -> Vec<(String, String)> {
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

/// What a marker before a block asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mark {
    /// `<!-- docs-test: run -->`: run it on this machine; it must exit
    /// with this code (`<!-- docs-test: run, exits 1 -->` for a block that
    /// shows a failure).
    Run(i32),
    /// `<!-- docs-test: lab -->`: a lab walkthrough, run by
    /// tests/lab/lab_docs.rs; `<!-- docs-test: lab NAME -->`: one run by
    /// the lab test that checks its measurements against the lab's truth
    /// (`Walkthrough::named(FILE, NAME)`, common/walkthrough.rs).
    Lab(Option<String>),
}

fn marker(line: &str) -> Option<Mark> {
    let m = line.trim().strip_prefix("<!-- docs-test: ")?;
    let m = m.strip_suffix("-->")?.trim();
    if let Some(name) = m.strip_prefix("lab") {
        let name = name.trim();
        return Some(Mark::Lab((!name.is_empty()).then(|| name.to_string())));
    }
    let m = m.strip_prefix("run")?;
    Some(Mark::Run(match m.strip_prefix(", exits ") {
        Some(code) => code.trim().parse().ok()?,
        None if m.is_empty() => 0,
        None => return None,
    }))
}

/// Whether a line's command runs in the background (a trailing `&`).
pub fn in_background(line: &str) -> bool {
    without_comment(line).trim_end().ends_with('&')
}

/// The text of the ```toml block of `doc` whose `name` is `name` (a
/// topology a walkthrough brings up as `NAME.toml`).
pub fn toml_block(doc: &str, name: &str) -> Option<String> {
    let mut blocks = doc.split("```toml\n").skip(1);
    blocks.find_map(|b| {
        let body = b.split("```").next()?;
        body.lines()
            .any(|l| without_comment(l).trim() == format!("name = \"{name}\""))
            .then(|| body.to_string())
    })
}

/// Every command line in `text`'s code blocks (fenced, or indented by
/// four spaces), continuation lines joined.
pub fn commands(file: &str, text: &str) -> Vec<DocCmd> {
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
                run: run.clone(),
                shown,
            });
        }
        i = next;
    }
    out
}

/// The line without its shell comment (a `#` after a space, outside
/// quotes).
pub fn without_comment(line: &str) -> &str {
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
pub fn simple_commands(line: &str) -> Vec<Vec<String>> {
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
pub fn inner(words: &[String]) -> Option<Vec<String>> {
    let dashes = words.iter().position(|w| w == "--")?;
    let rest = words[dashes + 1..].to_vec();
    (words.get(1).is_some_and(|w| w == "lab") && rest.first().is_some_and(|w| w == "sonde"))
        .then_some(rest)
}

/// Whether a word is a form's: an optional part, alternatives, an
/// ellipsis, or a placeholder (alone, as a flag's value, or before a
/// suffix: `HOST`, `--dir=DIR`, `PLAN.toml`, `NAME=ADDR`).
pub fn is_form_word(w: &str) -> bool {
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
pub fn mentions(help: &str, flag: &str) -> bool {
    help.match_indices(flag).any(|(k, _)| {
        help[k + flag.len()..]
            .chars()
            .next()
            .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
    })
}

/// A line with its numbers, ids and spacing made alike.
pub fn shape(line: &str) -> String {
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
pub fn shows(shown: &[String], printed: &str) -> Result<(), String> {
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
