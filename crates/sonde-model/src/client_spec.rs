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

/// Declares a client test's spec (`TcpSpec`, `UdpSpec`): the fields every
/// client test shares are declared here, once, with their defaults, their
/// schema bounds and their documentation; each test adds its own fields in
/// three places, so that a spec's keys keep the order they are written in.
/// Every field keeps its own key at the top of the spec's object (one flat
/// object, `deny_unknown_fields`), which `#[serde(flatten)]` of a shared
/// struct cannot give: serde refuses unknown keys only without flatten.
/// The macro also writes what follows from the shared fields: `Default`,
/// [`crate::StreamLayout`], the shared checks (`check_shared`, the run's
/// and the client's rules), `send_duration` and `volume`.
macro_rules! declare_client_spec {
    (
        $(#[$attr:meta])*
        pub struct $name:ident {
            after_direction { $( $(#[$a1:meta])* pub $f1:ident : $t1:ty = $d1:expr, )* }
            after_title { $( $(#[$a2:meta])* pub $f2:ident : $t2:ty = $d2:expr, )* }
            after_connect_timeout { $( $(#[$a3:meta])* pub $f3:ident : $t3:ty = $d3:expr, )* }
        }
    ) => {
        $(#[$attr])*
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
        #[serde(deny_unknown_fields, default)]
        pub struct $name {
            /// The server: a host name or an address.
            #[schemars(length(min = 1, max = 253), regex(pattern = r"^[^\s\x00-\x1f\x7f]+$"))]
            pub host: String,
            pub port: u16,
            /// How long data flows after the omitted warm-up.
            #[schemars(with = "f64")]
            #[serde(with = "crate::serde_secs", rename = "time_s")]
            #[schemars(range(max = 86400), extend("exclusiveMinimum" = 0))]
            pub time: std::time::Duration,
            /// Reporting interval; zero means no interval reports.
            #[schemars(with = "f64")]
            #[serde(with = "crate::serde_secs", rename = "interval_s")]
            #[schemars(range(max = 86400), extend("anyOf" = [{"const": 0}, {"minimum": 0.1}]))]
            pub interval: std::time::Duration,
            /// Warm-up left out of the summary (iperf3's `-O`).
            #[schemars(with = "f64")]
            #[serde(with = "crate::serde_secs", rename = "omit_s")]
            #[schemars(range(min = 0, max = 86400))]
            pub omit: std::time::Duration,
            /// Streams per direction.
            #[schemars(range(min = 1, max = 128))]
            pub parallel: u16,
            pub direction: crate::Direction,
            $( $(#[$a1])* pub $f1: $t1, )*
            #[schemars(range(min = 0, max = 63))]
            pub dscp: Option<crate::Dscp>,
            /// IPv6 flow label for the data streams.
            #[schemars(range(max = 1048575))]
            pub flowlabel: Option<u32>,
            pub family: crate::IpFamily,
            #[schemars(length(max = 200))]
            pub title: Option<String>,
            $( $(#[$a2])* pub $f2: $t2, )*
            /// The protocol the server speaks.
            pub peer: crate::PeerKind,
            /// Ping the server before and through the test: RTT idle and
            /// under load (`--latency`).
            pub latency: bool,
            /// End the test after this many bytes in each direction (all its
            /// streams, after the warm-up), or at `time_s` if sooner (`-n`).
            #[serde(skip_serializing_if = "Option::is_none")]
            pub bytes: Option<crate::ByteSize>,
            /// End the test after this many blocks (writes of `length_bytes`,
            /// or UDP datagrams) in each direction, or at `time_s` (`-k`).
            #[serde(skip_serializing_if = "Option::is_none")]
            #[schemars(range(min = 1))]
            pub blocks: Option<u64>,
            /// The client's source address for the control and data
            /// connections (`-B`).
            #[serde(skip_serializing_if = "Option::is_none")]
            pub bind: Option<std::net::IpAddr>,
            /// The client's source port of the first data stream; stream `i`
            /// takes `cport + i` (`--cport`).
            #[serde(skip_serializing_if = "Option::is_none")]
            #[schemars(range(min = 1))]
            pub cport: Option<u16>,
            /// How long to wait for each connection to the server.
            #[schemars(with = "Option<f64>")]
            #[serde(
                with = "crate::serde_secs::option",
                rename = "connect_timeout_s",
                skip_serializing_if = "Option::is_none"
            )]
            #[schemars(range(min = 0))]
            pub connect_timeout: Option<std::time::Duration>,
            $( $(#[$a3])* pub $f3: $t3, )*
            /// Ask an iperf3 server for its own output, kept in the result's
            /// `server_output` (`--get-server-output`; sonde's own server's
            /// figures are in the result anyway).
            #[serde(skip_serializing_if = "std::ops::Not::not")]
            pub get_server_output: bool,
            /// The token this client proves it holds to the server
            /// (`--token-file`); never serialized.
            #[serde(skip)]
            pub token: Option<crate::Credential>,
        }

        impl Default for $name {
            fn default() -> Self {
                Self {
                    host: String::new(),
                    port: 5201,
                    time: std::time::Duration::from_secs(10),
                    interval: std::time::Duration::from_secs(1),
                    omit: std::time::Duration::ZERO,
                    parallel: 1,
                    direction: crate::Direction::Forward,
                    $( $f1: $d1, )*
                    dscp: None,
                    flowlabel: None,
                    family: crate::IpFamily::Any,
                    title: None,
                    $( $f2: $d2, )*
                    peer: crate::PeerKind::Auto,
                    latency: false,
                    bytes: None,
                    blocks: None,
                    bind: None,
                    cport: None,
                    connect_timeout: None,
                    $( $f3: $d3, )*
                    get_server_output: false,
                    token: None,
                }
            }
        }

        impl crate::StreamLayout for $name {
            fn parallel(&self) -> u16 {
                self.parallel
            }
            fn direction(&self) -> crate::Direction {
                self.direction
            }
        }

        impl $name {
            /// The rules of the shared fields: the run's shape
            /// ([`crate::spec::check_run`]) and the client's
            /// ([`crate::client_spec::check_client`]).
            fn check_shared(&self) -> Result<(), crate::SpecError> {
                use crate::StreamLayout as _;
                crate::spec::check_run(&crate::spec::RunShape {
                    host: &self.host,
                    parallel: self.parallel,
                    time: self.time,
                    omit: self.omit,
                    interval: self.interval,
                    flowlabel: self.flowlabel,
                    family: self.family,
                    title: self.title.as_deref(),
                })?;
                crate::client_spec::check_client(&crate::client_spec::ClientShape {
                    bytes: self.bytes,
                    blocks: self.blocks,
                    bind: self.bind,
                    cport: self.cport,
                    streams: self.stream_count(),
                    connect_timeout: self.connect_timeout,
                    family: self.family,
                })
            }

            /// Total time data flows: warm-up plus measured time.
            pub fn send_duration(&self) -> std::time::Duration {
                self.omit + self.time
            }

            /// The test's volume bound, if it has one (`-n` or `-k`).
            pub fn volume(&self) -> Option<crate::client_spec::Volume> {
                crate::client_spec::volume(self.bytes, self.blocks)
            }
        }
    };
}
pub(crate) use declare_client_spec;

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
