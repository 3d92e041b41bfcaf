//! `sonde ping`: what to send ([`PingSpec`]) and what comes back, one
//! answer at a time ([`PingReply`]) and per series ([`OneWayDelays`]).

use crate::rtt::RttStats;
use crate::spec::{bad, check_host, check_title, MAX_DURATION};
use crate::{Dscp, IpFamily, SpecError};
use serde::{Deserialize, Serialize};
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

/// How echo requests travel.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum PingProto {
    /// ICMP or ICMPv6 echo.
    #[default]
    Icmp,
    /// STAMP (RFC 8762) test packets to a reflector.
    Udp,
}

/// Smallest STAMP packet: the unauthenticated test packet (RFC 8762 §4.2.1).
pub const STAMP_MIN_BYTES: u32 = 44;
/// Smallest authenticated STAMP packet (RFC 8762 §4.2.2).
pub const STAMP_AUTH_MIN_BYTES: u32 = 112;
/// Largest request sonde sends.
pub const MAX_PING_BYTES: u32 = 65_000;
/// Shortest time between requests.
pub const MIN_PING_INTERVAL: Duration = Duration::from_millis(1);

/// A ping test: one series of requests per size in `sizes`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct PingSpec {
    #[schemars(length(min = 1, max = 253), regex(pattern = r"^[^\s\x00-\x1f\x7f]+$"))]
    pub host: String,
    pub proto: PingProto,
    /// The reflector's UDP port (`proto = udp`).
    pub port: u16,
    /// Requests per size; 0: until interrupted.
    pub count: u64,
    #[schemars(with = "f64")]
    #[serde(with = "crate::serde_secs", rename = "interval_s")]
    #[schemars(range(min = 0.001))]
    pub interval: Duration,
    /// Payload sizes in bytes, one series each, in this order: ICMP data
    /// after the 8-byte echo header, or the whole STAMP packet. Empty:
    /// one series of the protocol's default size ([`PingSpec::default_size`]).
    pub sizes: Vec<u32>,
    #[schemars(range(min = 0, max = 63))]
    pub dscp: Option<Dscp>,
    pub family: IpFamily,
    /// Length of the reporting intervals, by send time.
    #[schemars(with = "f64")]
    #[serde(with = "crate::serde_secs", rename = "report_interval_s")]
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub report_interval: Duration,
    /// How long to wait for an answer after the last request.
    #[schemars(with = "f64")]
    #[serde(with = "crate::serde_secs", rename = "timeout_s")]
    #[schemars(range(min = 0, max = 86400))]
    pub timeout: Duration,
    /// Both hosts' clocks are synchronised: one-way delays are meaningful.
    pub clock_synced: bool,
    /// File with the reflector's key in hex: authenticated STAMP
    /// (`proto = udp`). Read when the test runs; the key is never stored.
    pub key_file: Option<PathBuf>,
    /// The name of a key the agent's operator configured (`[keys]`):
    /// authenticated STAMP for a request from the API, a campaign or a
    /// mesh share, which may not name a file. The agent reads the key;
    /// the request never sees it or its path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[A-Za-z0-9._-]{1,64}$"))]
    pub key: Option<String>,
    /// STAMP only: each request carries RFC 8972's Class of Service TLV,
    /// asking for replies marked with the requests' `dscp` (CS0 without
    /// one); the reflector says the DSCP and ECN each request arrived
    /// with, and the replies' own DSCP is read as they come back, so a
    /// remark on either way shows. The reflector must know RFC 8972.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cos: bool,
    #[schemars(length(max = 200))]
    pub title: Option<String>,
    /// TTL (IPv4) or hop limit (IPv6) of the requests, 1 to 255 (iputils
    /// `-t`); `None`: the system's default.
    #[schemars(range(min = 1, max = 255))]
    pub ttl: Option<u16>,
    /// The run ends this long after it began, whatever the count (iputils
    /// `-w`): with a count, a series sends until that many requests are
    /// answered, not just sent.
    #[schemars(with = "Option<f64>")]
    #[serde(with = "crate::serde_secs::option", rename = "deadline_s")]
    #[schemars(range(max = 86400), extend("exclusiveMinimum" = 0))]
    pub deadline: Option<Duration>,
    /// Where requests leave from (iputils `-I`): an interface name (the
    /// socket is bound to that device) or a source address.
    #[schemars(length(min = 1))]
    pub interface: Option<String>,
    /// Live answer lines start with the Unix time they came in at, as
    /// `[1700000000.123456]` (iputils `-D`); the text output only.
    pub timestamps: bool,
}

/// Longest interface name Linux takes (IFNAMSIZ less its NUL).
pub const MAX_INTERFACE_NAME: usize = 15;

/// Where ping requests leave from: a source address or an interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PingSource<'a> {
    Address(IpAddr),
    Interface(&'a str),
}

impl Default for PingSpec {
    fn default() -> Self {
        Self {
            host: String::new(),
            proto: PingProto::Icmp,
            port: 862,
            count: 10,
            interval: Duration::from_secs(1),
            sizes: Vec::new(),
            dscp: None,
            family: IpFamily::Any,
            report_interval: Duration::from_secs(10),
            timeout: Duration::from_secs(2),
            clock_synced: false,
            key_file: None,
            key: None,
            cos: false,
            title: None,
            ttl: None,
            deadline: None,
            interface: None,
            timestamps: false,
        }
    }
}

impl PingSpec {
    /// The size a request has when none is asked for: iputils' 56 data
    /// bytes, or the smallest STAMP packet.
    pub fn default_size(proto: PingProto, authenticated: bool) -> u32 {
        match (proto, authenticated) {
            (PingProto::Icmp, _) => 56,
            (PingProto::Udp, false) => STAMP_MIN_BYTES,
            (PingProto::Udp, true) => STAMP_AUTH_MIN_BYTES,
        }
    }

    /// The sizes the series have: `sizes`, or the protocol's default
    /// (STAMP's smallest packet, with room for the Class of Service TLV
    /// when it is asked for).
    pub fn series_sizes(&self) -> Vec<u32> {
        if !self.sizes.is_empty() {
            return self.sizes.clone();
        }
        match self.proto {
            PingProto::Icmp => vec![Self::default_size(PingProto::Icmp, false)],
            PingProto::Udp => vec![self.min_size()],
        }
    }

    /// The smallest request this spec may send.
    pub fn min_size(&self) -> u32 {
        match self.proto {
            PingProto::Icmp => 0,
            PingProto::Udp => {
                Self::default_size(PingProto::Udp, self.authenticated())
                    + if self.cos { COS_TLV_BYTES } else { 0 }
            }
        }
    }

    /// Where requests leave from (`interface`), read as an address if it
    /// is one and as an interface name otherwise.
    pub fn source(&self) -> Option<PingSource<'_>> {
        let i = self.interface.as_deref()?;
        Some(match i.parse::<IpAddr>() {
            Ok(a) => PingSource::Address(a),
            Err(_) => PingSource::Interface(i),
        })
    }

    /// Whether the requests are authenticated STAMP: a key by file or by
    /// name.
    pub fn authenticated(&self) -> bool {
        self.key_file.is_some() || self.key.is_some()
    }

    /// Checks every field; the one place a ping spec is validated.
    pub fn validate(&self) -> Result<(), SpecError> {
        check_host(&self.host)?;
        check_title(self.title.as_deref())?;
        if self.interval < MIN_PING_INTERVAL {
            return Err(bad("interval_s", "at least 1ms between requests"));
        }
        if self.key_file.is_some() && self.proto != PingProto::Udp {
            return Err(bad("key_file", "a key is for STAMP (proto udp)"));
        }
        if self.cos && self.proto != PingProto::Udp {
            return Err(bad(
                "cos",
                "the Class of Service TLV is STAMP's (proto udp)",
            ));
        }
        if let Some(k) = &self.key {
            if self.proto != PingProto::Udp {
                return Err(bad("key", "a key is for STAMP (proto udp)"));
            }
            if self.key_file.is_some() {
                return Err(bad("key", "give a key by name or by file, not both"));
            }
            if k.is_empty()
                || k.len() > 64
                || !k
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            {
                return Err(bad(
                    "key",
                    "a key's name: up to 64 letters, digits, '-', '_' and '.'",
                ));
            }
        }
        let min = self.min_size();
        if let Some(s) = self
            .sizes
            .iter()
            .find(|s| !(min..=MAX_PING_BYTES).contains(*s))
        {
            return Err(bad(
                "sizes",
                format!("{s} bytes: use {min} to {MAX_PING_BYTES}"),
            ));
        }
        if self.report_interval.is_zero() {
            return Err(bad("report_interval_s", "must be more than 0"));
        }
        if self.timeout > MAX_DURATION {
            return Err(bad("timeout_s", "must be at most 24h"));
        }
        if let Some(t) = self.ttl.filter(|t| !(1..=255).contains(t)) {
            return Err(bad("ttl", format!("{t}: use 1 to 255")));
        }
        if self
            .deadline
            .is_some_and(|d| d.is_zero() || d > MAX_DURATION)
        {
            return Err(bad("deadline_s", "must be more than 0 and at most 24h"));
        }
        self.check_source()
    }

    fn check_source(&self) -> Result<(), SpecError> {
        match self.source() {
            None => Ok(()),
            Some(PingSource::Address(a)) => match (self.family, a) {
                (IpFamily::V4, IpAddr::V6(_)) | (IpFamily::V6, IpAddr::V4(_)) => Err(bad(
                    "interface",
                    format!("{a} is not of the address family asked for"),
                )),
                _ => Ok(()),
            },
            Some(PingSource::Interface(name)) => {
                let fits = !name.is_empty()
                    && name.len() <= MAX_INTERFACE_NAME
                    && !name.contains(['/', ':'])
                    && !name.chars().any(char::is_whitespace);
                if fits {
                    Ok(())
                } else {
                    Err(bad(
                        "interface",
                        format!(
                            "'{name}' is neither an address nor an interface name \
                             (1 to {MAX_INTERFACE_NAME} characters, no '/', ':' or spaces)"
                        ),
                    ))
                }
            }
        }
    }
}

/// Bytes the Class of Service TLV adds to a STAMP request (RFC 8972
/// §4.4: a 4-byte TLV header and a 4-byte value).
pub const COS_TLV_BYTES: u32 = 8;

/// What the Class of Service TLV told over one series (`cos`): the DSCP
/// the replies were asked to carry, and how many requests arrived at the
/// reflector, and replies back here, with each DSCP.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ClassOfServiceSeen {
    /// The requests' DSCP, which the replies were asked to carry too.
    pub sent: Dscp,
    /// Requests per DSCP they arrived at the reflector with.
    pub at_reflector: crate::udp_report::DscpCounts,
    /// Replies per DSCP they arrived back with.
    pub returned: crate::udp_report::DscpCounts,
    /// Replies whose TLV the reflector flagged as not understood (it
    /// knows RFC 8972 but not this TLV) or that came back without it. A
    /// reflector of RFC 8762 alone echoes the TLV unchanged: its replies
    /// read as arrived with CS0 (docs/ping.md).
    pub not_understood: u64,
}

/// How many times of a series each clock gave: the network card's
/// (`hardware`), the kernel's as the packet passed the device
/// (`kernel`), or sonde's own, read just before a send or after a
/// receive (`user`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct StampCounts {
    pub hardware: u64,
    pub kernel: u64,
    pub user: u64,
}

impl StampCounts {
    /// Counts one time of the given kind.
    pub fn add(&mut self, kind: StampKind) {
        match kind {
            StampKind::Hardware => self.hardware += 1,
            StampKind::Kernel => self.kernel += 1,
            StampKind::User => self.user += 1,
        }
    }
}

/// Which clock took one time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StampKind {
    Hardware,
    Kernel,
    User,
}

/// The timestamps a series' round trips were measured with: a round
/// trip is taken between two times of one kind (hardware with hardware,
/// else the kernel's where both ends have one), so `send` counts the
/// requests and `receive` the answers by the kind each round trip used.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct TimestampsUsed {
    pub send: StampCounts,
    pub receive: StampCounts,
}

/// One answer.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PingReply {
    /// The request's number, from 1 as iputils counts (`icmp_seq`).
    pub seq: u64,
    pub size: u32,
    /// Sent this long after the test began.
    pub sent_s: f64,
    pub rtt_ms: f64,
    pub ttl: Option<u8>,
    pub duplicate: bool,
    /// STAMP only: sender → reflector, reflector → sender (meaningful
    /// with synchronised clocks) and the time the reflector held it.
    pub forward_ms: Option<f64>,
    pub backward_ms: Option<f64>,
    pub dwell_ms: Option<f64>,
    /// When the answer came in, seconds since the Unix epoch (the
    /// kernel's receive time where it gives one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received_unix_s: Option<f64>,
    /// With `cos`: the DSCP and ECN the request arrived at the reflector
    /// with, as its Class of Service TLV says, and the DSCP the reply
    /// arrived back with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dscp_at_reflector: Option<Dscp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn_at_reflector: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dscp_returned: Option<Dscp>,
}

/// One-way delays of a STAMP series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OneWayDelays {
    pub clock_synced: bool,
    pub forward_ms: Option<RttStats>,
    pub backward_ms: Option<RttStats>,
    pub dwell_ms: Option<RttStats>,
}

#[cfg(test)]
#[path = "ping_tests.rs"]
mod tests;
