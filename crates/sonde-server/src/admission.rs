//! Admission: the one path every test takes before it runs, whoever asks
//! (sonde's TCP and UDP tests, third-party tests, iperf3's). In order:
//! the client's class (by token or prefix, [`crate::access`]), its
//! address is allowed, the spec is valid, what it asks fits the class's
//! limits — or, with `over_limit = "cut"` and a client that takes cuts,
//! is cut down to fit — and a test slot is free. The first check that
//! fails gives the [`Refusal`] sent or logged; passing all gives the
//! slot, held while the test runs. Every decision goes to the audit log.

use crate::access::Class;
use crate::audit::{Asked, Outcome, Proto, Record};
use crate::auth_config::OverLimit;
use crate::cut::{cut, Shape};
use crate::limits::{check_client, check_demand, Demand};
use crate::limits_config::Limits;
use crate::state::{Shared, TestSlot};
use sonde_engine::tcp::protocol::report_frame_need;
use sonde_engine::udp::protocol::udp_report_need;
use sonde_model::{Rate, SpecError, StreamLayout, TcpSpec, UdpSpec};
use sonde_wire::{Cut, Limit, Refusal};
use std::net::SocketAddr;
use std::sync::Arc;

/// A test spec admission can check: TCP and UDP tests.
pub(crate) trait Admissible: Clone {
    /// The spec's own rules (those that hold on every server).
    fn validate_spec(&self) -> Result<(), SpecError>;
    /// What the test asks of the server.
    fn demand(&self) -> Demand<'_>;
    /// Which of a class's limits apply (UDP tests: `max_udp_rate` too).
    fn limits_in<'c>(&self, class: &'c Class) -> &'c Limits;
    /// What the caps bear on.
    fn shape(&self) -> Shape;
    /// This spec with `shape` in place of its own.
    fn reshaped(&self, shape: &Shape) -> Self;
    /// What it asks, for the audit log.
    fn asked(&self) -> Asked;
}

fn asked_of(test: &str, s: &impl StreamLayout, demand: &Demand<'_>) -> Asked {
    Asked {
        test: Some(test.into()),
        target: None,
        direction: Some(format!("{:?}", s.direction()).to_lowercase()),
        duration_s: Some(demand.duration.as_secs_f64()),
        streams: Some(demand.streams),
        rate_bps: demand.per_stream.map(|r| {
            r.bps()
                .saturating_mul(u64::try_from(demand.streams).unwrap_or(u64::MAX))
        }),
    }
}

fn directions(s: &impl StreamLayout) -> u16 {
    u16::try_from(s.direction().flows().len()).unwrap_or(1)
}

impl Admissible for TcpSpec {
    fn validate_spec(&self) -> Result<(), SpecError> {
        self.validate()
    }
    fn demand(&self) -> Demand<'_> {
        Demand {
            duration: self.send_duration(),
            streams: self.stream_count(),
            per_stream: self.pace(),
            congestion: self.congestion.as_deref(),
            report_frame: report_frame_need(self),
        }
    }
    fn limits_in<'c>(&self, class: &'c Class) -> &'c Limits {
        &class.limits
    }
    fn shape(&self) -> Shape {
        Shape {
            omit: self.omit,
            time: self.time,
            parallel: self.parallel,
            directions: directions(self),
            per_stream: self.bitrate,
        }
    }
    fn reshaped(&self, shape: &Shape) -> Self {
        Self {
            time: shape.time,
            parallel: shape.parallel,
            bitrate: shape.per_stream,
            ..self.clone()
        }
    }
    fn asked(&self) -> Asked {
        asked_of("tcp", self, &self.demand())
    }
}

impl Admissible for UdpSpec {
    fn validate_spec(&self) -> Result<(), SpecError> {
        self.validate()
    }
    fn demand(&self) -> Demand<'_> {
        Demand {
            duration: self.send_duration(),
            streams: self.stream_count(),
            per_stream: self.pace(),
            congestion: None,
            report_frame: udp_report_need(self),
        }
    }
    fn limits_in<'c>(&self, class: &'c Class) -> &'c Limits {
        &class.udp_limits
    }
    fn shape(&self) -> Shape {
        Shape {
            omit: self.omit,
            time: self.time,
            parallel: self.parallel,
            directions: directions(self),
            per_stream: Some(self.bitrate).filter(|r| r.bps() > 0),
        }
    }
    fn reshaped(&self, shape: &Shape) -> Self {
        Self {
            time: shape.time,
            parallel: shape.parallel,
            bitrate: shape.per_stream.unwrap_or(Rate::from_bps(0)),
            ..self.clone()
        }
    }
    fn asked(&self) -> Asked {
        asked_of("udp", self, &self.demand())
    }
}

/// Who asks for a test, as admission and the audit log see them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Asker<'a> {
    pub peer: SocketAddr,
    /// The token the client proved, if any.
    pub token: Option<&'a str>,
    pub protocol: Proto,
    /// Whether the client runs a test cut down by the server.
    pub takes_cuts: bool,
    /// The test's kind in the log, when not the spec's own (`third_party_tcp`).
    pub kind: Option<&'a str>,
    /// Where a third-party test goes.
    pub target: Option<&'a str>,
}

impl<'a> Asker<'a> {
    pub(crate) fn new(peer: SocketAddr, protocol: Proto) -> Self {
        Self {
            peer,
            token: None,
            protocol,
            takes_cuts: false,
            kind: None,
            target: None,
        }
    }

    /// Writes a decision on `asked` to the audit log.
    pub(crate) fn audit(
        &self,
        shared: &Shared,
        class: &str,
        asked: &Asked,
        outcome: Outcome,
        reason: Option<String>,
    ) {
        let mut asked = asked.clone();
        if let Some(k) = self.kind {
            asked.test = Some(k.to_string());
        }
        if let Some(t) = self.target {
            asked.target = Some(t.to_string());
        }
        shared.audit().write(&Record::new(
            self.peer,
            self.token,
            class,
            self.protocol,
            &asked,
            outcome,
            reason,
        ));
    }
}

/// An admitted test: its slot, the spec it runs (cut, if `cuts` says
/// so), and whether a rate cap binds it (the server then paces too).
#[derive(Debug)]
pub(crate) struct Admitted<S> {
    pub slot: TestSlot,
    pub spec: S,
    pub cuts: Vec<Cut>,
    pub rate_capped: bool,
}

/// A limit refusal that names the class whose limit it is.
fn in_class(refusal: Refusal, class: &Class) -> Refusal {
    match refusal {
        Refusal::LimitExceeded {
            limit,
            value,
            requested,
        } if class.named => Refusal::LimitExceeded {
            limit,
            value: format!("{value} for class {}", class.name),
            requested,
        },
        other => other,
    }
}

/// Whether a refusal is one a cut could answer.
fn cuttable(refusal: &Refusal) -> bool {
    matches!(
        refusal,
        Refusal::LimitExceeded {
            limit: Limit::MaxDuration | Limit::MaxStreams | Limit::MaxRate,
            ..
        }
    )
}

/// `spec` against `limits`, cut down to fit if `class` and the client
/// allow.
fn fit<S: Admissible>(
    spec: &S,
    limits: &Limits,
    class: &Class,
    takes_cuts: bool,
) -> Result<(S, Vec<Cut>), Refusal> {
    match check_demand(limits, &spec.demand()) {
        Ok(()) => Ok((spec.clone(), Vec::new())),
        Err(r) if cuttable(&r) && takes_cuts && class.over_limit == OverLimit::Cut => {
            let Some((shape, cuts)) = cut(spec.shape(), limits, &class.name) else {
                return Err(r);
            };
            let smaller = spec.reshaped(&shape);
            match smaller
                .validate_spec()
                .ok()
                .map(|()| check_demand(limits, &smaller.demand()))
            {
                Some(Ok(())) => Ok((smaller, cuts)),
                _ => Err(r),
            }
        }
        Err(r) => Err(r),
    }
}

/// Admits a test `spec` from `asker`, or says why not. The slot is the
/// test's until dropped.
pub(crate) fn admit_as<S: Admissible>(
    shared: &Arc<Shared>,
    asker: &Asker<'_>,
    spec: &S,
) -> Result<Admitted<S>, Refusal> {
    // The terms in force when the request came: a reload changes the
    // next request's, not this one's.
    let access = shared.access();
    let class = access.class_for(asker.token, asker.peer.ip());
    let limits = spec.limits_in(class);
    let admitted = check_client(limits, asker.peer.ip())
        .and_then(|()| {
            spec.validate_spec().map_err(|e| Refusal::InvalidSpec {
                field: e.field.to_string(),
                detail: e.reason,
            })
        })
        .and_then(|()| fit(spec, limits, class, asker.takes_cuts).map_err(|r| in_class(r, class)))
        .and_then(|(spec, cuts)| {
            let slot = shared.claim_test().ok_or(Refusal::Busy {
                max_concurrent_tests: limits.max_concurrent_tests,
            })?;
            Ok(Admitted {
                slot,
                spec,
                cuts,
                rate_capped: limits.max_rate.is_some(),
            })
        });
    match &admitted {
        Err(r) => {
            shared.counters().refused(r);
            asker.audit(
                shared,
                &class.name,
                &spec.asked(),
                Outcome::Refused,
                Some(r.to_string()),
            );
        }
        Ok(a) if a.cuts.is_empty() => {
            asker.audit(shared, &class.name, &spec.asked(), Outcome::Accepted, None);
        }
        Ok(a) => {
            let said = a.cuts.iter().map(ToString::to_string).collect::<Vec<_>>();
            asker.audit(
                shared,
                &class.name,
                &a.spec.asked(),
                Outcome::Cut,
                Some(said.join("; ")),
            );
        }
    }
    admitted
}

/// Admits `spec` from `client` as a native client without a token that
/// takes no cuts (the tests' shorthand).
#[cfg(test)]
pub(crate) fn admit(
    shared: &Arc<Shared>,
    client: std::net::IpAddr,
    spec: &impl Admissible,
) -> Result<TestSlot, Refusal> {
    let asker = Asker::new(SocketAddr::new(client, 0), Proto::Native);
    admit_as(shared, &asker, spec).map(|a| a.slot)
}

/// A TCP test's own limits, as the control port checks them (duration,
/// streams, rate, congestion control, report size): for TCP tests that
/// arrive another way (the daemon's gate).
pub fn check_tcp_limits(limits: &Limits, spec: &sonde_model::TcpSpec) -> Result<(), Refusal> {
    crate::limits::check_demand(limits, &spec.demand())
}

/// [`check_tcp_limits`] for a UDP test.
pub fn check_udp_limits(limits: &Limits, spec: &sonde_model::UdpSpec) -> Result<(), Refusal> {
    crate::limits::check_demand(limits, &spec.demand())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits_config::Limits;
    use sonde_model::{Direction, Rate};
    use sonde_wire::Limit;
    use std::net::IpAddr;
    use std::time::Duration;

    const CLIENT: &str = "2001:2::1";

    fn shared(limits: Limits) -> Arc<Shared> {
        Shared::new(limits)
    }

    fn client() -> IpAddr {
        CLIENT.parse().unwrap()
    }

    fn tcp(secs: u64, parallel: u16, bitrate: Option<u64>) -> TcpSpec {
        TcpSpec {
            host: "server.example".into(),
            time: Duration::from_secs(secs),
            parallel,
            bitrate: bitrate.map(Rate::from_bps),
            ..TcpSpec::default()
        }
    }

    fn limit_exceeded(limit: Limit, value: &str, requested: &str) -> Refusal {
        Refusal::LimitExceeded {
            limit,
            value: value.into(),
            requested: requested.into(),
        }
    }

    #[test]
    fn a_test_within_every_limit_gets_a_slot() {
        let s = shared(Limits::default());
        let slot = admit(&s, client(), &tcp(10, 2, None)).unwrap();
        assert_eq!(s.running_tests(), 1);
        drop(slot);
        assert_eq!(s.running_tests(), 0);
    }

    #[test]
    fn a_client_outside_the_allowed_prefixes_is_refused_first() {
        let s = shared(Limits {
            allow: vec!["198.18.0.0/15".parse().unwrap()],
            max_duration: Duration::from_secs(5),
            ..Limits::default()
        });
        // Over a limit and invalid too: the address is what is named.
        let mut spec = tcp(60, 1, None);
        spec.parallel = 0;
        assert_eq!(
            admit(&s, client(), &spec).unwrap_err(),
            Refusal::NotAllowed {
                client: CLIENT.into()
            }
        );
        // A v4-mapped client is judged by its IPv4 address.
        let mapped: IpAddr = "::ffff:198.18.0.9".parse().unwrap();
        admit(&s, mapped, &tcp(5, 1, None)).unwrap();
        assert_eq!(s.running_tests(), 0);
    }

    #[test]
    fn an_invalid_spec_names_its_field() {
        let s = shared(Limits::default());
        let refusal = admit(&s, client(), &tcp(10, 0, None)).unwrap_err();
        let Refusal::InvalidSpec { field, .. } = refusal else {
            panic!("not an invalid-spec refusal: {refusal:?}");
        };
        assert_eq!(field, "parallel");
    }

    #[test]
    fn over_max_duration_names_the_limit_its_value_and_the_ask() {
        let s = shared(Limits {
            max_duration: Duration::from_secs(30),
            ..Limits::default()
        });
        let mut spec = tcp(30, 1, None);
        spec.omit = Duration::from_secs(5);
        let refusal = admit(&s, client(), &spec).unwrap_err();
        assert_eq!(refusal, limit_exceeded(Limit::MaxDuration, "30s", "35s"));
        assert_eq!(
            refusal.to_string(),
            "max_duration is 30s on this server (asked: 35s)"
        );
    }

    #[test]
    fn over_max_streams_counts_both_directions() {
        let s = shared(Limits {
            max_streams: 4,
            ..Limits::default()
        });
        let mut spec = tcp(10, 3, None);
        spec.direction = Direction::Bidir;
        assert_eq!(
            admit(&s, client(), &spec).unwrap_err(),
            limit_exceeded(Limit::MaxStreams, "4", "6")
        );
        spec.parallel = 2;
        admit(&s, client(), &spec).unwrap();
    }

    #[test]
    fn over_max_rate_counts_every_stream_and_wants_pacing() {
        let s = shared(Limits {
            max_rate: Some(Rate::from_bps(10_000_000)),
            ..Limits::default()
        });
        assert_eq!(
            admit(&s, client(), &tcp(10, 4, None)).unwrap_err(),
            limit_exceeded(Limit::MaxRate, "10.0 Mbit/s", "unpaced (ask with -b)")
        );
        assert_eq!(
            admit(&s, client(), &tcp(10, 4, Some(3_000_000))).unwrap_err(),
            limit_exceeded(Limit::MaxRate, "10.0 Mbit/s", "12.0 Mbit/s")
        );
        admit(&s, client(), &tcp(10, 4, Some(2_500_000))).unwrap();
    }

    #[test]
    fn udp_tests_meet_the_same_limits() {
        let s = shared(Limits {
            max_rate: Some(Rate::from_bps(10_000_000)),
            max_duration: Duration::from_secs(5),
            ..Limits::default()
        });
        let udp = |secs, bps| UdpSpec {
            host: "server.example".into(),
            time: Duration::from_secs(secs),
            bitrate: Rate::from_bps(bps),
            ..UdpSpec::default()
        };
        assert_eq!(
            admit(&s, client(), &udp(1, 0)).unwrap_err(),
            limit_exceeded(Limit::MaxRate, "10.0 Mbit/s", "unpaced (ask with -b)")
        );
        assert_eq!(
            admit(&s, client(), &udp(1, 12_000_000)).unwrap_err(),
            limit_exceeded(Limit::MaxRate, "10.0 Mbit/s", "12.0 Mbit/s")
        );
        assert_eq!(
            admit(&s, client(), &udp(6, 1_000_000)).unwrap_err(),
            limit_exceeded(Limit::MaxDuration, "5s", "6s")
        );
        admit(&s, client(), &udp(5, 10_000_000)).unwrap();
    }

    #[test]
    fn a_congestion_control_the_host_lacks_is_unavailable() {
        let available = sonde_engine::host_env::available_congestion();
        let s = shared(Limits::default());
        let mut spec = tcp(10, 1, None);
        spec.congestion = Some("no-such-cc".into());
        let got = admit(&s, client(), &spec);
        if available.is_empty() {
            // Nothing to check against (not Linux): let the client try.
            assert!(got.is_ok());
            return;
        }
        let Err(Refusal::Unavailable { what }) = got else {
            panic!("not refused as unavailable: {got:?}");
        };
        assert!(what.contains("'no-such-cc'"), "{what}");
        spec.congestion = available.first().cloned();
        admit(&s, client(), &spec).unwrap();
    }

    #[test]
    fn when_every_slot_is_taken_the_server_is_busy() {
        let s = shared(Limits {
            max_concurrent_tests: 2,
            ..Limits::default()
        });
        let spec = tcp(10, 1, None);
        let a = admit(&s, client(), &spec).unwrap();
        let _b = admit(&s, client(), &spec).unwrap();
        let refusal = admit(&s, client(), &spec).unwrap_err();
        assert_eq!(
            refusal,
            Refusal::Busy {
                max_concurrent_tests: 2
            }
        );
        assert_eq!(refusal.limit(), Some(&Limit::MaxConcurrentTests));
        // A refused test holds no slot; a finished one gives its back.
        assert_eq!(s.running_tests(), 2);
        drop(a);
        admit(&s, client(), &spec).unwrap();
    }
}
