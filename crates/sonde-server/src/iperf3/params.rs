//! What an iperf3 client asks for, as the sonde spec admission checks and
//! the server runs: its parameters (`-t`, `-P`, `-R`, `-b`, `-l`, ...)
//! mapped onto [`TcpSpec`] and [`UdpSpec`].

use sonde_engine::iperf3::sonde_direction;
use sonde_model::{ByteSize, Dscp, Rate, TcpSpec, UdpSpec};
use sonde_wire::iperf3::Params;
use sonde_wire::Refusal;
use std::net::SocketAddr;
use std::time::Duration;

/// iperf3's datagram payload when the client sets no length.
const UDP_DEFAULT_LEN: u32 = 1448;

/// iperf3's stream count, if sonde can hold it at all (the spec's own
/// limits are admission's to check).
fn parallel(p: &Params) -> Result<u16, Refusal> {
    u16::try_from(p.parallel.max(1)).map_err(|_| Refusal::InvalidSpec {
        field: "parallel".into(),
        detail: format!("{} streams", p.parallel),
    })
}

/// How long data may flow. A test with no `time` (`-n` or `-k`: bounded
/// by bytes or blocks, or `-t 0`) ends when the client says so; the
/// server gives it `limit` (its max_duration) less the omitted start, so
/// admission passes it and the server's own clock ends it there at most.
fn run_time(p: &Params, limit: Duration) -> Duration {
    if p.time > 0 {
        Duration::from_secs(u64::from(p.time))
    } else {
        limit
            .min(MAX_TEST)
            .saturating_sub(Duration::from_secs(u64::from(p.omit)))
    }
}

/// The longest test a spec may hold (sonde-model's limit on `time`).
const MAX_TEST: Duration = Duration::from_secs(24 * 3600);

/// The TCP test an iperf3 client's parameters ask for; `limit` is the
/// server's max_duration.
pub(super) fn tcp_spec(p: &Params, peer: SocketAddr, limit: Duration) -> Result<TcpSpec, Refusal> {
    let nonzero = |v: u64| (v > 0).then_some(v);
    Ok(TcpSpec {
        host: peer.ip().to_string(),
        port: peer.port(),
        time: run_time(p, limit),
        omit: Duration::from_secs(u64::from(p.omit)),
        interval: Duration::ZERO,
        parallel: parallel(p)?,
        direction: sonde_direction(p.direction()),
        length: nonzero(u64::from(p.len)).map_or(TcpSpec::default().length, ByteSize::from_bytes),
        bitrate: nonzero(p.bandwidth).map(Rate::from_bps),
        window: nonzero(u64::from(p.window)).map(ByteSize::from_bytes),
        mss: (p.mss > 0).then_some(p.mss),
        dscp: Dscp::new(p.tos >> 2).filter(|d| d.value() > 0),
        congestion: p.congestion.clone(),
        flowlabel: (p.flowlabel > 0).then_some(p.flowlabel),
        title: p.title.clone(),
        ..TcpSpec::default()
    })
}

/// The UDP test an iperf3 client's parameters ask for; `limit` is the
/// server's max_duration.
pub(super) fn udp_spec(p: &Params, peer: SocketAddr, limit: Duration) -> Result<UdpSpec, Refusal> {
    Ok(UdpSpec {
        host: peer.ip().to_string(),
        port: peer.port(),
        time: run_time(p, limit),
        omit: Duration::from_secs(u64::from(p.omit)),
        interval: Duration::ZERO,
        parallel: parallel(p)?,
        direction: sonde_direction(p.direction()),
        bitrate: Rate::from_bps(p.bandwidth),
        length: if p.len > 0 { p.len } else { UDP_DEFAULT_LEN },
        dscp: Dscp::new(p.tos >> 2).filter(|d| d.value() > 0),
        title: p.title.clone(),
        ..UdpSpec::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_model::Direction;

    const LIMIT: Duration = Duration::from_secs(300);

    #[test]
    fn a_test_bounded_by_bytes_or_blocks_gets_the_servers_limit_less_omit() {
        let p = Params {
            time: 0,
            num: 2_000_000_000,
            omit: 2,
            ..Params::default()
        };
        assert_eq!(
            tcp_spec(&p, peer(), LIMIT).unwrap().time,
            Duration::from_secs(298)
        );
        let p = Params {
            time: 0,
            blockcount: 10_000,
            ..Params::default()
        };
        assert_eq!(udp_spec(&p, peer(), LIMIT).unwrap().time, LIMIT);
        let timed = Params {
            time: 7,
            ..Params::default()
        };
        assert_eq!(
            tcp_spec(&timed, peer(), LIMIT).unwrap().time,
            Duration::from_secs(7)
        );
    }

    fn peer() -> SocketAddr {
        "[::1]:40000".parse().unwrap()
    }

    #[test]
    fn unset_values_take_sonde_defaults() {
        let p = Params {
            time: 3,
            parallel: 0,
            reverse: true,
            ..Params::default()
        };
        let tcp = tcp_spec(&p, peer(), LIMIT).unwrap();
        assert_eq!(tcp.parallel, 1);
        assert_eq!(tcp.direction, Direction::Reverse);
        assert_eq!(tcp.time, Duration::from_secs(3));
        assert_eq!(tcp.length, TcpSpec::default().length);
        assert_eq!(
            (tcp.bitrate, tcp.window, tcp.mss, tcp.dscp),
            (None, None, None, None)
        );
        let udp = udp_spec(&p, peer(), LIMIT).unwrap();
        assert_eq!(udp.length, UDP_DEFAULT_LEN);
        assert_eq!(udp.bitrate, Rate::from_bps(0));
    }

    #[test]
    fn more_streams_than_sonde_can_count_are_an_invalid_spec() {
        let p = Params {
            parallel: 70_000,
            ..Params::default()
        };
        let want = Refusal::InvalidSpec {
            field: "parallel".into(),
            detail: "70000 streams".into(),
        };
        assert_eq!(tcp_spec(&p, peer(), LIMIT).unwrap_err(), want);
        assert_eq!(udp_spec(&p, peer(), LIMIT).unwrap_err(), want);
    }
}
