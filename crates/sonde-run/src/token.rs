//! [`TokenRunner`]: tests that prove a token to the servers they run
//! against, for a daemon whose own tests (campaigns, mesh shares) meet
//! servers that want one (`auth.required`, or a class given by token).

use crate::{Events, RunError, Runner, Stop};
use sonde_model::{Credential, IpFamily, TestResult, TestSpec};
use std::net::IpAddr;

/// Runs every test through `inner` with `token` in the TCP and UDP specs
/// that carry none of their own (ping and HTTP have no sonde server to
/// prove it to).
pub struct TokenRunner {
    pub inner: Box<dyn Runner>,
    pub token: Credential,
}

impl Runner for TokenRunner {
    fn run(&self, spec: &TestSpec, stop: &Stop, events: &Events) -> Result<TestResult, RunError> {
        let mut spec = spec.clone();
        match &mut spec {
            TestSpec::Tcp(s) if s.token.is_none() => s.token = Some(self.token.clone()),
            TestSpec::Udp(s) if s.token.is_none() => s.token = Some(self.token.clone()),
            _ => {}
        }
        self.inner.run(&spec, stop, events)
    }

    fn resolve(&self, host: &str, family: IpFamily) -> Result<Vec<IpAddr>, RunError> {
        self.inner.resolve(host, family)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_model::{TcpSpec, UdpSpec};
    use std::sync::{Arc, Mutex};

    /// Keeps the token each spec reached it with.
    struct Seen(Arc<Mutex<Vec<Option<String>>>>);

    impl Runner for Seen {
        fn run(&self, spec: &TestSpec, _: &Stop, _: &Events) -> Result<TestResult, RunError> {
            let token = match spec {
                TestSpec::Tcp(s) => s.token.as_ref().map(|t| t.name().to_string()),
                TestSpec::Udp(s) => s.token.as_ref().map(|t| t.name().to_string()),
                _ => None,
            };
            self.0.lock().unwrap().push(token);
            Err(RunError::Interrupted)
        }
    }

    #[test]
    fn specs_without_a_token_get_the_runners_and_their_own_is_kept() {
        let mine = Credential::new("agent-a", b"0123456789abcdef").unwrap();
        let own = Credential::new("operator", b"fedcba9876543210").unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let r = TokenRunner {
            inner: Box::new(Seen(Arc::clone(&seen))),
            token: mine,
        };
        let (stop, events) = (Stop::new(), Events::new());
        let tcp = TestSpec::Tcp(TcpSpec::default());
        let udp_own = TestSpec::Udp(UdpSpec {
            token: Some(own),
            ..UdpSpec::default()
        });
        let ping = TestSpec::Ping(sonde_model::PingSpec::default());
        for spec in [&tcp, &udp_own, &ping] {
            let _ = r.run(spec, &stop, &events);
        }
        let seen = seen.lock().unwrap().clone();
        assert_eq!(
            seen,
            vec![Some("agent-a".into()), Some("operator".into()), None]
        );
    }
}
