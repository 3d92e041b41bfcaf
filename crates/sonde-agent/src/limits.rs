//! Checking a request against the server's limits. Each refusal names
//! the limit, its value and what was asked.

use crate::config::Limits;
use sonde_engine::host_env::available_congestion;
use sonde_model::StreamLayout;
use sonde_model::{Rate, TcpSpec, UdpSpec};
use sonde_wire::{Limit, Refusal};
use std::net::IpAddr;

/// The client's address as a plain IPv4 address when it is v4-mapped.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

pub fn check_client(limits: &Limits, peer: IpAddr) -> Result<(), Refusal> {
    let ip = canonical(peer);
    if limits.allow.iter().any(|net| net.contains(&ip)) {
        Ok(())
    } else {
        Err(Refusal::NotAllowed {
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

/// The limits every test has: duration, streams, total rate (`None`:
/// unpaced).
fn check_shape(
    limits: &Limits,
    total: std::time::Duration,
    streams: usize,
    per_stream: Option<Rate>,
) -> Result<(), Refusal> {
    if total > limits.max_duration {
        return Err(exceeded(
            Limit::MaxDuration,
            humantime::format_duration(limits.max_duration),
            humantime::format_duration(total),
        ));
    }
    if streams > usize::from(limits.max_streams) {
        return Err(exceeded(Limit::MaxStreams, limits.max_streams, streams));
    }
    if let Some(max) = limits.max_rate {
        let asked = per_stream.map(|r| Rate::from_bps(r.bps().saturating_mul(streams as u64)));
        match asked {
            None => return Err(exceeded(Limit::MaxRate, max, "unpaced (ask with -b)")),
            Some(a) if a > max => return Err(exceeded(Limit::MaxRate, max, a)),
            Some(_) => {}
        }
    }
    Ok(())
}

/// Checks a valid UDP spec against the limits.
pub fn check_udp(limits: &Limits, spec: &UdpSpec) -> Result<(), Refusal> {
    let rate = Some(spec.stream_rate()).filter(|r| r.bps() > 0);
    check_shape(limits, spec.send_duration(), spec.stream_count(), rate)
}

/// Checks a valid spec against the limits and this host's abilities.
pub fn check_tcp(limits: &Limits, spec: &TcpSpec) -> Result<(), Refusal> {
    check_shape(
        limits,
        spec.send_duration(),
        spec.stream_count(),
        spec.bitrate,
    )?;
    if let Some(cc) = &spec.congestion {
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
    use std::time::Duration;

    #[test]
    fn over_duration_names_the_limit() {
        let limits = Limits {
            max_duration: Duration::from_secs(30),
            ..Limits::default()
        };
        let spec = TcpSpec {
            time: Duration::from_secs(60),
            ..TcpSpec::default()
        };
        let r = check_tcp(&limits, &spec).unwrap_err();
        assert_eq!(
            r.to_string(),
            "max_duration is 30s on this server (asked: 1m)"
        );
    }

    #[test]
    fn rate_cap_counts_every_stream_and_wants_pacing() {
        let limits = Limits {
            max_rate: Some(Rate::from_bps(10_000_000)),
            ..Limits::default()
        };
        let mut spec = TcpSpec {
            parallel: 4,
            ..TcpSpec::default()
        };
        assert!(check_tcp(&limits, &spec)
            .unwrap_err()
            .to_string()
            .contains("unpaced"));
        spec.bitrate = Some(Rate::from_bps(3_000_000));
        assert!(check_tcp(&limits, &spec)
            .unwrap_err()
            .to_string()
            .contains("12.0 Mbit/s"));
        spec.bitrate = Some(Rate::from_bps(2_000_000));
        check_tcp(&limits, &spec).unwrap();
    }

    #[test]
    fn prefixes_match_v4_mapped_clients() {
        let limits = Limits {
            allow: vec!["198.18.0.0/15".parse().unwrap()],
            ..Limits::default()
        };
        check_client(&limits, "::ffff:198.18.0.1".parse().unwrap()).unwrap();
        assert!(check_client(&limits, "::1".parse().unwrap()).is_err());
    }
}
