//! The STAMP reflector of `sonde serve` (RFC 8762): UDP port 862 by
//! default, on the server's addresses, one thread per socket.

use crate::config::ReflectorConfig;
use sonde_engine::stamp_limit::TotalCap;
use sonde_engine::stamp_reflector::{run_reflector, ReflectorOptions, ReflectorStats};
use sonde_wire::stamp::key::{parse_hex_key, KeyError};
use sonde_wire::stamp::{HmacKey, Mode, StampError};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::sync::Arc;

/// Bound reflector sockets, not yet answering.
#[derive(Debug)]
pub struct Reflector {
    sockets: Vec<UdpSocket>,
    options: ReflectorOptions,
    pub stats: Arc<ReflectorStats>,
}

/// Why the reflector cannot start. A key that cannot be used is a
/// configuration mistake; a port that cannot be bound (862 needs root,
/// or is taken) is not.
#[derive(Debug, thiserror::Error)]
pub enum ReflectorError {
    #[error("reflector.key_file {}: {source}", path.display())]
    ReadKey {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("reflector.key_file {}: {source}", path.display())]
    BadKey { path: PathBuf, source: KeyError },
    #[error("reflector.key_file {}: {source}", path.display())]
    UnusableKey { path: PathBuf, source: StampError },
    #[error("reflector on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// The key in `path` as the reflector uses it.
fn read_key(path: &std::path::Path) -> Result<HmacKey, ReflectorError> {
    let text = std::fs::read_to_string(path).map_err(|source| ReflectorError::ReadKey {
        path: path.to_path_buf(),
        source,
    })?;
    let key = parse_hex_key(&text).map_err(|source| ReflectorError::BadKey {
        path: path.to_path_buf(),
        source,
    })?;
    HmacKey::new(&key).map_err(|source| ReflectorError::UnusableKey {
        path: path.to_path_buf(),
        source,
    })
}

fn udp_socket(addr: SocketAddr) -> std::io::Result<UdpSocket> {
    let domain = if addr.is_ipv6() {
        socket2::Domain::IPV6
    } else {
        socket2::Domain::IPV4
    };
    let sock = socket2::Socket::new(domain, socket2::Type::DGRAM, None)?;
    if addr.is_ipv6() {
        sock.set_only_v6(!addr.ip().is_unspecified())?;
    }
    sock.bind(&addr.into())?;
    Ok(sock.into())
}

impl Reflector {
    /// Binds the reflector on `bind` (empty: `[::]`, dual-stack, or
    /// `0.0.0.0`). `Ok(None)` when it is turned off.
    pub fn bind(config: &ReflectorConfig, bind: &[IpAddr]) -> Result<Option<Self>, ReflectorError> {
        if !config.enabled {
            return Ok(None);
        }
        let mode = match &config.key_file {
            None => Mode::Unauthenticated,
            Some(path) => Mode::Authenticated(read_key(path)?),
        };
        let mut sockets = Vec::new();
        if bind.is_empty() {
            let v6 = SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), config.port);
            match udp_socket(v6) {
                Ok(s) => sockets.push(s),
                Err(_) => {
                    let v4 = SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), config.port);
                    sockets.push(
                        udp_socket(v4)
                            .map_err(|source| ReflectorError::Bind { addr: v4, source })?,
                    );
                }
            }
        }
        for ip in bind {
            let port = sockets
                .first()
                .and_then(|s: &UdpSocket| s.local_addr().ok())
                .map_or(config.port, |a| a.port());
            let addr = SocketAddr::new(*ip, port);
            sockets.push(udp_socket(addr).map_err(|source| ReflectorError::Bind { addr, source })?);
        }
        Ok(Some(Self {
            sockets,
            options: ReflectorOptions {
                mode,
                rate_pps: config.rate_limit,
                total: Arc::new(TotalCap::new(config.total_rate_limit)),
                twamp_light: config.twamp_light,
            },
            stats: Arc::new(ReflectorStats::default()),
        }))
    }

    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.sockets
            .iter()
            .filter_map(|s| s.local_addr().ok())
            .collect()
    }

    /// Answers on background threads.
    pub fn spawn(self) {
        for sock in self.sockets {
            let options = self.options.clone();
            let stats = Arc::clone(&self.stats);
            let spawned = std::thread::Builder::new()
                .name("sonde-reflector".into())
                .spawn(move || {
                    if let Err(e) = run_reflector(&sock, &options, &stats) {
                        tracing::error!(error = %e, "reflector stopped");
                    }
                });
            if let Err(e) = spawned {
                tracing::error!(error = %e, "cannot start the reflector");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_key_file_and_a_taken_port_are_told_apart() {
        let dir = std::env::temp_dir().join(format!("sonde-reflector-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let key_file = dir.join("bad.key");
        std::fs::write(&key_file, "xy").unwrap();
        let loopback = [IpAddr::V6(Ipv6Addr::LOCALHOST)];
        let config = ReflectorConfig {
            port: 0,
            key_file: Some(key_file.clone()),
            ..ReflectorConfig::default()
        };
        let e = Reflector::bind(&config, &loopback).unwrap_err();
        assert!(
            matches!(
                &e,
                ReflectorError::BadKey {
                    source: KeyError::NotHex { .. },
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(e.to_string().starts_with("reflector.key_file "), "{e}");
        let missing = ReflectorConfig {
            key_file: Some(dir.join("missing.key")),
            ..config.clone()
        };
        let e = Reflector::bind(&missing, &loopback).unwrap_err();
        assert!(matches!(e, ReflectorError::ReadKey { .. }), "{e:?}");
        std::fs::remove_dir_all(&dir).unwrap();

        let Some(Ok(first)) = ["::1", "127.0.0.1"].iter().find_map(|ip| {
            let ip: IpAddr = ip.parse().ok()?;
            let config = ReflectorConfig {
                port: 0,
                ..ReflectorConfig::default()
            };
            Reflector::bind(&config, &[ip])
                .ok()
                .flatten()
                .map(Ok::<_, ()>)
        }) else {
            return; // no loopback to bind here
        };
        let taken = first.local_addrs()[0];
        let again = ReflectorConfig {
            port: taken.port(),
            ..ReflectorConfig::default()
        };
        let e = Reflector::bind(&again, &[taken.ip()]).unwrap_err();
        let ReflectorError::Bind { addr, .. } = &e else {
            panic!("not a bind error: {e:?}");
        };
        assert_eq!(*addr, taken);
        assert!(
            e.to_string()
                .starts_with(&format!("reflector on {taken}: ")),
            "{e}"
        );
    }
}
