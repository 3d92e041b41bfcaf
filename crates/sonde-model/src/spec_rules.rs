//! What every test's spec is made of, below any one test: the
//! direction data flows, the protocol the server speaks, how streams are
//! laid out, the limits every server holds a spec to, and the checks of a
//! host and a title. `spec.rs` (TCP), `udp_spec.rs`, `ping.rs`,
//! `trace.rs`, `http_spec.rs` and the shared client fields
//! (`client_core.rs`) read them.

use crate::spec_error::{bad, SpecError};
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
