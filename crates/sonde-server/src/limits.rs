//! The server's rules, checked without side effects: whether a client's
//! address is allowed, and whether what a test asks for (its [`Demand`])
//! fits the limits and this host. Each refusal names the limit, its value
//! and what was asked. [`crate::admission`] applies them in order.

use crate::limits_config::Limits;
use sonde_engine::host_env::available_congestion;
use sonde_engine::tcp::protocol::MAX_REPORT_FRAME;
use sonde_model::Rate;
use sonde_wire::{Limit, Refusal};
use std::net::IpAddr;
use std::time::Duration;

/// How long after a test's end (its time, warm-up included; never more
/// than `max_duration`) the server goes on reading and writing its data.
/// After it, the server stops whatever the client does, and the test's
/// slot is free; the client's report has [`REPORT_GRACE`].
pub const END_GRACE: Duration = Duration::from_secs(5);

/// How long after a test's end the server waits for the client's report.
/// The report crosses the path the test has just loaded: behind a full
/// queue or a policer its segments may wait out several retransmission
/// timeouts (0.2 + 0.4 + … + 6.4 s). The slot is free by then (the data
/// stopped at [`END_GRACE`]); only the control connection waits. Shorter
/// than the client's wait for the server's report, so a client hears why
/// a test ended.
pub const REPORT_GRACE: Duration = Duration::from_secs(30);

/// How long a server that ended a test on its own goes on reading (and
/// discarding) what the client still sends, so its reason reaches the
/// client rather than a reset; and at most how much.
pub const ABORT_LINGER: Duration = Duration::from_secs(2);
pub const ABORT_LINGER_BYTES: usize = 1 << 20;

/// How long before [`END_GRACE`] is up the server's own data streams
/// give up on data in flight and close: a client whose last bytes are
/// stuck behind retransmission timeouts (a policer dropping most of a
/// window) then sees the close, ends, and still has this long to send its
/// report.
pub const REPORT_MARGIN: Duration = Duration::from_secs(2);

/// What a test asks of the server, in the terms its limits are written in.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Demand<'a> {
    /// How long data flows, warm-up included.
    pub duration: Duration,
    /// Data streams (connections or UDP flows), all directions together.
    pub streams: usize,
    /// Rate of each stream; `None`: unpaced.
    pub per_stream: Option<Rate>,
    /// The congestion control asked for (TCP), if any.
    pub congestion: Option<&'a str>,
    /// The largest report frame the test can produce (streams × interval
    /// windows): the server admits none over [`MAX_REPORT_FRAME`].
    pub report_frame: usize,
}

/// Whether `peer` is in the allowed prefixes (v4-mapped addresses count
/// as IPv4).
pub(crate) fn check_client(limits: &Limits, peer: IpAddr) -> Result<(), Refusal> {
    let ip = peer.to_canonical();
    if limits.allow.iter().any(|net| net.contains(&ip)) {
        Ok(())
    } else {
        Err(Refusal::NotAllowed {
            client: ip.to_string(),
        })
    }
}

/// Whether `peer` may ask for third-party tests (`third_party_allow`).
pub(crate) fn check_third_party(limits: &Limits, peer: IpAddr) -> Result<(), Refusal> {
    let ip = peer.to_canonical();
    if limits.third_party_allow.iter().any(|net| net.contains(&ip)) {
        Ok(())
    } else {
        Err(Refusal::ThirdPartyNotAllowed {
            client: ip.to_string(),
        })
    }
}

fn exceeded(limit: Limit, value: impl ToString, requested: impl ToString) -> Refusal {
    Refusal::LimitExceeded {
        limit,
        value: value.to_string(),
        requested: requested.to_string(),
    }
}

/// Checks a valid test's demand against the limits (duration, streams,
/// total rate) and this host's congestion controls.
pub(crate) fn check_demand(limits: &Limits, demand: &Demand<'_>) -> Result<(), Refusal> {
    if demand.duration > limits.max_duration {
        return Err(exceeded(
            Limit::MaxDuration,
            humantime::format_duration(limits.max_duration),
            humantime::format_duration(demand.duration),
        ));
    }
    if demand.streams > usize::from(limits.max_streams) {
        return Err(exceeded(
            Limit::MaxStreams,
            limits.max_streams,
            demand.streams,
        ));
    }
    if let Some(max) = limits.max_rate {
        let streams = u64::try_from(demand.streams).unwrap_or(u64::MAX);
        let asked = demand
            .per_stream
            .map(|r| Rate::from_bps(r.bps().saturating_mul(streams)));
        match asked {
            None => return Err(exceeded(Limit::MaxRate, max, "unpaced (ask with -b)")),
            Some(a) if a > max => return Err(exceeded(Limit::MaxRate, max, a)),
            Some(_) => {}
        }
    }
    if demand.report_frame > MAX_REPORT_FRAME {
        let mib = |b: usize| format!("{} MiB", b.div_ceil(1024 * 1024));
        return Err(exceeded(
            Limit::Other("report_size".into()),
            mib(MAX_REPORT_FRAME),
            format!(
                "{} for {} streams; use fewer streams, a shorter test or a longer -i",
                mib(demand.report_frame),
                demand.streams
            ),
        ));
    }
    if let Some(cc) = demand.congestion {
        let available = available_congestion();
        if !available.is_empty() && !available.iter().any(|a| a == cc) {
            return Err(Refusal::Unavailable {
                what: format!(
                    "congestion control '{cc}' (the server has: {})",
                    available.join(", ")
                ),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demand(secs: u64, streams: usize, per_stream: Option<u64>) -> Demand<'static> {
        Demand {
            duration: Duration::from_secs(secs),
            streams,
            per_stream: per_stream.map(Rate::from_bps),
            congestion: None,
            report_frame: 0,
        }
    }

    #[test]
    fn over_duration_names_the_limit() {
        let limits = Limits {
            max_duration: Duration::from_secs(30),
            ..Limits::default()
        };
        let r = check_demand(&limits, &demand(60, 1, None)).unwrap_err();
        assert_eq!(
            r.to_string(),
            "max_duration is 30s on this server (asked: 1m)"
        );
        check_demand(&limits, &demand(30, 1, None)).unwrap();
    }

    #[test]
    fn report_size_is_bounded_whatever_the_limits() {
        let big = Demand {
            report_frame: MAX_REPORT_FRAME + 1,
            ..demand(10, 1, None)
        };
        let r = check_demand(&Limits::default(), &big).unwrap_err();
        assert!(r.to_string().starts_with("report_size is 24 MiB"), "{r}");
        let fits = Demand {
            report_frame: MAX_REPORT_FRAME,
            ..demand(10, 1, None)
        };
        check_demand(&Limits::default(), &fits).unwrap();
    }

    #[test]
    fn rate_cap_counts_every_stream_and_wants_pacing() {
        let limits = Limits {
            max_rate: Some(Rate::from_bps(10_000_000)),
            ..Limits::default()
        };
        assert!(check_demand(&limits, &demand(10, 4, None))
            .unwrap_err()
            .to_string()
            .contains("unpaced"));
        assert!(check_demand(&limits, &demand(10, 4, Some(3_000_000)))
            .unwrap_err()
            .to_string()
            .contains("12.0 Mbit/s"));
        check_demand(&limits, &demand(10, 4, Some(2_000_000))).unwrap();
    }

    #[test]
    fn prefixes_match_v4_mapped_clients() {
        let limits = Limits {
            allow: vec!["198.18.0.0/15".parse().unwrap()],
            ..Limits::default()
        };
        check_client(&limits, "::ffff:198.18.0.1".parse().unwrap()).unwrap();
        assert_eq!(
            check_client(&limits, "::1".parse().unwrap()),
            Err(Refusal::NotAllowed {
                client: "::1".into()
            })
        );
    }
}
