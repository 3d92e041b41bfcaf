//! [`TestSpec`]: every test sonde runs, in one request type.
//!
//! A flag, a line of a campaign file and a JSON body are three spellings
//! of one spec: `{"test": "tcp", "host": "::1", "time_s": 30}` in JSON,
//! `test = "tcp"` / `host = "::1"` / `time_s = "30s"` in TOML. Every field
//! but `test` and `host` may be left out and takes its default; an
//! unknown field is refused by name. [`TestSpec::validate`] is the one
//! place the rules live: the runner and the server call it themselves.

use crate::{HttpSpec, PingSpec, SpecError, TcpSpec, TraceSpec, UdpSpec};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Which test a spec or a result is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TestKind {
    Tcp,
    Udp,
    Ping,
    Http,
    Trace,
}

impl TestKind {
    /// Every test's name, as flags, files and filters spell it.
    pub const NAMES: [&'static str; 5] = ["tcp", "udp", "ping", "http", "trace"];

    pub fn name(self) -> &'static str {
        match self {
            TestKind::Tcp => "tcp",
            TestKind::Udp => "udp",
            TestKind::Ping => "ping",
            TestKind::Http => "http",
            TestKind::Trace => "trace",
        }
    }
}

impl fmt::Display for TestKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Any test sonde runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "test", rename_all = "lowercase")]
pub enum TestSpec {
    Tcp(TcpSpec),
    Udp(UdpSpec),
    Ping(PingSpec),
    Http(HttpSpec),
    Trace(TraceSpec),
}

impl TestSpec {
    /// Checks every field of the test; the one place the rules live.
    pub fn validate(&self) -> Result<(), SpecError> {
        match self {
            TestSpec::Tcp(s) => s.validate(),
            TestSpec::Udp(s) => s.validate(),
            TestSpec::Ping(s) => s.validate(),
            TestSpec::Http(s) => s.validate(),
            TestSpec::Trace(s) => s.validate(),
        }
    }

    pub fn kind(&self) -> TestKind {
        match self {
            TestSpec::Tcp(_) => TestKind::Tcp,
            TestSpec::Udp(_) => TestKind::Udp,
            TestSpec::Ping(_) => TestKind::Ping,
            TestSpec::Http(_) => TestKind::Http,
            TestSpec::Trace(_) => TestKind::Trace,
        }
    }

    /// The host the test measures the path to.
    pub fn host(&self) -> &str {
        match self {
            TestSpec::Tcp(s) => &s.host,
            TestSpec::Udp(s) => &s.host,
            TestSpec::Ping(s) => &s.host,
            TestSpec::Http(s) => &s.host,
            TestSpec::Trace(s) => &s.host,
        }
    }

    pub fn title(&self) -> Option<&str> {
        match self {
            TestSpec::Tcp(s) => s.title.as_deref(),
            TestSpec::Udp(s) => s.title.as_deref(),
            TestSpec::Ping(s) => s.title.as_deref(),
            TestSpec::Http(s) => s.title.as_deref(),
            TestSpec::Trace(s) => s.title.as_deref(),
        }
    }

    /// The address family the test asks for.
    pub fn family(&self) -> crate::IpFamily {
        match self {
            TestSpec::Tcp(s) => s.family,
            TestSpec::Udp(s) => s.family,
            TestSpec::Ping(s) => s.family,
            TestSpec::Http(s) => s.family,
            TestSpec::Trace(s) => s.family,
        }
    }

    /// The same test over `family` (a method running a step over IPv6
    /// and IPv4 in turn).
    pub fn with_family(&self, family: crate::IpFamily) -> TestSpec {
        let mut spec = self.clone();
        match &mut spec {
            TestSpec::Tcp(s) => s.family = family,
            TestSpec::Udp(s) => s.family = family,
            TestSpec::Ping(s) => s.family = family,
            TestSpec::Http(s) => s.family = family,
            TestSpec::Trace(s) => s.family = family,
        }
        spec
    }

    /// Bytes per UDP payload or TCP write; a ping's payload when it sends
    /// one size. What a sweep over sizes varies, and what `compare --by
    /// payload` groups by.
    pub fn length(&self) -> Option<u32> {
        match self {
            TestSpec::Tcp(s) => u32::try_from(s.length.bytes()).ok(),
            TestSpec::Udp(s) => Some(s.payload_len()),
            TestSpec::Ping(s) => match s.sizes.as_slice() {
                [one] => Some(*one),
                _ => None,
            },
            TestSpec::Http(_) | TestSpec::Trace(_) => None,
        }
    }

    /// The rate offered per stream: UDP's `-b`, a paced TCP test's.
    pub fn offered_rate(&self) -> Option<crate::Rate> {
        match self {
            TestSpec::Tcp(s) => s.bitrate,
            TestSpec::Udp(s) => Some(s.stream_rate()),
            TestSpec::Ping(_) | TestSpec::Http(_) | TestSpec::Trace(_) => None,
        }
    }

    /// The DSCP the test's packets carry, when it asks for one.
    pub fn dscp(&self) -> Option<crate::Dscp> {
        match self {
            TestSpec::Tcp(s) => s.dscp,
            TestSpec::Udp(s) => s.dscp,
            TestSpec::Ping(s) => s.dscp,
            TestSpec::Trace(s) => s.dscp,
            TestSpec::Http(_) => None,
        }
    }

    /// Whether RTT is measured under the test's load (`--latency`).
    pub fn latency(&self) -> bool {
        match self {
            TestSpec::Tcp(s) => s.latency,
            TestSpec::Udp(s) => s.latency,
            TestSpec::Ping(_) | TestSpec::Http(_) | TestSpec::Trace(_) => false,
        }
    }
}

impl From<TcpSpec> for TestSpec {
    fn from(s: TcpSpec) -> Self {
        TestSpec::Tcp(s)
    }
}

impl From<UdpSpec> for TestSpec {
    fn from(s: UdpSpec) -> Self {
        TestSpec::Udp(s)
    }
}

impl From<HttpSpec> for TestSpec {
    fn from(s: HttpSpec) -> Self {
        TestSpec::Http(s)
    }
}

impl From<TraceSpec> for TestSpec {
    fn from(s: TraceSpec) -> Self {
        TestSpec::Trace(s)
    }
}

impl From<PingSpec> for TestSpec {
    fn from(s: PingSpec) -> Self {
        TestSpec::Ping(s)
    }
}

/// Setters a method uses to vary one field of a tcp or udp test while the
/// rest is held (a sweep's steps). A ping has none of these fields: it is
/// returned unchanged.
impl TestSpec {
    /// The same test in `direction`.
    pub fn with_direction(&self, direction: crate::Direction) -> TestSpec {
        let mut spec = self.clone();
        match &mut spec {
            TestSpec::Tcp(s) => s.direction = direction,
            TestSpec::Udp(s) => s.direction = direction,
            TestSpec::Ping(_) | TestSpec::Http(_) | TestSpec::Trace(_) => {}
        }
        spec
    }

    /// The same test at `rate` per stream (tcp: paced at it).
    pub fn with_rate(&self, rate: crate::Rate) -> TestSpec {
        let mut spec = self.clone();
        match &mut spec {
            TestSpec::Tcp(s) => s.bitrate = Some(rate),
            TestSpec::Udp(s) => s.bitrate = rate,
            TestSpec::Ping(_) | TestSpec::Http(_) | TestSpec::Trace(_) => {}
        }
        spec
    }

    /// The same test with `bytes` per UDP payload, or per TCP write and
    /// segment: a TCP test that asks no MSS of its own gets `bytes` as its
    /// MSS (at least 88, TCP's least), so that its packets carry that
    /// payload, as the packet-size axis of seeds 001 and 002 means.
    pub fn with_length(&self, bytes: u32) -> TestSpec {
        let mut spec = self.clone();
        match &mut spec {
            TestSpec::Tcp(s) => {
                s.length = crate::ByteSize::from_bytes(u64::from(bytes));
                s.mss = s.mss.or(Some(bytes.clamp(88, 65_495)));
            }
            TestSpec::Udp(s) => s.length = bytes,
            TestSpec::Ping(_) | TestSpec::Http(_) | TestSpec::Trace(_) => {}
        }
        spec
    }

    /// The same test over `streams` parallel streams.
    pub fn with_parallel(&self, streams: u16) -> TestSpec {
        let mut spec = self.clone();
        match &mut spec {
            TestSpec::Tcp(s) => s.parallel = streams,
            TestSpec::Udp(s) => s.parallel = streams,
            TestSpec::Ping(_) | TestSpec::Http(_) | TestSpec::Trace(_) => {}
        }
        spec
    }

    /// The same TCP test with socket buffers of `window` (udp and ping:
    /// unchanged).
    pub fn with_window(&self, window: crate::ByteSize) -> TestSpec {
        let mut spec = self.clone();
        if let TestSpec::Tcp(s) = &mut spec {
            s.window = Some(window);
        }
        spec
    }

    /// The same test lasting `time` per run.
    pub fn with_time(&self, time: std::time::Duration) -> TestSpec {
        let mut spec = self.clone();
        match &mut spec {
            TestSpec::Tcp(s) => s.time = time,
            TestSpec::Udp(s) => s.time = time,
            TestSpec::Ping(_) | TestSpec::Http(_) | TestSpec::Trace(_) => {}
        }
        spec
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Direction, PeerKind, PingProto, Rate};
    use std::time::Duration;

    #[test]
    fn json_and_toml_spell_the_same_spec() {
        let json: TestSpec = serde_json::from_str(
            r#"{"test": "udp", "host": "2001:db8::1", "time_s": 300, "bitrate_bps": "1M",
                "direction": "reverse", "latency": true, "peer": "iperf3"}"#,
        )
        .unwrap();
        let toml: TestSpec = toml::from_str(
            "test = \"udp\"\nhost = \"2001:db8::1\"\ntime_s = \"5m\"\nbitrate_bps = \"1M\"\n\
             direction = \"reverse\"\nlatency = true\npeer = \"iperf3\"\n",
        )
        .unwrap();
        assert_eq!(json, toml);
        let TestSpec::Udp(u) = &json else {
            panic!("not udp: {json:?}")
        };
        assert_eq!(u.time, Duration::from_secs(300));
        assert_eq!(u.bitrate, Rate::from_bps(1_000_000));
        assert_eq!(u.direction, Direction::Reverse);
        assert_eq!(u.peer, PeerKind::Iperf3);
        json.validate().unwrap();
        let back: TestSpec = serde_json::from_value(serde_json::to_value(&json).unwrap()).unwrap();
        assert_eq!(back, json);
    }

    #[test]
    fn a_tcp_length_sets_the_segment_too_unless_an_mss_is_asked() {
        let tcp: TestSpec = toml::from_str("test = \"tcp\"\nhost = \"h\"\n").unwrap();
        let mss = |s: &TestSpec| match s {
            TestSpec::Tcp(t) => (t.length.bytes(), t.mss),
            _ => (0, None),
        };
        assert_eq!(mss(&tcp.with_length(512)), (512, Some(512)));
        assert_eq!(mss(&tcp.with_length(64)), (64, Some(88)), "TCP's least MSS");
        let asked: TestSpec =
            toml::from_str("test = \"tcp\"\nhost = \"h\"\nmss_bytes = 1000\n").unwrap();
        assert_eq!(mss(&asked.with_length(512)), (512, Some(1000)));
        tcp.with_length(64).validate().unwrap();
    }

    #[test]
    fn unknown_fields_and_tests_are_refused_by_name() {
        let e = serde_json::from_str::<TestSpec>(r#"{"test": "tcp", "host": "h", "paralel": 2}"#)
            .unwrap_err();
        assert!(e.to_string().contains("paralel"), "{e}");
        let e = serde_json::from_str::<TestSpec>(r#"{"test": "dns", "host": "h"}"#).unwrap_err();
        assert!(e.to_string().contains("dns"), "{e}");
        let e = serde_json::from_str::<TestSpec>(r#"{"host": "h"}"#).unwrap_err();
        assert!(e.to_string().contains("test"), "{e}");
    }

    #[test]
    fn a_ping_spec_is_a_test_spec() {
        let s: TestSpec =
            toml::from_str("test = \"ping\"\nhost = \"::1\"\nproto = \"udp\"\nsizes = [44, 512]\n")
                .unwrap();
        let TestSpec::Ping(p) = &s else {
            panic!("not ping")
        };
        assert_eq!(p.proto, PingProto::Udp);
        assert_eq!(s.kind(), TestKind::Ping);
        s.validate().unwrap();
        let bad: TestSpec =
            toml::from_str("test = \"ping\"\nhost = \"::1\"\nsizes = [70000]\n").unwrap();
        assert_eq!(bad.validate().unwrap_err().field, "sizes");
    }
}
