//! What to measure: the TCP throughput test. What every test's spec is
//! made of is `spec_rules.rs` (re-exported here), the fields tcp and udp
//! share `client_core.rs`.
//!
//! A [`TcpSpec`] is built from flags, from a campaign file or from a JSON
//! body (every field but `host` may be left out: it takes its default),
//! and is checked once by [`TcpSpec::validate`]; the runner and the server
//! run the same check on what they receive.

use crate::client_core::{declare_client_spec, with_client_core, Volume};
pub(crate) use crate::spec_error::bad;
pub use crate::spec_error::{IpFamily, SpecError};
pub(crate) use crate::spec_rules::{check_host, check_title};
pub use crate::spec_rules::{
    Direction, PeerKind, StreamLayout, MAX_DURATION, MAX_FLOWLABEL, MAX_HOST_CHARS, MAX_LENGTH,
    MAX_PARALLEL, MAX_TITLE_CHARS, MIN_INTERVAL,
};
use crate::{ByteSize, Rate};
use serde::{Deserialize, Serialize};

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
