//! Format 1's specs, frozen as sonde 0.1 wrote them inside its results,
//! so that renaming a field of today's specs never makes an old result
//! unreadable. Each converts to the current spec explicitly.

use crate::ping::PingProto;
use crate::{ByteSize, Direction, Dscp, IpFamily, PingSpec, Profile, Rate, TcpSpec, UdpSpec};
use serde::Deserialize;
use std::time::Duration;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TcpSpecV1 {
    host: String,
    port: u16,
    #[serde(with = "crate::serde_secs")]
    time_s: Duration,
    #[serde(with = "crate::serde_secs")]
    interval_s: Duration,
    #[serde(with = "crate::serde_secs")]
    omit_s: Duration,
    parallel: u16,
    direction: Direction,
    window_bytes: Option<ByteSize>,
    congestion: Option<String>,
    mss_bytes: Option<u32>,
    length_bytes: ByteSize,
    bitrate_bps: Option<Rate>,
    dscp: Option<Dscp>,
    flowlabel: Option<u32>,
    family: IpFamily,
    title: Option<String>,
}

impl TcpSpecV1 {
    /// Today's spec; `latency`: whether the result had a latency section
    /// (format 1 had no field for it).
    pub(super) fn upgrade(self, latency: bool) -> TcpSpec {
        TcpSpec {
            host: self.host,
            port: self.port,
            time: self.time_s,
            interval: self.interval_s,
            omit: self.omit_s,
            parallel: self.parallel,
            direction: self.direction,
            window: self.window_bytes,
            congestion: self.congestion,
            mss: self.mss_bytes,
            length: self.length_bytes,
            bitrate: self.bitrate_bps,
            dscp: self.dscp,
            flowlabel: self.flowlabel,
            family: self.family,
            title: self.title,
            latency,
            ..TcpSpec::default()
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct UdpSpecV1 {
    host: String,
    port: u16,
    #[serde(with = "crate::serde_secs")]
    time_s: Duration,
    #[serde(with = "crate::serde_secs")]
    interval_s: Duration,
    #[serde(with = "crate::serde_secs")]
    omit_s: Duration,
    parallel: u16,
    direction: Direction,
    bitrate_bps: Rate,
    length_bytes: u32,
    profile: Profile,
    dscp: Option<Dscp>,
    flowlabel: Option<u32>,
    family: IpFamily,
    title: Option<String>,
    clock_synced: bool,
}

impl UdpSpecV1 {
    pub(super) fn upgrade(self, latency: bool) -> UdpSpec {
        UdpSpec {
            host: self.host,
            port: self.port,
            time: self.time_s,
            interval: self.interval_s,
            omit: self.omit_s,
            parallel: self.parallel,
            direction: self.direction,
            bitrate: self.bitrate_bps,
            length: self.length_bytes,
            profile: self.profile,
            dscp: self.dscp,
            flowlabel: self.flowlabel,
            family: self.family,
            title: self.title,
            clock_synced: self.clock_synced,
            latency,
            ..UdpSpec::default()
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PingSpecV1 {
    host: String,
    proto: PingProto,
    port: u16,
    count: u64,
    #[serde(with = "crate::serde_secs")]
    interval_s: Duration,
    sizes: Vec<u32>,
    dscp: Option<Dscp>,
    family: IpFamily,
    #[serde(with = "crate::serde_secs")]
    report_interval_s: Duration,
    #[serde(with = "crate::serde_secs")]
    timeout_s: Duration,
    clock_synced: bool,
}

impl PingSpecV1 {
    pub(super) fn upgrade(self) -> PingSpec {
        PingSpec {
            host: self.host,
            proto: self.proto,
            port: self.port,
            count: self.count,
            interval: self.interval_s,
            sizes: self.sizes,
            dscp: self.dscp,
            family: self.family,
            report_interval: self.report_interval_s,
            timeout: self.timeout_s,
            clock_synced: self.clock_synced,
            ..PingSpec::default()
        }
    }
}
