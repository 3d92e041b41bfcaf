//! What `sonde tcp` and `sonde udp` share on the client's side beyond
//! the run's shape: how the test may end early (a byte or block count,
//! iperf3's `-n` and `-k`) and where the client's connections come from
//! (`-B`, `--cport`, `--connect-timeout`). The rules live in
//! [`check_client`], which both specs' `validate` call.
//!
//! These keys are written only when set, so that a spec that uses none of
//! them reads the same as before they existed: a server of an earlier
//! version (which refuses keys it does not know) still runs it, and one
//! that uses them is refused there by name rather than run unbounded.

use crate::spec_error::{bad, IpFamily, SpecError};
use crate::ByteSize;
use std::net::IpAddr;
use std::time::Duration;

/// The longest wait for a connection that a spec may ask for.
pub const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(300);

/// How a test bounded by volume ends: after this much data in one
/// direction (all its streams together, after the warm-up), or at the
/// test's time, whichever comes first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Volume {
    /// A byte count (`-n`).
    Bytes(u64),
    /// A count of writes of the spec's length, or of UDP datagrams
    /// (`-k`).
    Blocks(u64),
}

/// The client-side fields of a spec, as [`check_client`] reads them.
pub(crate) struct ClientShape {
    pub bytes: Option<ByteSize>,
    pub blocks: Option<u64>,
    pub bind: Option<IpAddr>,
    pub cport: Option<u16>,
    pub streams: usize,
    pub connect_timeout: Option<Duration>,
    pub family: IpFamily,
}

/// The one place the client-side rules live.
pub(crate) fn check_client(c: &ClientShape) -> Result<(), SpecError> {
    match (c.bytes, c.blocks) {
        (Some(_), Some(_)) => {
            return Err(bad(
                "bytes",
                "give a byte count or a block count (blocks), not both",
            ))
        }
        (Some(b), None) if b.bytes() == 0 => {
            return Err(bad(
                "bytes",
                "must be more than 0 (leave it out for a timed test)",
            ))
        }
        (None, Some(0)) => {
            return Err(bad(
                "blocks",
                "must be more than 0 (leave it out for a timed test)",
            ))
        }
        _ => {}
    }
    if let Some(addr) = c.bind {
        let clash = match (addr, c.family) {
            (IpAddr::V4(_), IpFamily::V6) => Some("IPv6"),
            (IpAddr::V6(_), IpFamily::V4) => Some("IPv4"),
            _ => None,
        };
        if let Some(asked) = clash {
            return Err(bad(
                "bind",
                format!("{addr} cannot be the source of an {asked} test"),
            ));
        }
        if addr.is_multicast() {
            return Err(bad("bind", format!("{addr} is a multicast address")));
        }
    }
    if let Some(port) = c.cport {
        let last = u64::from(port) + c.streams.saturating_sub(1) as u64;
        if port == 0 || last > u64::from(u16::MAX) {
            return Err(bad(
                "cport",
                format!(
                    "{port}: the data streams take ports {port} to {last}; use 1 to {}",
                    u64::from(u16::MAX) + 1 - c.streams.max(1) as u64
                ),
            ));
        }
    }
    if let Some(t) = c.connect_timeout {
        if t.is_zero() || t > MAX_CONNECT_TIMEOUT {
            return Err(bad(
                "connect_timeout_s",
                "must be more than 0 and at most 5m",
            ));
        }
    }
    Ok(())
}

/// The volume asked for, if any.
pub(crate) fn volume(bytes: Option<ByteSize>, blocks: Option<u64>) -> Option<Volume> {
    match (bytes, blocks) {
        (Some(b), _) => Some(Volume::Bytes(b.bytes())),
        (None, Some(k)) => Some(Volume::Blocks(k)),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape() -> ClientShape {
        ClientShape {
            bytes: None,
            blocks: None,
            bind: None,
            cport: None,
            streams: 1,
            connect_timeout: None,
            family: IpFamily::Any,
        }
    }

    #[test]
    fn one_end_condition_at_a_time() {
        let s = ClientShape {
            bytes: Some(ByteSize::from_bytes(1)),
            blocks: Some(1),
            ..shape()
        };
        assert_eq!(check_client(&s).unwrap_err().field, "bytes");
        let s = ClientShape {
            blocks: Some(0),
            ..shape()
        };
        assert_eq!(check_client(&s).unwrap_err().field, "blocks");
        assert_eq!(volume(None, Some(5)), Some(Volume::Blocks(5)));
    }

    #[test]
    fn source_address_and_ports_are_checked() {
        let s = ClientShape {
            bind: Some("127.0.0.1".parse().unwrap()),
            family: IpFamily::V6,
            ..shape()
        };
        assert_eq!(check_client(&s).unwrap_err().field, "bind");
        let s = ClientShape {
            cport: Some(65_535),
            streams: 2,
            ..shape()
        };
        let e = check_client(&s).unwrap_err();
        assert_eq!(e.field, "cport");
        assert!(e.reason.contains("65534"), "{e}");
        let s = ClientShape {
            cport: Some(65_534),
            streams: 2,
            ..shape()
        };
        check_client(&s).unwrap();
        let s = ClientShape {
            connect_timeout: Some(Duration::ZERO),
            ..shape()
        };
        assert_eq!(check_client(&s).unwrap_err().field, "connect_timeout_s");
    }
}
