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

use crate::common::docs::{
    commands, docs, inner, is_form_word, mentions, root, shape, shows, simple_commands, Mark,
};
use crate::common::{sonde, TempDir};

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
                let Some(Mark::Run(code)) = cmd.run.clone() else {
                    continue;
                };
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
    let run = Some(Mark::Run(0));
    assert_eq!(
        (&cmds[0].run, &cmds[1].run, &cmds[2].run),
        (&run, &run, &None)
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

/// A walkthrough marked `<!-- docs-test: lab NAME -->` is run by the lab
/// test that checks its measurements: one of tests/lab/ must ask for it by
/// file and name, and every one asked for must be marked (a renamed mark
/// or a dropped test would leave a walkthrough unrun).
#[test]
fn every_named_lab_walkthrough_has_its_test() {
    let lab_dir = root().join("crates/sonde/tests/lab");
    let tests: String = std::fs::read_dir(&lab_dir)
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
        .collect();
    let mut named = Vec::new();
    for (file, text) in docs() {
        for cmd in commands(&file, &text) {
            if let Some(Mark::Lab(Some(name))) = cmd.run {
                let asked = format!("Walkthrough::named(\"{file}\", \"{name}\")");
                assert!(
                    tests.contains(&asked),
                    "{}: walkthrough `{name}` is run by no lab test (none calls {asked})",
                    cmd.at
                );
                named.push(asked);
            }
        }
    }
    let asked = tests.matches("Walkthrough::named(").count();
    for call in tests.split("Walkthrough::named(").skip(1) {
        let call = format!("Walkthrough::named({}", call.split(')').next().unwrap());
        assert!(
            named.iter().any(|n| n.starts_with(&call)),
            "{call}): no such walkthrough is marked in the docs"
        );
    }
    assert!(asked >= 6, "{asked} lab tests run a walkthrough");
}
