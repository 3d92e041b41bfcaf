//! What to measure: the TCP throughput test, and the rules every test's
//! spec shares.
//!
//! A [`TcpSpec`] is built from flags, from a campaign file or from a JSON
//! body (every field but `host` may be left out: it takes its default),
//! and is checked once by [`TcpSpec::validate`]; the runner and the server
//! run the same check on what they receive.

use crate::client_core::{declare_client_spec, with_client_core};
use crate::client_spec::Volume;
pub(crate) use crate::spec_error::bad;
pub use crate::spec_error::{IpFamily, SpecError};
use crate::{ByteSize, Rate};
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

with_client_core!(declare_client_spec! {
    /// A TCP throughput test, as `sonde tcp` runs it.
    pub struct TcpSpec {
        after_direction {
            /// Socket send and receive buffer asked for on both ends.
            #[serde(rename = "window_bytes")]
            #[schemars(range(min = 1024, max = 1073741824))]
            pub window: Option<ByteSize> = None,
            /// Congestion control algorithm for the senders.
            #[schemars(regex(pattern = r"^[A-Za-z0-9_-]{1,15}$"))]
            pub congestion: Option<String> = None,
            /// TCP maximum segment size asked for.
            #[serde(rename = "mss_bytes")]
            #[schemars(range(min = 88, max = 65495))]
            pub mss: Option<u32> = None,
            /// Size of each write (and read buffer).
            #[serde(rename = "length_bytes")]
            pub length: ByteSize = ByteSize::from_bytes(DEFAULT_LENGTH),
            /// Pacing rate per stream; `None` sends as fast as TCP allows.
            #[serde(rename = "bitrate_bps")]
            #[schemars(range(min = 1))]
            pub bitrate: Option<Rate> = None,
        }
        after_title {}
        after_connect_timeout {
            /// Set TCP_NODELAY on the data streams (`-N`).
            #[serde(skip_serializing_if = "std::ops::Not::not")]
            pub no_delay: bool = false,
            /// Send without copying the data from user space: each write a
            /// `sendfile` from a memory-backed file, as iperf3's `-Z` (`-Z`).
            #[serde(skip_serializing_if = "std::ops::Not::not")]
            pub zerocopy: bool = false,
        }
    }
});

/// Checks the run's shape every client test shares (server, streams,
/// timing, flow label, title); the one place these rules live.
pub(crate) fn check_run(r: &crate::ClientCore) -> Result<(), SpecError> {
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
        self.check_shared()?;
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
