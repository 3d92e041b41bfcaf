//! `sonde token new` and `sonde token hash`: API tokens for `[http]
//! tokens`, kept in the configuration as Argon2 hashes rather than in
//! clear.

use crate::failure::Failure;
use anyhow::anyhow;
use clap::{Args, Subcommand};
use sonde_web::api_token;
use std::io::Read;

#[derive(Debug, Args)]
pub struct TokenArgs {
    #[command(subcommand)]
    pub what: TokenCommand,
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// A new random token, and its hash for the configuration: give the
    /// token to its holder, keep the hash.
    New {
        /// The token's name (what logs and kept results name).
        #[arg(long, default_value = "ops")]
        name: String,
    },
    /// The hash of a token read from standard input (its first line),
    /// for `[[http.tokens]] hash = "…"`.
    Hash,
}

fn line(name: &str, hash: &str) -> String {
    format!("{{ name = \"{name}\", hash = \"{hash}\", may = [] }}")
}

pub fn run(args: TokenArgs) -> Result<(), Failure> {
    match args.what {
        TokenCommand::New { name } => {
            if name.is_empty() || name.contains(['"', '\\', '\n']) {
                return Err(Failure::Usage(anyhow!(
                    "--name {name:?}: a name without quotes, backslashes or line breaks"
                )));
            }
            let token = api_token::generate().map_err(|e| Failure::Run(anyhow!(e)))?;
            let hash = api_token::hash(&token).map_err(|e| Failure::Run(anyhow!(e)))?;
            println!("token: {token}");
            println!("config: tokens = [{}]", line(&name, &hash));
            Ok(())
        }
        TokenCommand::Hash => {
            let mut text = String::new();
            std::io::stdin()
                .take(4096)
                .read_to_string(&mut text)
                .map_err(|e| Failure::Usage(anyhow!("standard input: {e}")))?;
            let token = text.lines().next().unwrap_or_default().trim();
            let hash = api_token::hash(token)
                .map_err(|e| Failure::Usage(anyhow!("the token on standard input: {e}")))?;
            println!("{hash}");
            Ok(())
        }
    }
}
