//! [`ThirdPartyRunner`]: a test run by another agent.
//!
//! The client asks agent C (`sonde serve` with this client in its
//! `third_party_allow`, or a token of C's that may) to run a TCP or UDP test toward B. C runs it as a
//! client of B's own sonde server, so B's handshake and limits apply and no
//! traffic leaves C toward an address whose server has not accepted it
//! (docs/protocol.md, "Third-party tests"). C relays B's acceptance and
//! the test's intervals as they come, then the whole result.

use crate::{Events, RunError, Runner, Stop};
use sonde_engine::connect::{connect_any, resolve};
use sonde_engine::control::Control;
use sonde_engine::host_env::host_env;
use sonde_engine::sockopt::StreamOptions;
use sonde_engine::EngineError;
use sonde_model::{Event, IpFamily, PeerKind, TestResult, TestSpec};
use sonde_wire::{ClientMessage, ServerMessage};
use std::time::{Duration, Instant};

/// The largest message a third-party agent may send (a whole result of
/// many streams and intervals); past it the answer is a protocol error.
pub const THIRD_PARTY_FRAME_MAX: usize = 64 << 20;

/// How long past the test's own time the agent may take to connect to the
/// target, run the handshake and send the result.
const THIRD_PARTY_GRACE: Duration = Duration::from_secs(30);

/// How often a waiting client looks at its stop flag.
const POLL: Duration = Duration::from_millis(200);

/// Runs tests from another agent, `agent` (host) on `port`.
#[derive(Debug, Clone)]
pub struct ThirdPartyRunner {
    pub agent: String,
    pub port: u16,
    pub family: IpFamily,
    /// The token that proves this client to the agent, for specs that
    /// carry none of their own (`sonde qos --via --token-file`).
    pub token: Option<sonde_model::Credential>,
}

impl ThirdPartyRunner {
    /// `agent` as written on the command line: `HOST`, `HOST:PORT` or
    /// `[V6]:PORT`; the port defaults to `default_port`.
    pub fn parse(
        agent: &str,
        default_port: u16,
        family: IpFamily,
    ) -> Result<Self, sonde_model::host_port::HostPortError> {
        let (host, port) = split_host_port(agent, default_port)?;
        Ok(Self {
            agent: host,
            port,
            family,
            token: None,
        })
    }

    fn name(&self) -> String {
        if self.agent.contains(':') {
            format!("[{}]:{}", self.agent, self.port)
        } else {
            format!("{}:{}", self.agent, self.port)
        }
    }

    fn failed(&self, kind: &str, message: String) -> RunError {
        RunError::ThirdParty {
            agent: self.name(),
            kind: RunError::kind_named(kind),
            message,
        }
    }
}

/// `HOST`, `HOST:PORT`, `[V6]` or `[V6]:PORT` (a bare IPv6 address has
/// no port), `default_port` where none is given.
fn split_host_port(
    s: &str,
    default_port: u16,
) -> Result<(String, u16), sonde_model::host_port::HostPortError> {
    sonde_model::host_port::split_host_port(s).map(|(h, p)| (h, p.unwrap_or(default_port)))
}

/// The server a spec's test goes to, as `HOST:PORT`.
fn target(spec: &TestSpec) -> String {
    let (host, port) = match spec {
        TestSpec::Tcp(s) => (s.host.as_str(), s.port),
        TestSpec::Udp(s) => (s.host.as_str(), s.port),
        TestSpec::Ping(s) => (s.host.as_str(), 0),
        TestSpec::Http(s) => (s.host.as_str(), 0),
        TestSpec::Trace(s) => (s.host.as_str(), 0),
    };
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// How long the test of `spec` runs at most (warm-up included).
fn test_time(spec: &TestSpec) -> Duration {
    match spec {
        TestSpec::Tcp(s) => s.send_duration(),
        TestSpec::Udp(s) => s.send_duration(),
        TestSpec::Ping(_) | TestSpec::Trace(_) => Duration::ZERO,
        TestSpec::Http(s) => s.send_duration(),
    }
}

impl Runner for ThirdPartyRunner {
    fn run(&self, spec: &TestSpec, stop: &Stop, events: &Events) -> Result<TestResult, RunError> {
        let outcome = self.ask(spec, stop, events);
        events.emit(match &outcome {
            Ok(result) => Event::Finished(std::sync::Arc::new(result.clone())),
            Err(e) => Event::Failed {
                reason: e.to_string(),
            },
        });
        outcome
    }

    /// The agent resolves the target, over its own resolver: this host
    /// cannot tell which family it will reach (nothing, not this host's
    /// answer).
    fn resolve(&self, _: &str, _: IpFamily) -> Result<Vec<std::net::IpAddr>, RunError> {
        Ok(Vec::new())
    }
}

impl ThirdPartyRunner {
    fn ask(&self, spec: &TestSpec, stop: &Stop, events: &Events) -> Result<TestResult, RunError> {
        spec.validate()?;
        if matches!(spec, TestSpec::Ping(_)) {
            return Err(RunError::Unsupported(
                "a third-party agent runs tcp and udp tests only (a ping needs no server's leave)"
                    .into(),
            ));
        }
        let addrs = resolve(&self.agent, self.port, self.family).map_err(RunError::Unreachable)?;
        let mut control = Control::new(
            connect_any(&addrs, &StreamOptions::default()).map_err(RunError::Unreachable)?,
        );
        control.send_preamble()?;
        // The token (`--token-file`) proves this client to the agent; the
        // agent's own test toward the target goes without one.
        let token = match spec {
            TestSpec::Tcp(s) => s.token.as_ref(),
            TestSpec::Udp(s) => s.token.as_ref(),
            _ => None,
        }
        .or(self.token.as_ref());
        if let Some(token) = token {
            sonde_engine::auth::authenticate(
                &mut control,
                token,
                sonde_engine::tcp::protocol::HANDSHAKE_TIMEOUT,
            )
            .map_err(|e| match e {
                EngineError::Refused(refusal) => {
                    let kind = RunError::from(EngineError::Refused(refusal.clone())).kind();
                    self.failed(kind, format!("refused the test: {refusal}"))
                }
                other => other.into(),
            })?;
        }
        control.send(&ClientMessage::ThirdPartyRequest {
            request: spec.clone(),
            env: host_env(),
        })?;
        let deadline = Instant::now() + test_time(spec) + THIRD_PARTY_GRACE;
        let mut preamble_read = token.is_some();
        loop {
            if stop.is_stopped() {
                // Closing the control connection stops the agent's test.
                return Err(RunError::Interrupted);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(self.failed(
                    "protocol",
                    "no result in the test's time and 30 s more".into(),
                ));
            }
            let msg: ServerMessage = match wait_message(&mut control, deadline, &mut preamble_read)
            {
                Ok(Some(m)) => m,
                Ok(None) => continue,
                Err(e) => return Err(e.into()),
            };
            match msg {
                ServerMessage::Refused { refusal } => {
                    // The agent's own refusal (its third_party_allow, its
                    // limits), named as the agent's.
                    let kind = RunError::from(EngineError::Refused(refusal.clone())).kind();
                    return Err(self.failed(kind, format!("refused the test: {refusal}")));
                }
                ServerMessage::Abort { reason } => return Err(EngineError::Aborted(reason).into()),
                ServerMessage::ThirdPartyConnected { server, env } => {
                    events.emit(Event::Connected {
                        server,
                        peer: PeerKind::Sonde,
                        env,
                    })
                }
                ServerMessage::ThirdPartyInterval { interval } => {
                    events.emit(Event::Interval(interval))
                }
                ServerMessage::ThirdPartyResult { result } => return Ok(*result),
                ServerMessage::ThirdPartyFailed { kind, message } => {
                    return Err(self.failed(&kind, format!("toward {}: {message}", target(spec))))
                }
                other => {
                    return Err(self.failed(
                        "protocol",
                        format!(
                            "unexpected message: {}",
                            format!("{other:?}").chars().take(80).collect::<String>()
                        ),
                    ))
                }
            }
        }
    }
}

/// The next message, or `None` when none began within [`POLL`] (so the
/// caller can look at its stop flag). A message once begun is read whole;
/// the agent's preamble comes before its first message.
fn wait_message(
    control: &mut Control,
    deadline: Instant,
    preamble_read: &mut bool,
) -> Result<Option<ServerMessage>, EngineError> {
    let wait = deadline
        .saturating_duration_since(Instant::now())
        .min(POLL)
        .max(Duration::from_millis(1));
    match control.peek_byte(wait) {
        Ok(_) => {}
        Err(EngineError::Timeout { .. }) => return Ok(None),
        Err(e) => return Err(e),
    }
    let left = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_secs(1));
    if !*preamble_read {
        control.recv_preamble(left)?;
        *preamble_read = true;
        return Ok(None);
    }
    control
        .recv(THIRD_PARTY_FRAME_MAX, left, "the agent's message")
        .map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agents_are_written_as_hosts_with_optional_ports() {
        let p = |s| split_host_port(s, 5201);
        assert_eq!(p("nl").unwrap(), ("nl".into(), 5201));
        assert_eq!(p("nl:5301").unwrap(), ("nl".into(), 5301));
        assert_eq!(p("2001:db8::1").unwrap(), ("2001:db8::1".into(), 5201));
        assert_eq!(p("[2001:db8::1]").unwrap(), ("2001:db8::1".into(), 5201));
        assert_eq!(p("[::1]:7000").unwrap(), ("::1".into(), 7000));
        assert!(p("nl:0")
            .unwrap_err()
            .to_string()
            .contains("'0' is not a port"));
        assert!(p("[::1]x")
            .unwrap_err()
            .to_string()
            .contains("expected ':PORT'"));
        assert!(p("[::1").unwrap_err().to_string().contains("without ']'"));
        assert!(p(":80").unwrap_err().to_string().contains("no host"));
    }
}
