//! `sonde completions SHELL` and `sonde man`: shell completion scripts
//! and the manual page, generated from the same clap definitions that
//! parse the command line, so they never fall behind a flag.

use crate::failure::Failure;
use anyhow::anyhow;
use clap::Args;
use clap_complete::Shell;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    pub shell: Shell,
}

/// The completion script for `args.shell` on standard output, of `cmd`
/// (sonde's whole command line).
pub fn completions(args: CompletionsArgs, mut cmd: clap::Command) -> Result<(), Failure> {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "sonde", &mut out);
    write_out(&out)
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// The page of one command (`sonde man tcp` is sonde-tcp(1));
    /// without it, sonde(1).
    pub command: Option<String>,
    /// Write every page (sonde.1, sonde-tcp.1, …) into DIR instead.
    #[arg(long, value_name = "DIR", conflicts_with = "command")]
    pub dir: Option<PathBuf>,
}

/// Every page of `cmd`: sonde(1) and one per command, as (file name,
/// roff).
fn pages(cmd: clap::Command) -> Result<Vec<(String, Vec<u8>)>, Failure> {
    let mut pages = vec![("sonde.1".to_string(), render(cmd.clone())?)];
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("sonde-{}", sub.get_name());
        let page = sub
            .clone()
            .name(name.clone())
            .bin_name(format!("sonde {}", sub.get_name()))
            .disable_version_flag(true)
            .version(cmd.get_version().unwrap_or_default().to_string());
        pages.push((format!("{name}.1"), render(page)?));
    }
    Ok(pages)
}

fn render(cmd: clap::Command) -> Result<Vec<u8>, Failure> {
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut out)?;
    Ok(out)
}

/// A manual page on standard output, or all of them into a directory.
pub fn man(args: ManArgs, cmd: clap::Command) -> Result<(), Failure> {
    let pages = pages(cmd)?;
    if let Some(dir) = &args.dir {
        for (file, roff) in &pages {
            let path = dir.join(file);
            std::fs::write(&path, roff)
                .map_err(|e| Failure::Usage(anyhow!("--dir: {}: {e}", path.display())))?;
        }
        return Ok(());
    }
    let want = match &args.command {
        Some(c) => format!("sonde-{c}.1"),
        None => "sonde.1".to_string(),
    };
    match pages.iter().find(|(file, _)| *file == want) {
        Some((_, roff)) => write_out(roff),
        None => Err(Failure::Usage(anyhow!(
            "no command '{}': the pages are {}",
            args.command.unwrap_or_default(),
            pages
                .iter()
                .map(|(f, _)| f.trim_end_matches(".1"))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

fn write_out(bytes: &[u8]) -> Result<(), Failure> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(bytes)?;
    stdout.flush()?;
    Ok(())
}
