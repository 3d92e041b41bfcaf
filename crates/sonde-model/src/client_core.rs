//! What every client test's spec shares (`TcpSpec`, `UdpSpec`): the
//! server, the run's shape (time, interval, warm-up, streams, direction),
//! the packets' marks (DSCP, flow label), the family and title, the peer,
//! the latency probe, the volume bound and where the client's
//! connections come from. The fields are listed once, in
//! [`with_client_core!`], with their defaults, schema bounds and
//! documentation; [`ClientCore`] holds them alone (what a command line
//! gathers once for either test), and each spec is declared with them
//! around its own fields.
//!
//! Every field keeps its own key at the top of a spec's object (one flat
//! object, `deny_unknown_fields`), which `#[serde(flatten)]` of a shared
//! struct cannot give: serde refuses unknown keys only without flatten.
//! So the shared fields are put into each spec by a macro, not a struct.
//!
//! The rules of the shared fields live here, once ([`ClientCore::check`]):
//! the run's shape, how the test may end early (a byte or block count,
//! iperf3's `-n` and `-k`) and where the client's connections come from
//! (`-B`, `--cport`, `--connect-timeout`). Those last keys are written
//! only when set, so that a spec that uses none of them reads the same as
//! before they existed: a server of an earlier version (which refuses
//! keys it does not know) still runs it, and one that uses them is
//! refused there by name rather than run unbounded.

use crate::spec_error::{bad, IpFamily, SpecError};
use crate::spec_rules::{
    check_host, check_title, MAX_DURATION, MAX_FLOWLABEL, MAX_PARALLEL, MIN_INTERVAL,
};
use crate::ByteSize;
use serde::{Deserialize, Serialize};
use std::net::IpAddr;
use std::time::Duration;

/// Hands `$callback!` its own tokens followed by the shared fields in
/// four groups (the places they take in a spec's key order).
macro_rules! with_client_core {
    ($callback:ident ! { $($args:tt)* }) => {
        $callback! {
            $($args)*
            shared {
                first {
                    /// The server: a host name or an address.
                    #[schemars(length(min = 1, max = 253), regex(pattern = r"^[^\s\x00-\x1f\x7f]+$"))]
                    pub host: String = String::new(),
                    pub port: u16 = 5201,
                    /// How long data flows after the omitted warm-up.
                    #[schemars(with = "f64")]
                    #[serde(with = "crate::serde_secs", rename = "time_s")]
                    #[schemars(range(max = 86400), extend("exclusiveMinimum" = 0))]
                    pub time: std::time::Duration = std::time::Duration::from_secs(10),
                    /// Reporting interval; zero means no interval reports.
                    #[schemars(with = "f64")]
                    #[serde(with = "crate::serde_secs", rename = "interval_s")]
                    #[schemars(range(max = 86400), extend("anyOf" = [{"const": 0}, {"minimum": 0.1}]))]
                    pub interval: std::time::Duration = std::time::Duration::from_secs(1),
                    /// Warm-up left out of the summary (iperf3's `-O`).
                    #[schemars(with = "f64")]
                    #[serde(with = "crate::serde_secs", rename = "omit_s")]
                    #[schemars(range(min = 0, max = 86400))]
                    pub omit: std::time::Duration = std::time::Duration::ZERO,
                    /// Streams per direction.
                    #[schemars(range(min = 1, max = 128))]
                    pub parallel: u16 = 1,
                    pub direction: crate::Direction = crate::Direction::Forward,
                }
                second {
                    #[schemars(range(min = 0, max = 63))]
                    pub dscp: Option<crate::Dscp> = None,
                    /// IPv6 flow label for the data streams.
                    #[schemars(range(max = 1048575))]
                    pub flowlabel: Option<u32> = None,
                    pub family: crate::IpFamily = crate::IpFamily::Any,
                    #[schemars(length(max = 200))]
                    pub title: Option<String> = None,
                }
                third {
                    /// The protocol the server speaks.
                    pub peer: crate::PeerKind = crate::PeerKind::Auto,
                    /// Ping the server before and through the test: RTT idle and
                    /// under load (`--latency`).
                    pub latency: bool = false,
                    /// End the test after this many bytes in each direction (all its
                    /// streams, after the warm-up), or at `time_s` if sooner (`-n`).
                    #[serde(skip_serializing_if = "Option::is_none")]
                    pub bytes: Option<crate::ByteSize> = None,
                    /// End the test after this many blocks (writes of `length_bytes`,
                    /// or UDP datagrams) in each direction, or at `time_s` (`-k`).
                    #[serde(skip_serializing_if = "Option::is_none")]
                    #[schemars(range(min = 1))]
                    pub blocks: Option<u64> = None,
                    /// The client's source address for the control and data
                    /// connections (`-B`).
                    #[serde(skip_serializing_if = "Option::is_none")]
                    pub bind: Option<std::net::IpAddr> = None,
                    /// The client's source port of the first data stream; stream `i`
                    /// takes `cport + i` (`--cport`).
                    #[serde(skip_serializing_if = "Option::is_none")]
                    #[schemars(range(min = 1))]
                    pub cport: Option<u16> = None,
                    /// How long to wait for each connection to the server.
                    #[schemars(with = "Option<f64>")]
                    #[serde(
                        with = "crate::serde_secs::option",
                        rename = "connect_timeout_s",
                        skip_serializing_if = "Option::is_none"
                    )]
                    #[schemars(range(min = 0))]
                    pub connect_timeout: Option<std::time::Duration> = None,
                }
                fourth {
                    /// Ask an iperf3 server for its own output, kept in the result's
                    /// `server_output` (`--get-server-output`; sonde's own server's
                    /// figures are in the result anyway).
                    #[serde(skip_serializing_if = "std::ops::Not::not")]
                    pub get_server_output: bool = false,
                    /// The token this client proves it holds to the server
                    /// (`--token-file`); never serialized.
                    #[serde(skip)]
                    pub token: Option<crate::Credential> = None,
                }
            }
        }
    };
}
pub(crate) use with_client_core;

/// Declares a client test's spec: its own fields in three places among
/// the shared ones, then `Default`, [`crate::StreamLayout`], the shared
/// checks (`check_shared`), its [`ClientCore`] (`core`, `with_core`),
/// `send_duration` and `volume`.
macro_rules! declare_client_spec {
    (
        $(#[$attr:meta])*
        pub struct $name:ident {
            after_direction { $( $(#[$a1:meta])* pub $f1:ident : $t1:ty = $d1:expr, )* }
            after_title { $( $(#[$a2:meta])* pub $f2:ident : $t2:ty = $d2:expr, )* }
            after_connect_timeout { $( $(#[$a3:meta])* pub $f3:ident : $t3:ty = $d3:expr, )* }
        }
        shared {
            first { $( $(#[$s1:meta])* pub $g1:ident : $u1:ty = $e1:expr, )* }
            second { $( $(#[$s2:meta])* pub $g2:ident : $u2:ty = $e2:expr, )* }
            third { $( $(#[$s3:meta])* pub $g3:ident : $u3:ty = $e3:expr, )* }
            fourth { $( $(#[$s4:meta])* pub $g4:ident : $u4:ty = $e4:expr, )* }
        }
    ) => {
        $(#[$attr])*
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
        #[serde(deny_unknown_fields, default)]
        pub struct $name {
            $( $(#[$s1])* pub $g1: $u1, )*
            $( $(#[$a1])* pub $f1: $t1, )*
            $( $(#[$s2])* pub $g2: $u2, )*
            $( $(#[$a2])* pub $f2: $t2, )*
            $( $(#[$s3])* pub $g3: $u3, )*
            $( $(#[$a3])* pub $f3: $t3, )*
            $( $(#[$s4])* pub $g4: $u4, )*
        }

        impl Default for $name {
            fn default() -> Self {
                Self {
                    $( $g1: $e1, )*
                    $( $f1: $d1, )*
                    $( $g2: $e2, )*
                    $( $f2: $d2, )*
                    $( $g3: $e3, )*
                    $( $f3: $d3, )*
                    $( $g4: $e4, )*
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
            /// The shared fields alone.
            pub fn core(&self) -> crate::ClientCore {
                crate::ClientCore {
                    $( $g1: self.$g1.clone(), )*
                    $( $g2: self.$g2.clone(), )*
                    $( $g3: self.$g3.clone(), )*
                    $( $g4: self.$g4.clone(), )*
                }
            }

            /// This spec with `core`'s shared fields.
            pub fn with_core(self, core: crate::ClientCore) -> Self {
                Self {
                    $( $g1: core.$g1, )*
                    $( $g2: core.$g2, )*
                    $( $g3: core.$g3, )*
                    $( $g4: core.$g4, )*
                    ..self
                }
            }

            /// The rules of the shared fields ([`crate::ClientCore::check`]).
            fn check_shared(&self) -> Result<(), crate::SpecError> {
                use crate::StreamLayout as _;
                self.core().check(self.stream_count())
            }

            /// Total time data flows: warm-up plus measured time.
            pub fn send_duration(&self) -> std::time::Duration {
                self.omit + self.time
            }

            /// The test's volume bound, if it has one (`-n` or `-k`).
            pub fn volume(&self) -> Option<crate::client_core::Volume> {
                crate::client_core::volume(self.bytes, self.blocks)
            }
        }
    };
}
pub(crate) use declare_client_spec;

/// Declares [`ClientCore`] from the shared fields.
macro_rules! declare_client_core {
    (
        shared {
            first { $( $(#[$s1:meta])* pub $g1:ident : $u1:ty = $e1:expr, )* }
            second { $( $(#[$s2:meta])* pub $g2:ident : $u2:ty = $e2:expr, )* }
            third { $( $(#[$s3:meta])* pub $g3:ident : $u3:ty = $e3:expr, )* }
            fourth { $( $(#[$s4:meta])* pub $g4:ident : $u4:ty = $e4:expr, )* }
        }
    ) => {
        /// What every client test's spec shares, alone: what a command
        /// line gathers once for either test (`TcpSpec::with_core`), and
        /// what the shared rules read ([`ClientCore::check`]). Its JSON
        /// is a spec's without the test's own keys.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
        #[serde(deny_unknown_fields, default)]
        pub struct ClientCore {
            $( $(#[$s1])* pub $g1: $u1, )*
            $( $(#[$s2])* pub $g2: $u2, )*
            $( $(#[$s3])* pub $g3: $u3, )*
            $( $(#[$s4])* pub $g4: $u4, )*
        }

        impl Default for ClientCore {
            fn default() -> Self {
                Self {
                    $( $g1: $e1, )*
                    $( $g2: $e2, )*
                    $( $g3: $e3, )*
                    $( $g4: $e4, )*
                }
            }
        }
    };
}

with_client_core!(declare_client_core! {});

impl ClientCore {
    /// The shared rules: the run's shape and the client's side;
    /// `streams`: the data streams the test opens.
    pub fn check(&self, streams: usize) -> Result<(), SpecError> {
        check_run(self)?;
        check_client(self, streams)
    }
}

/// Checks the run's shape every client test shares (server, streams,
/// timing, flow label, title); the one place these rules live.
fn check_run(r: &ClientCore) -> Result<(), SpecError> {
    check_host(&r.host)?;
    if r.parallel == 0 || r.parallel > MAX_PARALLEL {
        return Err(bad(
            "parallel",
            format!("{} streams; use 1 to {MAX_PARALLEL}", r.parallel),
        ));
    }
    if r.time.is_zero() || r.time > MAX_DURATION {
        return Err(bad("time_s", "must be more than 0 and at most 24h"));
    }
    if r.omit > MAX_DURATION {
        return Err(bad("omit_s", "must be at most 24h"));
    }
    if !r.interval.is_zero() && r.interval < MIN_INTERVAL {
        return Err(bad(
            "interval_s",
            "must be 0 (no reports) or at least 100ms",
        ));
    }
    if let Some(label) = r.flowlabel {
        if label > MAX_FLOWLABEL {
            return Err(bad(
                "flowlabel",
                format!("{label} is above 20 bits (max 1048575)"),
            ));
        }
        if r.family == IpFamily::V4 {
            return Err(bad(
                "flowlabel",
                "flow labels exist only in IPv6, and the family asked is IPv4",
            ));
        }
    }
    check_title(r.title.as_deref())
}

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
fn check_client(c: &ClientCore, streams: usize) -> Result<(), SpecError> {
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
    use crate::{ClientCore, TcpSpec, UdpSpec};

    fn keys(v: serde_json::Value) -> Vec<String> {
        match v {
            serde_json::Value::Object(m) => m.keys().cloned().collect(),
            _ => Vec::new(),
        }
    }

    #[test]
    fn a_specs_own_keys_sit_among_the_shared_ones_in_their_order() {
        // serde_json keeps a struct's field order only when written as
        // text; read the text's key order back.
        let text = serde_json::to_string(&TcpSpec::default()).unwrap();
        let at = |k: &str| text.find(&format!("\"{k}\"")).unwrap();
        assert!(at("host") < at("direction"));
        assert!(at("direction") < at("window_bytes"));
        assert!(at("bitrate_bps") < at("dscp"));
        assert!(at("title") < at("peer"));
        let text = serde_json::to_string(&UdpSpec::default()).unwrap();
        let at = |k: &str| text.find(&format!("\"{k}\"")).unwrap();
        assert!(at("direction") < at("bitrate_bps"));
        assert!(at("profile") < at("dscp"));
        assert!(at("title") < at("clock_synced"));
        assert!(at("clock_synced") < at("peer"));
    }

    #[test]
    fn a_core_carries_every_shared_field_and_nothing_else() {
        let core = ClientCore {
            host: "2001:db8::1".into(),
            port: 5999,
            parallel: 3,
            title: Some("t".into()),
            cport: Some(40_000),
            ..ClientCore::default()
        };
        let tcp = TcpSpec {
            no_delay: true,
            ..TcpSpec::default()
        }
        .with_core(core.clone());
        assert_eq!(tcp.core(), core);
        assert!(tcp.no_delay, "the test's own field is kept");
        let udp = UdpSpec::default().with_core(core.clone());
        assert_eq!(udp.core(), core);
        // The core's keys are the shared keys of both specs.
        let shared = keys(serde_json::to_value(&core).unwrap());
        for spec in [
            keys(serde_json::to_value(&tcp).unwrap()),
            keys(serde_json::to_value(&udp).unwrap()),
        ] {
            assert!(
                shared.iter().all(|k| spec.contains(k)),
                "{shared:?} {spec:?}"
            );
        }
    }
}

#[cfg(test)]
mod client_rules_tests {
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
