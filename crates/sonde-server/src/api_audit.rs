//! The audit log for tests the agent runs on request outside its control
//! port: the HTTP API's "run a test now". One line each, as the control
//! port's decisions: `protocol: http`, the client's address, the token's
//! name, the test and where it goes, and whether it was started.

use crate::admission::Admissible;
use crate::audit::{Asked, Outcome, Proto, Record};
use crate::state::Shared;
use sonde_model::{Spec, TestSpec};
use std::net::SocketAddr;
use std::sync::Arc;

/// The server's audit log, for the HTTP API ([`crate::Server::api_audit`]).
#[derive(Clone)]
pub struct ApiAudit(pub(crate) Arc<Shared>);

impl std::fmt::Debug for ApiAudit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiAudit")
    }
}

impl ApiAudit {
    /// Writes the decision on a request (a test or a method) `token`'s
    /// holder at `client` asked the API to run, aimed at `target`: started
    /// (`refused` none) or refused, and why (the rule first).
    pub fn test(
        &self,
        client: Option<SocketAddr>,
        token: Option<&str>,
        spec: &Spec,
        target: Option<String>,
        refused: Option<String>,
    ) {
        let mut asked = match spec {
            Spec::Test(TestSpec::Tcp(s)) => s.asked(),
            Spec::Test(TestSpec::Udp(s)) => s.asked(),
            other => Asked {
                test: Some(other.name().to_string()),
                ..Asked::default()
            },
        };
        asked.target = target;
        let peer = client.unwrap_or_else(|| SocketAddr::from(([0u16; 8], 0)));
        let (outcome, reason) = match refused {
            Some(r) => (Outcome::Refused, Some(r)),
            None => (Outcome::Accepted, None),
        };
        let record = Record::new(peer, token, "api", Proto::Http, &asked, outcome, reason);
        self.0.audit().write(&record);
    }
}
