//! A plan file as a host reads it: the plan with the command line's
//! overrides, which of its endpoints this host is, and where its tests run
//! from ([`HostRunners`]: this host, or another agent).

use crate::{CampaignError, Overrides, Plan, Runners};
use sonde_model::IpFamily;
use sonde_run::{LocalRunner, Runner, ThirdPartyRunner};
use std::path::{Path, PathBuf};

/// Why a plan file could not be taken, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum PlanFileError {
    /// The file cannot be read.
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file is not a plan (with the line and key, as the plan says).
    #[error("{}: {source}", path.display())]
    Plan {
        path: PathBuf,
        source: CampaignError,
    },
    /// `--as NAME` names no endpoint of the plan.
    #[error("--as {0}: the plan has no endpoint {0}")]
    NoEndpoint(String),
}

/// Where tests run from: this host, or another agent as third-party tests.
pub struct HostRunners;

impl Runners for HostRunners {
    fn local(&self) -> Box<dyn Runner> {
        Box::new(LocalRunner)
    }
    fn agent(&self, agent: &str) -> Result<Box<dyn Runner>, sonde_model::host_port::HostPortError> {
        let r =
            ThirdPartyRunner::parse(agent, sonde_model::TcpSpec::default().port, IpFamily::Any)?;
        Ok(Box::new(r))
    }
}

/// Reads the plan at `path` with the command line's overrides: the
/// plan, and its text as written.
pub fn read_plan(path: &Path, over: &Overrides) -> Result<(Plan, String), PlanFileError> {
    let text = std::fs::read_to_string(path).map_err(|source| PlanFileError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let plan = Plan::parse(&text, over).map_err(|source| PlanFileError::Plan {
        path: path.to_path_buf(),
        source,
    })?;
    Ok((plan, text))
}

/// Whether `address` is one of this host's: it can be bound to.
fn is_mine(address: &str) -> bool {
    use std::net::ToSocketAddrs;
    (address, 0)
        .to_socket_addrs()
        .map(|mut addrs| addrs.any(|a| std::net::UdpSocket::bind((a.ip(), 0)).is_ok()))
        .unwrap_or(false)
}

/// The endpoint this host is: `given`, else the first whose address is
/// this host's, else the first.
pub fn which_endpoint(plan: &Plan, given: Option<&str>) -> Result<String, PlanFileError> {
    match given {
        Some(me) if plan.endpoint(me).is_some() => Ok(me.to_string()),
        Some(me) => Err(PlanFileError::NoEndpoint(me.to_string())),
        None => Ok(plan
            .endpoints
            .iter()
            .find(|e| e.agent.is_none() && is_mine(&e.address))
            .unwrap_or(&plan.endpoints[0])
            .name
            .clone()),
    }
}
