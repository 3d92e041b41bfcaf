//! A plan file as a host reads it: the plan with the command line's
//! overrides, which of its endpoints this host is, and where its tests run
//! from ([`HostRunners`]: this host, or another agent).

use crate::{Overrides, Plan, Runners};
use sonde_model::IpFamily;
use sonde_run::{LocalRunner, Runner, ThirdPartyRunner};
use std::path::Path;

/// Where tests run from: this host, or another agent as third-party tests.
pub struct HostRunners;

impl Runners for HostRunners {
    fn local(&self) -> Box<dyn Runner> {
        Box::new(LocalRunner)
    }
    fn agent(&self, agent: &str) -> Result<Box<dyn Runner>, String> {
        let r =
            ThirdPartyRunner::parse(agent, sonde_model::TcpSpec::default().port, IpFamily::Any)?;
        Ok(Box::new(r))
    }
}

/// Reads the plan at `path` with the command line's overrides: the
/// plan, and its text as written.
pub fn read_plan(path: &Path, over: &Overrides) -> Result<(Plan, String), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let plan = Plan::parse(&text, over).map_err(|e| format!("{}: {e}", path.display()))?;
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
pub fn which_endpoint(plan: &Plan, given: Option<&str>) -> Result<String, String> {
    match given {
        Some(me) if plan.endpoint(me).is_some() => Ok(me.to_string()),
        Some(me) => Err(format!("--as {me}: the plan has no endpoint {me}")),
        None => Ok(plan
            .endpoints
            .iter()
            .find(|e| e.agent.is_none() && is_mine(&e.address))
            .unwrap_or(&plan.endpoints[0])
            .name
            .clone()),
    }
}
