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

use crate::client_core::ClientCore;
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

/// The one place the client-side rules live; `streams`: the data
/// streams the test opens.
pub(crate) fn check_client(c: &ClientCore, streams: usize) -> Result<(), SpecError> {
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
        let last = u64::from(port) + streams.saturating_sub(1) as u64;
        if port == 0 || last > u64::from(u16::MAX) {
            return Err(bad(
                "cport",
                format!(
                    "{port}: the data streams take ports {port} to {last}; use 1 to {}",
                    u64::from(u16::MAX) + 1 - streams.max(1) as u64
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

    fn shape() -> ClientCore {
        ClientCore::default()
    }

    #[test]
    fn one_end_condition_at_a_time() {
        let s = ClientCore {
            bytes: Some(ByteSize::from_bytes(1)),
            blocks: Some(1),
            ..shape()
        };
        assert_eq!(check_client(&s, 1).unwrap_err().field, "bytes");
        let s = ClientCore {
            blocks: Some(0),
            ..shape()
        };
        assert_eq!(check_client(&s, 1).unwrap_err().field, "blocks");
        assert_eq!(volume(None, Some(5)), Some(Volume::Blocks(5)));
    }

    #[test]
    fn source_address_and_ports_are_checked() {
        let s = ClientCore {
            bind: Some("127.0.0.1".parse().unwrap()),
            family: IpFamily::V6,
            ..shape()
        };
        assert_eq!(check_client(&s, 1).unwrap_err().field, "bind");
        let s = ClientCore {
            cport: Some(65_535),
            ..shape()
        };
        let e = check_client(&s, 2).unwrap_err();
        assert_eq!(e.field, "cport");
        assert!(e.reason.contains("65534"), "{e}");
        let s = ClientCore {
            cport: Some(65_534),
            ..shape()
        };
        check_client(&s, 2).unwrap();
        let s = ClientCore {
            connect_timeout: Some(Duration::ZERO),
            ..shape()
        };
        assert_eq!(check_client(&s, 1).unwrap_err().field, "connect_timeout_s");
    }
}
