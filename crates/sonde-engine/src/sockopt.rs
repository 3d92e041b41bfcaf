//! Socket options of data streams: what is asked (from the spec) and what
//! the kernel granted (read back for the result).

use crate::{sys, EngineError};
use socket2::{SockRef, Socket};
use sonde_model::{ByteSize, Dscp, SocketInForce, TcpSpec};
use std::net::{IpAddr, SocketAddr, TcpStream};

/// The per-socket settings a spec asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamOptions {
    pub window: Option<ByteSize>,
    pub congestion: Option<String>,
    pub mss: Option<u32>,
    pub dscp: Option<Dscp>,
    pub flowlabel: Option<u32>,
    /// TCP_NODELAY on the data stream.
    pub nodelay: bool,
    /// The client's source address (`-B`); `None`: the kernel's choice.
    pub bind: Option<IpAddr>,
    /// The client's source port (`--cport`, per stream).
    pub source_port: Option<u16>,
    /// How long a connect may take; `None`: [`crate::connect::CONNECT_TIMEOUT`].
    pub connect_timeout: Option<std::time::Duration>,
}

impl From<&TcpSpec> for StreamOptions {
    fn from(s: &TcpSpec) -> Self {
        Self {
            window: s.window,
            congestion: s.congestion.clone(),
            mss: s.mss,
            dscp: s.dscp,
            flowlabel: s.flowlabel,
            nodelay: s.no_delay,
            bind: s.bind,
            source_port: None,
            connect_timeout: s.connect_timeout,
        }
    }
}

impl StreamOptions {
    /// The options of data stream `index`: with `--cport`, its own port
    /// (`cport + index`, as the spec's rules allow).
    pub fn for_stream(&self, cport: Option<u16>, index: usize) -> StreamOptions {
        StreamOptions {
            source_port: cport.and_then(|p| u16::try_from(usize::from(p) + index).ok()),
            ..self.clone()
        }
    }
}

fn opt_err(option: impl Into<String>) -> impl FnOnce(std::io::Error) -> EngineError {
    let option = option.into();
    move |source| EngineError::SocketOption { option, source }
}

/// Whether packets to `peer` leave as IPv4 (plain or v4-mapped).
fn is_v4(peer: &SocketAddr) -> bool {
    match peer.ip() {
        IpAddr::V4(_) => true,
        IpAddr::V6(v6) => v6.to_ipv4_mapped().is_some(),
    }
}

/// Settings both ends apply: buffers, congestion control, DSCP.
fn apply_common(
    sock: &SockRef<'_>,
    o: &StreamOptions,
    peer: &SocketAddr,
) -> Result<(), EngineError> {
    if let Some(w) = o.window {
        let bytes = usize::try_from(w.bytes()).unwrap_or(usize::MAX);
        sock.set_send_buffer_size(bytes)
            .map_err(opt_err("SO_SNDBUF"))?;
        sock.set_recv_buffer_size(bytes)
            .map_err(opt_err("SO_RCVBUF"))?;
    }
    if let Some(cc) = &o.congestion {
        sock.set_tcp_congestion(cc.as_bytes())
            .map_err(opt_err(format!("congestion control '{cc}'")))?;
    }
    if o.nodelay {
        sock.set_tcp_nodelay(true).map_err(opt_err("TCP_NODELAY"))?;
    }
    if let Some(d) = o.dscp {
        let tos = u32::from(d.tos_byte());
        if is_v4(peer) {
            sock.set_tos_v4(tos).map_err(opt_err("IP_TOS"))?;
        } else {
            sock.set_tclass_v6(tos).map_err(opt_err("IPV6_TCLASS"))?;
        }
    }
    Ok(())
}

/// Client side, before `connect`: everything, MSS and flow label included.
pub fn apply_before_connect(
    sock: &Socket,
    o: &StreamOptions,
    peer: &SocketAddr,
) -> Result<(), EngineError> {
    let r = SockRef::from(sock);
    apply_common(&r, o, peer)?;
    if let Some(mss) = o.mss {
        sock.set_tcp_mss(mss).map_err(opt_err("TCP_MAXSEG"))?;
    }
    if let (Some(label), SocketAddr::V6(v6)) = (o.flowlabel, peer) {
        sys::enable_flow_label(sock, *v6.ip(), label).map_err(opt_err("IPV6_FLOWLABEL_MGR"))?;
    }
    Ok(())
}

/// Server side, on an accepted stream.
pub fn apply_accepted(stream: &TcpStream, o: &StreamOptions) -> Result<(), EngineError> {
    let peer = stream
        .peer_addr()
        .map_err(EngineError::io("peer address"))?;
    apply_common(&SockRef::from(stream), o, &peer)
}

/// What the kernel has in force on a connected TCP stream.
pub fn in_force(stream: &TcpStream, flowlabel: Option<u32>) -> SocketInForce {
    let unspecified: SocketAddr = (std::net::Ipv6Addr::UNSPECIFIED, 0).into();
    let local = stream.local_addr().unwrap_or(unspecified);
    let peer = stream.peer_addr().unwrap_or(unspecified);
    socket_in_force(&SockRef::from(stream), local, peer, flowlabel, true)
}

/// What the kernel has in force on a connected UDP socket.
pub fn udp_in_force(sock: &std::net::UdpSocket, flowlabel: Option<u32>) -> SocketInForce {
    let unspecified: SocketAddr = (std::net::Ipv6Addr::UNSPECIFIED, 0).into();
    let local = sock.local_addr().unwrap_or(unspecified);
    let peer = sock.peer_addr().unwrap_or(unspecified);
    socket_in_force(&SockRef::from(sock), local, peer, flowlabel, false)
}

fn socket_in_force(
    r: &SockRef<'_>,
    local: SocketAddr,
    peer: SocketAddr,
    flowlabel: Option<u32>,
    tcp: bool,
) -> SocketInForce {
    let tos = if is_v4(&peer) {
        r.tos_v4()
    } else {
        r.tclass_v6()
    };
    SocketInForce {
        local,
        remote: peer,
        sndbuf_bytes: r.send_buffer_size().ok().map(|v| v as u64),
        rcvbuf_bytes: r.recv_buffer_size().ok().map(|v| v as u64),
        mss_bytes: if tcp { r.tcp_mss().ok() } else { None },
        congestion: if tcp {
            r.tcp_congestion().ok().map(|v| {
                String::from_utf8_lossy(&v)
                    .trim_end_matches('\0')
                    .to_string()
            })
        } else {
            None
        },
        dscp: tos
            .ok()
            .and_then(|t| u8::try_from(t).ok())
            .map(Dscp::from_tos_byte)
            .filter(|d| d.value() != 0),
        flowlabel: if is_v4(&peer) { None } else { flowlabel },
    }
}

/// Marks a UDP socket's packets with `dscp` (IPv4, v4-mapped or IPv6).
pub fn set_udp_dscp(
    sock: &std::net::UdpSocket,
    dscp: Dscp,
    peer: &SocketAddr,
) -> Result<(), EngineError> {
    let r = SockRef::from(sock);
    let tos = u32::from(dscp.tos_byte());
    if is_v4(peer) {
        r.set_tos_v4(tos).map_err(opt_err("IP_TOS"))
    } else {
        r.set_tclass_v6(tos).map_err(opt_err("IPV6_TCLASS"))
    }
}

/// Whether packets to `peer` leave as IPv6 (not v4-mapped).
pub fn is_v6_path(peer: &SocketAddr) -> bool {
    !is_v4(peer)
}
