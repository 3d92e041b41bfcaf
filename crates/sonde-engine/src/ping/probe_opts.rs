//! What every ping socket is set up with before it connects: the DSCP,
//! the TTL / hop limit, and where requests leave from (a source address,
//! or an interface through SO_BINDTODEVICE), as iputils' `-Q`, `-t` and
//! `-I`.

use crate::EngineError;
use socket2::{SockAddr, Socket};
use sonde_model::{Dscp, PingSource, PingSpec};
use std::net::SocketAddr;

/// The socket options of a ping spec.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProbeOptions<'a> {
    pub dscp: Option<Dscp>,
    /// TTL (IPv4) or hop limit (IPv6); `None`: the system's.
    pub ttl: Option<u16>,
    pub source: Option<PingSource<'a>>,
}

impl<'a> ProbeOptions<'a> {
    pub fn of(spec: &'a PingSpec) -> Self {
        Self {
            dscp: spec.dscp,
            ttl: spec.ttl,
            source: spec.source(),
        }
    }

    /// Sets the options on `sock`, which will send to `target`; before
    /// it connects (a bound source or device decides the route).
    pub fn apply(&self, sock: &Socket, target: SocketAddr) -> Result<(), EngineError> {
        let v6 = target.is_ipv6();
        let opt = |option: &str| {
            let option = option.to_string();
            move |source| EngineError::SocketOption { option, source }
        };
        if let Some(d) = self.dscp {
            let tos = u32::from(d.tos_byte());
            if v6 {
                sock.set_tclass_v6(tos).map_err(opt("IPV6_TCLASS"))?;
            } else {
                sock.set_tos_v4(tos).map_err(opt("IP_TOS"))?;
            }
        }
        if let Some(t) = self.ttl {
            if v6 {
                sock.set_unicast_hops_v6(u32::from(t))
                    .map_err(opt("IPV6_UNICAST_HOPS"))?;
            } else {
                sock.set_ttl_v4(u32::from(t)).map_err(opt("IP_TTL"))?;
            }
        }
        match self.source {
            None => Ok(()),
            Some(PingSource::Interface(name)) => {
                sock.bind_device(Some(name.as_bytes())).map_err(|e| {
                    if e.raw_os_error() == Some(libc::ENODEV) {
                        EngineError::NoInterface {
                            name: name.to_string(),
                        }
                    } else {
                        EngineError::SocketOption {
                            option: format!("SO_BINDTODEVICE {name}"),
                            source: e,
                        }
                    }
                })
            }
            Some(PingSource::Address(a)) => {
                if a.is_ipv6() != v6 {
                    return Err(EngineError::SourceFamily {
                        from: a,
                        target: target.ip(),
                    });
                }
                let addr = SocketAddr::new(a, 0);
                sock.bind(&SockAddr::from(addr))
                    .map_err(|source| EngineError::Bind { addr, source })
            }
        }
    }
}
