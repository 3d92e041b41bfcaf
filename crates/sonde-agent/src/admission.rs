//! Admission: the one path every test takes before it runs, whoever asks
//! (sonde's TCP and UDP tests, iperf3's). In order: the client's address
//! is allowed, the spec is valid, what it asks fits the limits, and a test
//! slot is free. The first check that fails gives the [`Refusal`] sent or
//! logged; passing all gives the slot, held while the test runs.

use crate::limits::{check_client, check_demand, Demand};
use crate::state::{Shared, TestSlot};
use sonde_engine::tcp::client::report_frame_need;
use sonde_engine::udp::client::udp_report_need;
use sonde_model::{SpecError, StreamLayout, TcpSpec, UdpSpec};
use sonde_wire::Refusal;
use std::net::IpAddr;
use std::sync::Arc;

/// A test spec admission can check: TCP and UDP tests.
pub(crate) trait Admissible {
    /// The spec's own rules (those that hold on every server).
    fn validate_spec(&self) -> Result<(), SpecError>;
    /// What the test asks of the server.
    fn demand(&self) -> Demand<'_>;
}

impl Admissible for TcpSpec {
    fn validate_spec(&self) -> Result<(), SpecError> {
        self.validate()
    }
    fn demand(&self) -> Demand<'_> {
        Demand {
            duration: self.send_duration(),
            streams: self.stream_count(),
            per_stream: self.bitrate,
            congestion: self.congestion.as_deref(),
            report_frame: report_frame_need(self),
        }
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
            // A rate of 0 is unpaced (flow-controlled).
            per_stream: Some(self.stream_rate()).filter(|r| r.bps() > 0),
            congestion: None,
            report_frame: udp_report_need(self),
        }
    }
}

/// Admits a test `spec` from `client`, or says why not. The slot is the
/// test's until dropped.
pub(crate) fn admit(
    shared: &Arc<Shared>,
    client: IpAddr,
    spec: &impl Admissible,
) -> Result<TestSlot, Refusal> {
    let limits = shared.limits();
    let admitted = check_client(limits, client)
        .and_then(|()| {
            spec.validate_spec().map_err(|e| Refusal::InvalidSpec {
                field: e.field.to_string(),
                detail: e.reason,
            })
        })
        .and_then(|()| check_demand(limits, &spec.demand()))
        .and_then(|()| {
            shared.claim_test().ok_or(Refusal::Busy {
                max_concurrent_tests: limits.max_concurrent_tests,
            })
        });
    if let Err(r) = &admitted {
        shared.counters().refused(r);
    }
    admitted
}

/// Checks a test this agent is asked to run itself (the HTTP API's "run
/// a test now") against the same limits as the control port: its spec,
/// duration, streams and rate. The concurrency cap is the caller's.
pub fn check_local_test(
    limits: &crate::config::Limits,
    spec: &sonde_model::TestSpec,
) -> Result<(), Refusal> {
    let invalid = |e: SpecError| Refusal::InvalidSpec {
        field: e.field.to_string(),
        detail: e.reason,
    };
    match spec {
        sonde_model::TestSpec::Tcp(s) => {
            s.validate().map_err(invalid)?;
            check_demand(limits, &s.demand())
        }
        sonde_model::TestSpec::Udp(s) => {
            s.validate().map_err(invalid)?;
            check_demand(limits, &s.demand())
        }
        sonde_model::TestSpec::Http(s) => {
            s.validate().map_err(invalid)?;
            let asked = s.send_duration();
            if asked > limits.max_duration {
                return Err(Refusal::LimitExceeded {
                    limit: sonde_wire::Limit::MaxDuration,
                    value: humantime::format_duration(limits.max_duration).to_string(),
                    requested: humantime::format_duration(asked).to_string(),
                });
            }
            let conns = s.most_connections();
            if conns > u32::from(limits.max_streams) {
                return Err(Refusal::LimitExceeded {
                    limit: sonde_wire::Limit::MaxStreams,
                    value: limits.max_streams.to_string(),
                    requested: format!("{conns} connections"),
                });
            }
            Ok(())
        }
        sonde_model::TestSpec::Ping(s) => {
            s.validate().map_err(invalid)?;
            let asked = s
                .interval
                .saturating_mul(u32::try_from(s.count).unwrap_or(u32::MAX));
            if s.count == 0 || asked > limits.max_duration {
                return Err(Refusal::LimitExceeded {
                    limit: sonde_wire::Limit::MaxDuration,
                    value: humantime::format_duration(limits.max_duration).to_string(),
                    requested: if s.count == 0 {
                        "no end (give a count)".into()
                    } else {
                        humantime::format_duration(asked).to_string()
                    },
                });
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Limits;
    use sonde_model::{Direction, Rate};
    use sonde_wire::Limit;
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
