//! `sonde lab`: emulated network paths on this machine, one network
//! namespace per node (see docs/lab.md).

use crate::failure::Failure;
use anyhow::{anyhow, Context};
use clap::{Args, Subcommand};
use sonde_lab::emulator::{self, Impairment};
use sonde_lab::lab;
use sonde_lab::{LabError, Topology, TopologyError};
use std::path::{Path, PathBuf};

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
    /// Change a running link's emulator: its one-way delay, jitter or line
    /// rate, on both directions or one (`--from a|b`), in place.
    Set(SetArgs),
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

#[derive(Debug, Args)]
pub struct SetArgs {
    /// The lab.
    pub lab: String,
    /// The link's number, as `sonde lab up` lists them (link 1 first).
    pub link: usize,
    /// New one-way delay (e.g. 10ms; the RTT grows by twice a change on
    /// both directions).
    #[arg(long, value_parser = crate::run_args::duration)]
    pub delay: Option<std::time::Duration>,
    /// New jitter.
    #[arg(long, value_parser = crate::run_args::duration)]
    pub jitter: Option<std::time::Duration>,
    /// New line rate (0: none).
    #[arg(long, value_name = "RATE")]
    pub line_rate: Option<sonde_model::Rate>,
    /// New random loss, each packet alike (e.g. 20%; 0 for none); it
    /// replaces any loss model the link had.
    #[arg(long, value_name = "PCT", value_parser = crate::step_args::percent)]
    pub loss: Option<f64>,
    /// Put an MPLS hop at the start of the direction, as the topology's
    /// `mpls` key writes it ('{ labels = [16005], address =
    /// ["2001:db8::fe"] }'), or take it out ('off'): the hop count of
    /// every path over the link changes by one.
    #[arg(long, value_name = "TABLE|off")]
    pub mpls: Option<String>,
    /// Only the direction from this end of the link (a or b).
    #[arg(long, value_parser = ["a", "b"])]
    pub from: Option<String>,
}

/// A topology file that cannot be used: always a usage error (exit 2).
/// Errors found in the file's content are prefixed with the file, unless
/// they name it already.
fn topology_failure(e: TopologyError, file: &Path) -> Failure {
    let names_file = matches!(e, TopologyError::Read { .. } | TopologyError::Syntax { .. });
    let e = anyhow::Error::new(e);
    Failure::Usage(if names_file {
        e
    } else {
        e.context(file.display().to_string())
    })
}

/// The exit code of a lab error follows its kind: a topology that cannot
/// be built as written is a usage error (exit 2); what the machine refused
/// (root, a command, the emulator) or a lab that is not there is a failure
/// (exit 1). `doing` says what was under way, for errors that do not name
/// the lab themselves.
fn lab_failure(e: LabError, doing: String) -> Failure {
    let usage = match &e {
        LabError::Topology(_) => true,
        LabError::NotRoot
        | LabError::Spawn { .. }
        | LabError::Failed { .. }
        | LabError::NoEmulator { .. }
        | LabError::StartEmulator { .. }
        | LabError::EmulatorNotReady { .. }
        | LabError::CpuShare { .. }
        | LabError::Write { .. }
        | LabError::NoSuchLab { .. } => false,
        LabError::NotEmulated { .. } => true,
    };
    let names_lab = matches!(e, LabError::NoSuchLab { .. });
    let e = anyhow::Error::new(e);
    let e = if names_lab { e } else { e.context(doing) };
    if usage {
        Failure::Usage(e)
    } else {
        Failure::Run(e)
    }
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
            let topo = Topology::load(&file).map_err(|e| topology_failure(e, &file))?;
            let name = lab_name(&topo, &file)?;
            lab::up(&topo, &name, std::env::current_exe().ok().as_deref())
                .map_err(|e| lab_failure(e, format!("building lab '{name}'")))?;
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
            0 => Err(lab_failure(
                LabError::NoSuchLab { lab: name.clone() },
                format!("removing lab '{name}'"),
            )),
            n => {
                println!("lab '{name}' removed ({n} nodes)");
                Ok(())
            }
        },
        LabCommand::Set(a) => {
            use sonde_lab::set::{set_emulator, EmulatorChange, Ends};
            if a.delay.is_none()
                && a.jitter.is_none()
                && a.line_rate.is_none()
                && a.loss.is_none()
                && a.mpls.is_none()
            {
                return Err(Failure::Usage(anyhow!(
                    "say what to change: --delay, --jitter, --line-rate, --loss or --mpls"
                )));
            }
            let mpls = match a.mpls.as_deref() {
                Some(text) => Some(
                    sonde_lab::profile::mpls_setting(text)
                        .map_err(|e| Failure::Usage(anyhow!("--mpls: {e}")))?,
                ),
                None => None,
            };
            let ends = match a.from.as_deref() {
                Some("a") => Ends::AToB,
                Some("b") => Ends::BToA,
                _ => Ends::Both,
            };
            let change = EmulatorChange {
                delay: a.delay,
                jitter: a.jitter,
                line_rate_bps: a.line_rate.map(|r| r.bps()),
                loss: a.loss.map(|pct| pct / 100.0),
                mpls,
            };
            let (l2r, r2l) = set_emulator(&a.lab, a.link, ends, &change).map_err(|e| {
                lab_failure(e, format!("changing link {} of lab '{}'", a.link, a.lab))
            })?;
            println!(
                "lab '{}' link {}:\n  a → b: {l2r}\n  b → a: {r2l}",
                a.lab, a.link
            );
            Ok(())
        }
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
            // The emulator's threads inherit it: their timed waits for a
            // frame's release end within microseconds, not 50.
            sonde_engine::tight_timer_slack();
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
            let text =
                lab::show(&name).map_err(|e| lab_failure(e, format!("showing lab '{name}'")))?;
            print!("{text}");
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exit_code_follows_the_kind_of_error() {
        let bad_topology = || TopologyError::UnknownNode {
            link: 1,
            node: "zz".into(),
        };
        let usage = |f: &Failure| matches!(f, Failure::Usage(_));
        assert!(usage(&lab_failure(bad_topology().into(), "up".into())));
        assert!(usage(&topology_failure(
            bad_topology(),
            Path::new("t.toml")
        )));
        assert!(usage(&lab_failure(
            LabError::NotEmulated { link: 2 },
            "set".into()
        )));
        for e in [
            LabError::NotRoot,
            LabError::NoEmulator { link: 1 },
            LabError::NoSuchLab { lab: "x".into() },
            LabError::Failed {
                command: "ip netns add x".into(),
                code: Some(1),
                stderr: "File exists".into(),
            },
        ] {
            assert!(matches!(lab_failure(e, "up".into()), Failure::Run(_)));
        }
    }

    #[test]
    fn an_error_in_a_topology_names_the_file_once() {
        let text = |f: Failure| match f {
            Failure::Usage(e) => format!("{e:#}"),
            other => panic!("{other:?}"),
        };
        let file = Path::new("t.toml");
        let e = TopologyError::UnknownNode {
            link: 1,
            node: "zz".into(),
        };
        assert_eq!(
            text(topology_failure(e, file)),
            "t.toml: link 1 names node 'zz', which is not defined"
        );
        let e = Topology::from_toml("[[node]\n", "t.toml").unwrap_err();
        assert!(text(topology_failure(e, file)).starts_with("t.toml: TOML parse error at line 1"));
    }
}
