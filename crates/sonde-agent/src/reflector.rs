//! The STAMP reflector of `sonde serve` (RFC 8762): UDP port 862 by
//! default, on the server's addresses, one thread per socket.

use crate::config::ReflectorConfig;
use sonde_engine::stamp_reflector::{run_reflector, ReflectorOptions, ReflectorStats};
use sonde_wire::stamp::{HmacKey, Mode};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::Arc;

/// Bound reflector sockets, not yet answering.
#[derive(Debug)]
pub struct Reflector {
    sockets: Vec<UdpSocket>,
    options: ReflectorOptions,
    pub stats: Arc<ReflectorStats>,
}

/// Reads an authentication key: hexadecimal text (whitespace ignored).
pub fn parse_key(text: &str) -> Result<Vec<u8>, String> {
    let hex: Vec<char> = text.chars().filter(|c| !c.is_whitespace()).collect();
    if let Some((i, c)) = hex.iter().enumerate().find(|(_, c)| !c.is_ascii_hexdigit()) {
        return Err(format!("'{c}' at digit {} is not hexadecimal", i + 1));
    }
    if hex.is_empty() || !hex.len().is_multiple_of(2) {
        return Err(format!(
            "a key is an even number of hex digits; found {}",
            hex.len()
        ));
    }
    Ok(hex
        .chunks(2)
        .map(|p| {
            let digit = |c: char| c.to_digit(16).unwrap_or(0) as u8;
            digit(p[0]) << 4 | digit(p[1])
        })
        .collect())
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
    pub fn bind(config: &ReflectorConfig, bind: &[IpAddr]) -> Result<Option<Self>, String> {
        if !config.enabled {
            return Ok(None);
        }
        let mode = match &config.key_file {
            None => Mode::Unauthenticated,
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("reflector.key_file {}: {e}", path.display()))?;
                let key = parse_key(&text)
                    .map_err(|e| format!("reflector.key_file {}: {e}", path.display()))?;
                Mode::Authenticated(HmacKey::new(&key).map_err(|e| e.to_string())?)
            }
        };
        let mut sockets = Vec::new();
        if bind.is_empty() {
            let v6 = SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), config.port);
            match udp_socket(v6) {
                Ok(s) => sockets.push(s),
                Err(_) => {
                    let v4 = SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), config.port);
                    sockets.push(udp_socket(v4).map_err(|e| format!("reflector on {v4}: {e}"))?);
                }
            }
        }
        for ip in bind {
            let port = sockets
                .first()
                .and_then(|s: &UdpSocket| s.local_addr().ok())
                .map_or(config.port, |a| a.port());
            let addr = SocketAddr::new(*ip, port);
            sockets.push(udp_socket(addr).map_err(|e| format!("reflector on {addr}: {e}"))?);
        }
        Ok(Some(Self {
            sockets,
            options: ReflectorOptions {
                mode,
                rate_pps: config.rate_limit,
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
    fn keys_are_hex_and_mistakes_are_named() {
        assert_eq!(parse_key("00ff10\n").unwrap(), vec![0, 255, 16]);
        assert_eq!(
            parse_key("de ad be ef").unwrap(),
            vec![0xde, 0xad, 0xbe, 0xef]
        );
        assert!(parse_key("abc").unwrap_err().contains("even number"));
        assert!(parse_key("zz00").unwrap_err().contains("'z' at digit 1"));
        assert!(parse_key("0é").unwrap_err().contains("'é' at digit 2"));
        assert!(parse_key("").is_err());
    }
}
