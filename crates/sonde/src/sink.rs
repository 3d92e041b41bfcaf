//! Where a command's output goes: the terminal (results on standard
//! output, warnings on standard error), or with `--logfile FILE` one file,
//! opened for appending, that takes both, as iperf3's `--logfile` does.

use crate::failure::Failure;
use anyhow::anyhow;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};

#[derive(Debug, Clone, Default)]
pub enum Sink {
    #[default]
    Terminal,
    File(Arc<Mutex<File>>),
}

/// `path` opened for appending (created if missing).
pub fn append(path: &Path) -> io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

impl Sink {
    /// The terminal, or `path` opened for appending; a file that cannot
    /// be opened is a usage error naming it.
    pub fn open(path: Option<&Path>) -> Result<Self, Failure> {
        match path {
            None => Ok(Sink::Terminal),
            Some(p) => append(p)
                .map(|f| Sink::File(Arc::new(Mutex::new(f))))
                .map_err(|e| Failure::Usage(anyhow!("--logfile {}: {e}", p.display()))),
        }
    }

    pub fn is_file(&self) -> bool {
        matches!(self, Sink::File(_))
    }

    /// Output: standard output, or the file.
    pub fn out(&self, text: &str) -> io::Result<()> {
        match self {
            Sink::Terminal => {
                let mut out = io::stdout().lock();
                out.write_all(text.as_bytes())?;
                out.flush()
            }
            Sink::File(f) => write_file(f, text),
        }
    }

    /// Warnings: standard error, or the file.
    pub fn err(&self, text: &str) {
        let _ = match self {
            Sink::Terminal => io::stderr().write_all(text.as_bytes()),
            Sink::File(f) => write_file(f, text),
        };
    }
}

fn write_file(f: &Mutex<File>, text: &str) -> io::Result<()> {
    let mut f = f.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    f.write_all(text.as_bytes())?;
    f.flush()
}
