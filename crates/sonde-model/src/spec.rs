//! What to measure: the TCP throughput test, and the rules every test's
//! spec shares.
//!
//! A [`TcpSpec`] is built from flags, from a campaign file or from a JSON
//! body (every field but `host` may be left out: it takes its default),
//! and is checked once by [`TcpSpec::validate`]; the runner and the server
//! run the same check on what they receive.

use crate::client_spec::{check_client, volume, ClientShape, Volume};
pub(crate) use crate::spec_error::bad;
pub use crate::spec_error::{IpFamily, SpecError};
use crate::{ByteSize, Dscp, Rate};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Which way data flows, seen from the client.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Client sends, server receives (iperf3's default).
    #[default]
    Forward,
    /// Server sends, client receives (`-R`).
    Reverse,
    /// Both at once, on separate streams (`--bidir`).
    Bidir,
}

impl Direction {
    /// The directions whose streams this test opens.
    pub fn flows(self) -> &'static [Direction] {
        match self {
            Direction::Forward => &[Direction::Forward],
            Direction::Reverse => &[Direction::Reverse],
            Direction::Bidir => &[Direction::Forward, Direction::Reverse],
        }
    }
}

/// Which protocol the server speaks.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum PeerKind {
    /// Start in sonde's protocol and switch to iperf3's if the server
    /// turns out to be an iperf3 server.
    #[default]
    Auto,
    /// sonde's protocol only: an iperf3 server is an error.
    Sonde,
    /// iperf3's protocol from the start (`--iperf3`).
    Iperf3,
}

/// How a test's streams are laid out: `parallel` per direction, bidir
/// tests numbering the forward streams first. One definition for every
/// kind of test.
pub trait StreamLayout {
    fn parallel(&self) -> u16;
    fn direction(&self) -> Direction;

    /// Data streams the test opens.
    fn stream_count(&self) -> usize {
        usize::from(self.parallel()) * self.direction().flows().len()
    }

    /// Direction of stream `index` (bidir: the first half forward).
    fn stream_direction(&self, index: usize) -> Direction {
        match self.direction() {
            Direction::Bidir if index >= usize::from(self.parallel()) => Direction::Reverse,
            Direction::Bidir => Direction::Forward,
            d => d,
        }
    }
}

impl StreamLayout for TcpSpec {
    fn parallel(&self) -> u16 {
        self.parallel
    }
    fn direction(&self) -> Direction {
        self.direction
    }
}

/// Limits on a spec that hold for every server, whatever its own limits.
pub const MAX_PARALLEL: u16 = 128;
pub const MAX_LENGTH: u64 = 16 << 20;
pub const MAX_TITLE_CHARS: usize = 200;
pub const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);
pub const MAX_FLOWLABEL: u32 = 0xF_FFFF;
/// Default write size: 256 KiB. iperf3 writes 128 KiB; twice that halves
/// the syscalls per byte, which is what bounds a fast path's sender.
pub const DEFAULT_LENGTH: u64 = 256 * 1024;

/// A TCP throughput test, as `sonde tcp` runs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct TcpSpec {
    /// The server: a host name or an address.
    #[schemars(length(min = 1, max = 253), regex(pattern = r"^[^\s\x00-\x1f\x7f]+$"))]
    pub host: String,
    pub port: u16,
    /// How long data flows after the omitted warm-up.
    #[schemars(with = "f64")]
    #[serde(with = "crate::serde_secs", rename = "time_s")]
    #[schemars(range(max = 86400), extend("exclusiveMinimum" = 0))]
    pub time: Duration,
    /// Reporting interval; zero means no interval reports.
    #[schemars(with = "f64")]
    #[serde(with = "crate::serde_secs", rename = "interval_s")]
    #[schemars(range(max = 86400), extend("anyOf" = [{"const": 0}, {"minimum": 0.1}]))]
    pub interval: Duration,
    /// Warm-up left out of the summary (iperf3's `-O`).
    #[schemars(with = "f64")]
    #[serde(with = "crate::serde_secs", rename = "omit_s")]
    #[schemars(range(min = 0, max = 86400))]
    pub omit: Duration,
    /// Streams per direction.
    #[schemars(range(min = 1, max = 128))]
    pub parallel: u16,
    pub direction: Direction,
    /// Socket send and receive buffer asked for on both ends.
    #[serde(rename = "window_bytes")]
    #[schemars(range(min = 1024, max = 1073741824))]
    pub window: Option<ByteSize>,
    /// Congestion control algorithm for the senders.
    #[schemars(regex(pattern = r"^[A-Za-z0-9_-]{1,15}$"))]
    pub congestion: Option<String>,
    /// TCP maximum segment size asked for.
    #[serde(rename = "mss_bytes")]
    #[schemars(range(min = 88, max = 65495))]
    pub mss: Option<u32>,
    /// Size of each write (and read buffer).
    #[serde(rename = "length_bytes")]
    pub length: ByteSize,
    /// Pacing rate per stream; `None` sends as fast as TCP allows.
    #[serde(rename = "bitrate_bps")]
    #[schemars(range(min = 1))]
    pub bitrate: Option<Rate>,
    #[schemars(range(min = 0, max = 63))]
    pub dscp: Option<Dscp>,
    /// IPv6 flow label for the data streams.
    #[schemars(range(max = 1048575))]
    pub flowlabel: Option<u32>,
    pub family: IpFamily,
    #[schemars(length(max = 200))]
    pub title: Option<String>,
    /// The protocol the server speaks.
    pub peer: PeerKind,
    /// Ping the server before and through the test: RTT idle and under
    /// load (`--latency`).
    pub latency: bool,
    /// End the test after this many bytes in each direction (all its
    /// streams, after the warm-up), or at `time_s` if sooner (`-n`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<ByteSize>,
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
    pub connect_timeout: Option<Duration>,
    /// Set TCP_NODELAY on the data streams (`-N`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub no_delay: bool,
    /// Send without copying the data from user space: each write a
    /// `sendfile` from a memory-backed file, as iperf3's `-Z` (`-Z`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub zerocopy: bool,
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

impl Default for TcpSpec {
    fn default() -> Self {
        Self {
            host: String::new(),
            port: 5201,
            time: Duration::from_secs(10),
            interval: Duration::from_secs(1),
            omit: Duration::ZERO,
            parallel: 1,
            direction: Direction::Forward,
            window: None,
            congestion: None,
            mss: None,
            length: ByteSize::from_bytes(DEFAULT_LENGTH),
            bitrate: None,
            dscp: None,
            flowlabel: None,
            family: IpFamily::Any,
            title: None,
            peer: PeerKind::Auto,
            latency: false,
            bytes: None,
            blocks: None,
            bind: None,
            cport: None,
            connect_timeout: None,
            no_delay: false,
            zerocopy: false,
            get_server_output: false,
            token: None,
        }
    }
}

/// The parts every test shares: streams, timing, addressing, title.
pub(crate) struct RunShape<'a> {
    pub host: &'a str,
    pub parallel: u16,
    pub time: Duration,
    pub omit: Duration,
    pub interval: Duration,
    pub flowlabel: Option<u32>,
    pub family: IpFamily,
    pub title: Option<&'a str>,
}

/// Checks what every test shares; the one place these rules live.
pub(crate) fn check_run(r: &RunShape<'_>) -> Result<(), SpecError> {
    check_host(r.host)?;
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
    check_title(r.title)
}

/// The longest host name (RFC 1035: 253 characters) or address.
pub const MAX_HOST_CHARS: usize = 253;

/// A host name or address: present, not too long, no spaces.
pub(crate) fn check_host(host: &str) -> Result<(), SpecError> {
    if host.is_empty() {
        return Err(bad(
            "host",
            "missing: name the server (a host name or an address)",
        ));
    }
    if host.chars().count() > MAX_HOST_CHARS {
        return Err(bad(
            "host",
            format!("longer than {MAX_HOST_CHARS} characters"),
        ));
    }
    if host.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad(
            "host",
            format!(
                "'{}' has a space or a control character",
                host.escape_debug()
            ),
        ));
    }
    Ok(())
}

/// A title: at most [`MAX_TITLE_CHARS`] characters.
pub(crate) fn check_title(title: Option<&str>) -> Result<(), SpecError> {
    match title {
        Some(t) if t.chars().count() > MAX_TITLE_CHARS => Err(bad(
            "title",
            format!("longer than {MAX_TITLE_CHARS} characters"),
        )),
        _ => Ok(()),
    }
}

impl TcpSpec {
    /// The rate each stream is paced at; `None`: unpaced (as fast as TCP
    /// goes). With [`crate::UdpSpec::pace`], the one reading of
    /// "unpaced".
    pub fn pace(&self) -> Option<Rate> {
        self.bitrate.filter(|r| r.bps() > 0)
    }

    /// Checks every field; the one place a spec is validated.
    pub fn validate(&self) -> Result<(), SpecError> {
        check_run(&RunShape {
            host: &self.host,
            parallel: self.parallel,
            time: self.time,
            omit: self.omit,
            interval: self.interval,
            flowlabel: self.flowlabel,
            family: self.family,
            title: self.title.as_deref(),
        })?;
        check_client(&ClientShape {
            bytes: self.bytes,
            blocks: self.blocks,
            bind: self.bind,
            cport: self.cport,
            streams: self.stream_count(),
            connect_timeout: self.connect_timeout,
            family: self.family,
        })?;
        if self.length.bytes() == 0 || self.length.bytes() > MAX_LENGTH {
            return Err(bad("length_bytes", "must be 1 byte to 16 MiB"));
        }
        if let Some(w) = self.window {
            if w.bytes() < 1024 || w.bytes() > 1 << 30 {
                return Err(bad("window_bytes", "must be 1 KiB to 1 GiB"));
            }
        }
        if let Some(mss) = self.mss {
            if !(88..=65_495).contains(&mss) {
                return Err(bad("mss_bytes", format!("{mss} bytes; use 88 to 65495")));
            }
        }
        if let Some(rate) = self.bitrate {
            if rate.bps() == 0 {
                return Err(bad(
                    "bitrate_bps",
                    "0 means unpaced: leave the rate out instead",
                ));
            }
        }
        if let Some(cc) = &self.congestion {
            if cc.is_empty()
                || cc.len() > 15
                || !cc
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            {
                return Err(bad(
                    "congestion",
                    format!("'{cc}' is not an algorithm name (e.g. cubic, bbr, reno)"),
                ));
            }
        }
        Ok(())
    }

    /// Total time data flows: warm-up plus measured time.
    pub fn send_duration(&self) -> Duration {
        self.omit + self.time
    }

    /// The test's volume bound, if it has one (`-n` or `-k`).
    pub fn volume(&self) -> Option<Volume> {
        volume(self.bytes, self.blocks)
    }

    /// The bytes each direction sends after the warm-up before the test
    /// ends (a block is one write of `length_bytes`); `None`: timed only.
    pub fn byte_budget(&self) -> Option<u64> {
        self.volume().map(|v| match v {
            Volume::Bytes(n) => n,
            Volume::Blocks(k) => k.saturating_mul(self.length.bytes()),
        })
    }
}

#[cfg(test)]
#[path = "spec_tests.rs"]
mod tests;
