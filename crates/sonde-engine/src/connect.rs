//! Finding the server and opening connections to it.

use crate::sockopt::{apply_before_connect, StreamOptions};
use crate::EngineError;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use sonde_model::IpFamily;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV6, TcpStream, ToSocketAddrs};
use std::time::Duration;

pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Addresses of `host`, IPv6 first (or only the family asked for, or
/// only the family of the source address `bind`).
pub fn resolve_from(
    host: &str,
    port: u16,
    family: IpFamily,
    bind: Option<IpAddr>,
) -> Result<Vec<SocketAddr>, EngineError> {
    let family = match bind {
        Some(IpAddr::V4(_)) => IpFamily::V4,
        Some(IpAddr::V6(_)) => IpFamily::V6,
        None => family,
    };
    resolve(host, port, family)
}

/// Addresses of `host`, IPv6 first (or only the family asked for).
pub fn resolve(host: &str, port: u16, family: IpFamily) -> Result<Vec<SocketAddr>, EngineError> {
    let host_only = host.trim_start_matches('[').trim_end_matches(']');
    let mut addrs: Vec<SocketAddr> = (host_only, port)
        .to_socket_addrs()
        .map_err(|source| EngineError::Resolve {
            host: host.to_string(),
            source,
        })?
        .filter(|a| match family {
            IpFamily::Any => true,
            IpFamily::V4 => a.is_ipv4(),
            IpFamily::V6 => a.is_ipv6(),
        })
        .collect();
    addrs.sort_by_key(|a| a.is_ipv4());
    addrs.dedup();
    if addrs.is_empty() {
        return Err(EngineError::NoAddress {
            host: host.to_string(),
            family: match family {
                IpFamily::V4 => "IPv4",
                IpFamily::V6 => "IPv6",
                IpFamily::Any => "IP",
            },
        });
    }
    Ok(addrs)
}

/// The address this host sends from toward `target`: `bind` when one is
/// asked for, else the kernel's choice for its route (a UDP socket
/// connected to it, which sends nothing). `None` when there is no route.
pub fn source_toward(target: IpAddr, bind: Option<IpAddr>) -> Option<IpAddr> {
    if let Some(b) = bind.filter(|b| !b.is_unspecified()) {
        return Some(b);
    }
    let any: SocketAddr = match target {
        IpAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
        IpAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let probe = std::net::UdpSocket::bind(any).ok()?;
    // The discard port: connecting a UDP socket only picks its route.
    probe.connect((target, 9)).ok()?;
    probe.local_addr().ok().map(|a| a.ip())
}

/// A TCP connection to `addr` with `opts` set before the handshake, from
/// the source address and port `opts` ask for, if any.
pub fn connect(addr: SocketAddr, opts: &StreamOptions) -> Result<TcpStream, EngineError> {
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))
        .map_err(EngineError::io("socket"))?;
    apply_before_connect(&sock, opts, &addr)?;
    bind_source(&sock, addr, opts.bind, opts.source_port)?;
    let target = match (addr, opts.flowlabel) {
        (SocketAddr::V6(v6), Some(label)) => SocketAddr::V6(SocketAddrV6::new(
            *v6.ip(),
            v6.port(),
            (label & 0xF_FFFF).to_be(),
            v6.scope_id(),
        )),
        _ => addr,
    };
    let timeout = opts.connect_timeout.unwrap_or(CONNECT_TIMEOUT);
    sock.connect_timeout(&SockAddr::from(target), timeout)
        .map_err(|source| EngineError::Connect { addr, source })?;
    Ok(sock.into())
}

/// Binds `sock` (for a connection to `peer`) to the source address and
/// port asked, if any (`-B`, `--cport`). A fixed port may be in
/// TIME_WAIT from the last test: SO_REUSEADDR lets it be taken again.
pub fn bind_source(
    sock: &Socket,
    peer: SocketAddr,
    addr: Option<IpAddr>,
    port: Option<u16>,
) -> Result<(), EngineError> {
    if addr.is_none() && port.is_none() {
        return Ok(());
    }
    let ip = addr.unwrap_or(match peer {
        SocketAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        SocketAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    });
    let local = SocketAddr::new(ip, port.unwrap_or(0));
    if port.is_some() {
        sock.set_reuse_address(true)
            .map_err(EngineError::io("SO_REUSEADDR"))?;
    }
    sock.bind(&SockAddr::from(local))
        .map_err(|source| EngineError::Bind {
            addr: local,
            source,
        })
}

/// The first of `addrs` that accepts a control connection (no Nagle
/// delay), from `opts`' source address and within its timeout.
pub fn connect_any(addrs: &[SocketAddr], opts: &StreamOptions) -> Result<TcpStream, EngineError> {
    let control = StreamOptions {
        bind: opts.bind,
        connect_timeout: opts.connect_timeout,
        ..StreamOptions::default()
    };
    let mut last = None;
    for &addr in addrs {
        match connect(addr, &control) {
            Ok(s) => {
                s.set_nodelay(true)
                    .map_err(EngineError::io("TCP_NODELAY"))?;
                return Ok(s);
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or(EngineError::Timeout {
        what: "an address to connect to",
    }))
}

/// Socket buffer for UDP streams: room for a flow-control window of
/// small packets and for bursts at high rates.
pub const UDP_BUFFER: usize = 16 << 20;

/// Gives a UDP socket [`UDP_BUFFER`] (beyond the system cap where root
/// may), or as much as the system allows.
pub fn size_udp_buffers(sock: &std::net::UdpSocket) {
    if !crate::sys::force_buffers(sock, UDP_BUFFER) {
        let r = socket2::SockRef::from(sock);
        let _ = r.set_recv_buffer_size(UDP_BUFFER);
        let _ = r.set_send_buffer_size(UDP_BUFFER);
    }
}

/// A UDP socket bound to `local` (port `port`, or any) and connected to
/// `peer`, marked with `dscp` and, for IPv6, the flow label.
pub fn udp_connect(
    local: std::net::IpAddr,
    port: Option<u16>,
    peer: SocketAddr,
    dscp: Option<sonde_model::Dscp>,
    flowlabel: Option<u32>,
) -> Result<std::net::UdpSocket, EngineError> {
    let sock = Socket::new(Domain::for_address(peer), Type::DGRAM, Some(Protocol::UDP))
        .map_err(EngineError::io("UDP socket"))?;
    if peer.is_ipv6() && local.is_ipv6() {
        let _ = sock.set_only_v6(false);
    }
    bind_source(&sock, peer, Some(local), Some(port.unwrap_or(0)))?;
    let udp: std::net::UdpSocket = sock.into();
    size_udp_buffers(&udp);
    udp_finish(&udp, peer, dscp, flowlabel)?;
    Ok(udp)
}

/// Connects an already bound UDP socket to `peer` with the marking asked.
pub fn udp_finish(
    udp: &std::net::UdpSocket,
    peer: SocketAddr,
    dscp: Option<sonde_model::Dscp>,
    flowlabel: Option<u32>,
) -> Result<(), EngineError> {
    if let Some(d) = dscp {
        crate::sockopt::set_udp_dscp(udp, d, &peer)?;
    }
    let target = match (peer, flowlabel) {
        (SocketAddr::V6(v6), Some(label)) if v6.ip().to_ipv4_mapped().is_none() => {
            crate::sys::enable_flow_label(udp, *v6.ip(), label).map_err(|source| {
                EngineError::SocketOption {
                    option: "IPV6_FLOWLABEL_MGR".into(),
                    source,
                }
            })?;
            SocketAddr::V6(SocketAddrV6::new(
                *v6.ip(),
                v6.port(),
                (label & 0xF_FFFF).to_be(),
                v6.scope_id(),
            ))
        }
        _ => peer,
    };
    udp.connect(target)
        .map_err(|source| EngineError::Connect { addr: peer, source })?;
    crate::sys::enable_udp_rx_info(udp, peer.is_ipv6()).map_err(|source| {
        EngineError::SocketOption {
            option: "SO_TIMESTAMPNS / IP_RECVTOS".into(),
            source,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_addresses_resolve_in_family_order() {
        assert!(resolve("::1", 1, IpFamily::Any).unwrap()[0].is_ipv6());
        assert!(resolve("[::1]", 1, IpFamily::V6).is_ok());
        assert!(matches!(
            resolve("::1", 1, IpFamily::V4),
            Err(EngineError::NoAddress { .. })
        ));
    }

    #[test]
    fn a_stream_leaves_from_the_source_asked_with_nodelay() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let free = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let opts = StreamOptions {
            nodelay: true,
            bind: Some("127.0.0.1".parse().unwrap()),
            source_port: Some(free),
            connect_timeout: Some(Duration::from_secs(2)),
            ..StreamOptions::default()
        };
        let s = connect(addr, &opts).unwrap();
        assert_eq!(
            s.local_addr().unwrap(),
            SocketAddr::from(([127, 0, 0, 1], free))
        );
        assert!(s.nodelay().unwrap());
        let plain = connect(addr, &StreamOptions::default()).unwrap();
        assert!(!plain.nodelay().unwrap());
        // A source of the other family cannot reach this server.
        let v6 = StreamOptions {
            bind: Some("::1".parse().unwrap()),
            ..StreamOptions::default()
        };
        assert!(matches!(connect(addr, &v6), Err(EngineError::Bind { .. })));
    }
}
