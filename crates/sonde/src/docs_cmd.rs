//! `sonde completions SHELL` and `sonde man`: shell completion scripts
//! and the manual page, generated from the same clap definitions that
//! parse the command line, so they never fall behind a flag.

use crate::cli::{Cli, Failure};
use clap::{Args, CommandFactory};
use clap_complete::Shell;

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    pub shell: Shell,
}

/// The completion script for `args.shell` on standard output.
pub fn completions(args: CompletionsArgs) -> Result<(), Failure> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "sonde", &mut out);
    write_out(&out)
}

/// The manual page: `sonde`'s, then one section per subcommand.
pub fn man() -> Result<(), Failure> {
    let cmd = Cli::command();
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut out)?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("sonde {}", sub.get_name());
        let sub = sub.clone().display_name(name.clone()).bin_name(name);
        out.extend_from_slice(b".\\\" ----\n");
        clap_mangen::Man::new(sub).title("sonde").render(&mut out)?;
    }
    write_out(&out)
}

fn write_out(bytes: &[u8]) -> Result<(), Failure> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(bytes)?;
    stdout.flush()?;
    Ok(())
}
