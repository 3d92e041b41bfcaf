//! Naming the archive on the command line, one way for every command
//! (docs/archive.md, "Which archive"):
//!
//! - `--archive` alone: the default archive; `--archive=PATH|URL`, or
//!   `--archive-to PATH|URL` (a space or `=`), another one.
//! - The default archive is one for the daemon and every command a user
//!   runs: `$SONDE_ARCHIVE` if set, else `$XDG_DATA_HOME/sonde/sonde.db`
//!   if that is set, else `/var/lib/sonde/sonde.db` as root (where `sonde
//!   serve` keeps it), else `~/.local/share/sonde/sonde.db`.
//!
//! A test keeps its result only when asked ([`KeepArgs`]); the archive's
//! own commands read the default one unless told ([`ArchiveArgs`]).

use crate::failure::Failure;
use anyhow::anyhow;
use clap::Args;
use sonde_archive::{Placement, Store};
use sonde_model::{MethodResult, TestResult};

/// The archive a command reads and manages.
#[derive(Debug, Clone, Default, Args)]
pub struct ArchiveArgs {
    /// The archive to use: the default one ($SONDE_ARCHIVE, else
    /// $XDG_DATA_HOME/sonde/sonde.db, else /var/lib/sonde/sonde.db as root,
    /// else ~/.local/share/sonde/sonde.db) unless =PATH or
    /// =postgres://… names another.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "", value_name = "PATH|URL", global = true)]
    pub archive: Option<String>,
    /// The archive to use, named after a space or '=': a SQLite file or a
    /// postgres:// URL.
    #[arg(
        long,
        value_name = "PATH|URL",
        global = true,
        conflicts_with = "archive"
    )]
    pub archive_to: Option<String>,
}

impl ArchiveArgs {
    /// The archive named, or the default one.
    pub fn location(&self) -> String {
        named(self.archive.as_deref(), self.archive_to.as_deref()).unwrap_or_else(default_location)
    }

    /// The archive opened (and migrated), or a failure naming it.
    pub fn open(&self) -> Result<Store, Failure> {
        Store::open(&self.location()).map_err(|e| Failure::Run(anyhow!(e)))
    }

    /// The flag that names this archive again in a command shown to the
    /// user (empty for the default one).
    pub fn flag(&self) -> String {
        match named(self.archive.as_deref(), self.archive_to.as_deref()) {
            Some(l) => format!(" --archive-to {}", shell_word(&l)),
            None => String::new(),
        }
    }
}

/// Whether and where a test keeps its result, and the labels it is kept
/// with.
#[derive(Debug, Clone, Default, Args)]
#[command(group(clap::ArgGroup::new("keep").args(["archive", "archive_to"]).multiple(false)))]
pub struct KeepArgs {
    /// Keep the result in the archive: the default one ($SONDE_ARCHIVE,
    /// else $XDG_DATA_HOME/sonde/sonde.db, else /var/lib/sonde/sonde.db as
    /// root, else ~/.local/share/sonde/sonde.db), or =PATH, or
    /// =postgres://… for a central one.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "", value_name = "PATH|URL")]
    pub archive: Option<String>,
    /// Keep the result in this archive, named after a space or '=': a
    /// SQLite file or a postgres:// URL.
    #[arg(long, value_name = "PATH|URL", conflicts_with = "archive")]
    pub archive_to: Option<String>,
    /// A label to keep the result with, KEY=VALUE (repeatable): what
    /// `results list --label`, `compare` and `report --by label:KEY`
    /// select and group by. Needs --archive or --archive-to.
    #[arg(long = "label", value_name = "KEY=VALUE", value_parser = label, requires = "keep")]
    pub labels: Vec<(String, String)>,
}

impl KeepArgs {
    /// The archive the result goes to, if it is kept.
    pub fn location(&self) -> Option<String> {
        match (&self.archive, &self.archive_to) {
            (None, None) => None,
            (a, to) => Some(named(a.as_deref(), to.as_deref()).unwrap_or_else(default_location)),
        }
    }

    /// Where the result goes and with what labels, if it is kept.
    pub fn kept(&self) -> Option<Kept> {
        Some(Kept {
            location: self.location()?,
            at: Placement {
                labels: self.labels.iter().cloned().collect(),
                ..Placement::default()
            },
        })
    }
}

/// A result to be kept: the archive, and the labels it is kept with.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Kept {
    pub location: String,
    pub at: Placement,
}

impl Kept {
    /// Keeps `result` here. A result that cannot be kept is a failure
    /// (exit 1) naming the archive; the result was printed.
    pub fn result(&self, result: &TestResult) -> Result<(), Failure> {
        Store::open(&self.location)
            .and_then(|mut s| s.put_result(result, &self.at))
            .map(drop)
            .map_err(|e| Failure::Run(anyhow!("result {} not kept: {e}", result.id)))
    }

    /// Keeps a method's `result` with its trials here.
    pub fn method(&self, result: &MethodResult) -> Result<(), Failure> {
        Store::open(&self.location)
            .and_then(|mut s| s.put_method(result, &self.at))
            .map(drop)
            .map_err(|e| Failure::Run(anyhow!("method result {} not kept: {e}", result.id)))
    }
}

/// `KEY=VALUE`, both non-empty.
pub fn label(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() && !v.is_empty() => {
            Ok((k.trim().to_string(), v.to_string()))
        }
        _ => Err(format!("'{s}': write a label as KEY=VALUE")),
    }
}

/// The archive `--archive=…` or `--archive-to …` named (not the default).
fn named(archive: Option<&str>, to: Option<&str>) -> Option<String> {
    to.or(archive.filter(|a| !a.is_empty())).map(str::to_string)
}

/// A location as given, or the default archive for an empty one.
pub fn resolve(given: &str) -> String {
    if given.is_empty() {
        default_location()
    } else {
        given.to_string()
    }
}

/// The default archive: one for the daemon and every command of a user.
pub fn default_location() -> String {
    if let Some(v) = std::env::var("SONDE_ARCHIVE")
        .ok()
        .filter(|v| !v.is_empty())
    {
        return v;
    }
    let system = std::env::var_os("XDG_DATA_HOME").is_none_or(|v| v.is_empty()) && is_root();
    sonde_archive::default_path(system).display().to_string()
}

/// Whether this process runs as root.
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

/// `s` as one word of a shell command (quoted when it has to be).
fn shell_word(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-:@%+=,".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// `--archive PATH` (a space where '=' belongs) among `args`: what the
/// user meant, said as a usage error. Without this, clap takes PATH for
/// the command's host or campaign name, or says only that it did not
/// expect it.
/// `sonde serve --archive PATH` takes its value either way (it always
/// names one), and what follows `--` is another command's.
pub fn misspelt(args: &[String]) -> Option<String> {
    let command = args.iter().skip(1).find(|a| !a.starts_with('-'));
    if command.is_some_and(|c| c == "serve") {
        return None;
    }
    let end = args.iter().position(|a| a == "--").unwrap_or(args.len());
    args[..end].windows(2).find_map(|w| {
        let v = &w[1];
        let like_archive = v.starts_with('/')
            || v.starts_with("./")
            || v.starts_with("../")
            || v.starts_with("~/")
            || v.ends_with(".db")
            || v.starts_with("postgres://")
            || v.starts_with("postgresql://");
        (w[0] == "--archive" && like_archive).then(|| {
            format!(
                "`--archive {v}`: --archive alone is the default archive; name another as \
                 --archive={v} or --archive-to {v}"
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn a_path_after_a_space_is_named_as_the_mistake_it_is() {
        let m = misspelt(&args("sonde udp ::1 --archive /tmp/a.db")).unwrap();
        assert!(m.contains("--archive=/tmp/a.db") && m.contains("--archive-to /tmp/a.db"));
        assert!(misspelt(&args("sonde campaign status --archive x.db")).is_some());
        assert!(
            misspelt(&args("sonde tcp --archive ::1")).is_none(),
            "a host"
        );
        assert!(misspelt(&args("sonde http --archive https://a.example/")).is_none());
        assert!(misspelt(&args("sonde tcp ::1 --archive=/tmp/a.db")).is_none());
        assert!(misspelt(&args("sonde serve --archive /var/lib/a.db")).is_none());
        assert!(misspelt(&args("sonde -v serve --archive /var/lib/a.db")).is_none());
        let inner = "sonde lab exec --lab l a -- sonde status --archive /x.db";
        assert!(misspelt(&args(inner)).is_none(), "another command's");
    }

    #[test]
    fn labels_are_key_equals_value() {
        assert_eq!(label("path=open"), Ok(("path".into(), "open".into())));
        assert_eq!(
            label("cipher=aes=256"),
            Ok(("cipher".into(), "aes=256".into()))
        );
        assert!(label("path").is_err());
        assert!(label("=open").is_err());
        assert!(label("path=").is_err());
    }

    #[test]
    fn a_named_archive_wins_and_the_flag_names_it_again() {
        let a = ArchiveArgs {
            archive: None,
            archive_to: Some("/tmp/my archive.db".into()),
        };
        assert_eq!(a.location(), "/tmp/my archive.db");
        assert_eq!(a.flag(), " --archive-to '/tmp/my archive.db'");
        assert_eq!(ArchiveArgs::default().flag(), "");
        let k = KeepArgs {
            archive: Some(String::new()),
            ..KeepArgs::default()
        };
        assert_eq!(k.location(), Some(default_location()));
        assert_eq!(KeepArgs::default().location(), None);
    }
}
