//! `sonde lab`: emulated network paths on this machine, one network
//! namespace per node (see docs/lab.md).

use crate::cli::Failure;
use anyhow::{anyhow, Context};
use clap::{Args, Subcommand};
use sonde_lab::emulator::{self, Impairment};
use sonde_lab::lab;
use sonde_lab::Topology;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct LabArgs {
    #[command(subcommand)]
    pub command: LabCommand,
}

#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// Build the lab a topology file describes (replacing what is left of
    /// an earlier run of the same lab).
    Up { file: PathBuf },
    /// Remove a lab: its namespaces, links and every process inside.
    Down { name: String },
    /// The labs on this machine and their nodes.
    List,
    /// Addresses, routes, queues and rules of every node, as the kernel has them.
    Show { name: String },
    /// The link emulator (started by `lab up` inside a link's emulator namespace).
    #[command(hide = true)]
    Emulate {
        #[arg(long)]
        left: String,
        #[arg(long)]
        right: String,
        /// What happens to frames from left to right (JSON, as `lab up` writes it).
        #[arg(long)]
        l2r: String,
        #[arg(long)]
        r2l: String,
    },
    /// Run a command inside a node: `sonde lab exec [--lab NAME] NODE -- CMD ...`.
    Exec {
        /// The lab (needed when several labs have the node).
        #[arg(long)]
        lab: Option<String>,
        node: String,
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
}

fn lab_name(topo: &Topology, file: &std::path::Path) -> Result<String, Failure> {
    if let Some(n) = &topo.name {
        return Ok(n.clone());
    }
    let stem = file
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(12)
        .collect::<String>();
    if stem.is_empty() {
        return Err(Failure::Usage(anyhow!(
            "{}: give the lab a name = \"...\"",
            file.display()
        )));
    }
    Ok(stem)
}

pub fn run(args: LabArgs) -> Result<(), Failure> {
    match args.command {
        LabCommand::Up { file } => {
            let text = std::fs::read_to_string(&file)
                .map_err(|e| Failure::Usage(anyhow!("cannot read {}: {e}", file.display())))?;
            let topo = Topology::from_toml(&text, &file.display().to_string())
                .map_err(|e| Failure::Usage(e.into()))?;
            let name = lab_name(&topo, &file)?;
            lab::up(&topo, &name, std::env::current_exe().ok().as_deref())
                .with_context(|| format!("building lab '{name}'"))?;
            println!(
                "lab '{name}' is up: {} nodes, {} links",
                topo.nodes.len(),
                topo.links.len()
            );
            for (i, l) in topo.links.iter().enumerate() {
                let (a6, a4) = lab::link_addrs(i + 1, true);
                let (b6, b4) = lab::link_addrs(i + 1, false);
                println!("  link {}: {} {a6} {a4} <-> {} {b6} {b4}", i + 1, l.a, l.b);
            }
            println!("run commands in a node with `sonde lab exec --lab {name} NODE -- CMD`; remove it with `sonde lab down {name}`");
            Ok(())
        }
        LabCommand::Down { name } => match lab::down(&name) {
            0 => Err(Failure::Run(anyhow!(
                "no lab named '{name}' (see `sonde lab list`)"
            ))),
            n => {
                println!("lab '{name}' removed ({n} nodes)");
                Ok(())
            }
        },
        LabCommand::Emulate {
            left,
            right,
            l2r,
            r2l,
        } => {
            let parse = |flag: &str, text: &str| -> Result<Impairment, Failure> {
                serde_json::from_str(text).map_err(|e| Failure::Usage(anyhow!("--{flag}: {e}")))
            };
            let (l2r, r2l) = (parse("l2r", &l2r)?, parse("r2l", &r2l)?);
            emulator::run(&left, &right, l2r, r2l)
                .with_context(|| format!("emulating between {left} and {right}"))?;
            Ok(())
        }
        LabCommand::List => {
            for (name, nodes) in lab::list() {
                println!("{name}: {}", nodes.join(" "));
            }
            Ok(())
        }
        LabCommand::Show { name } => {
            print!("{}", lab::show(&name)?);
            Ok(())
        }
        LabCommand::Exec {
            lab: which,
            node,
            command,
        } => {
            let labs: Vec<String> = lab::list()
                .into_iter()
                .filter(|(l, nodes)| which.as_ref().is_none_or(|w| w == l) && nodes.contains(&node))
                .map(|(l, _)| l)
                .collect();
            let name = match labs.as_slice() {
                [one] => one.clone(),
                [] => {
                    return Err(Failure::Usage(anyhow!(
                        "no lab has a node '{node}' (see `sonde lab list`)"
                    )))
                }
                _ => {
                    return Err(Failure::Usage(anyhow!(
                        "node '{node}' is in several labs ({}); say --lab",
                        labs.join(", ")
                    )))
                }
            };
            let ns = lab::node(&name, &node)
                .ok_or_else(|| Failure::Usage(anyhow!("no node '{node}' in lab '{name}'")))?;
            let (program, rest) = command
                .split_first()
                .ok_or_else(|| Failure::Usage(anyhow!("no command given after --")))?;
            let status = ns
                .command(program)
                .args(rest)
                .status()
                .with_context(|| format!("running {program} in {node}"))?;
            // The command's own exit code is the result.
            std::process::exit(status.code().unwrap_or(1));
        }
    }
}
