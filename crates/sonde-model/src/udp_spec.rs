//! What to measure: the UDP test (`sonde udp`).

use crate::client_spec::{check_client, volume, ClientShape, Volume};
use crate::profile::{Profile, VOIP_INTERVAL, VOIP_PAYLOAD};
use crate::spec::{bad, check_run, RunShape, StreamLayout};
use crate::{ByteSize, Direction, Dscp, IpFamily, PeerKind, Rate, SpecError};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Bytes of sonde's test-packet header; the smallest payload that can
/// carry it (see `sonde_wire::udp_packet`).
pub const UDP_HEADER_LEN: u32 = 24;
/// The largest UDP payload over IPv4 (65535 − 20 − 8).
pub const MAX_UDP_PAYLOAD: u32 = 65_507;
/// Highest rate a stream may ask for.
pub const MAX_UDP_RATE_BPS: u64 = 100_000_000_000;

/// A UDP test: paced streams of numbered, timestamped packets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct UdpSpec {
    #[schemars(length(min = 1, max = 253), regex(pattern = r"^[^\s\x00-\x1f\x7f]+$"))]
    pub host: String,
    pub port: u16,
    #[schemars(with = "f64")]
    #[serde(with = "crate::serde_secs", rename = "time_s")]
    #[schemars(range(max = 86400), extend("exclusiveMinimum" = 0))]
    pub time: Duration,
    #[schemars(with = "f64")]
    #[serde(with = "crate::serde_secs", rename = "interval_s")]
    #[schemars(range(max = 86400), extend("anyOf" = [{"const": 0}, {"minimum": 0.1}]))]
    pub interval: Duration,
    #[schemars(with = "f64")]
    #[serde(with = "crate::serde_secs", rename = "omit_s")]
    #[schemars(range(min = 0, max = 86400))]
    pub omit: Duration,
    #[schemars(range(min = 1, max = 128))]
    pub parallel: u16,
    pub direction: Direction,
    /// Payload rate per stream; 0: as fast as the path takes.
    #[serde(rename = "bitrate_bps")]
    pub bitrate: Rate,
    /// UDP payload bytes per packet.
    #[serde(rename = "length_bytes")]
    #[schemars(range(min = 24, max = 65507))]
    pub length: u32,
    pub profile: Profile,
    #[schemars(range(min = 0, max = 63))]
    pub dscp: Option<Dscp>,
    #[schemars(range(max = 1048575))]
    pub flowlabel: Option<u32>,
    pub family: IpFamily,
    #[schemars(length(max = 200))]
    pub title: Option<String>,
    /// The user vouches that both clocks are synchronised (PTP, GPS…),
    /// so one-way delays are meaningful, not only their variation.
    pub clock_synced: bool,
    /// The protocol the server speaks.
    pub peer: PeerKind,
    /// Ping the server before and through the test (`--latency`).
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

impl Default for UdpSpec {
    fn default() -> Self {
        Self {
            host: String::new(),
            port: 5201,
            time: Duration::from_secs(10),
            interval: Duration::from_secs(1),
            omit: Duration::ZERO,
            parallel: 1,
            direction: Direction::Forward,
            bitrate: Rate::from_bps(1_000_000),
            length: 1400,
            profile: Profile::Cbr,
            dscp: None,
            flowlabel: None,
            family: IpFamily::Any,
            title: None,
            clock_synced: false,
            peer: PeerKind::Auto,
            latency: false,
            bytes: None,
            blocks: None,
            bind: None,
            cport: None,
            connect_timeout: None,
            get_server_output: false,
            token: None,
        }
    }
}

impl UdpSpec {
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
        if !(UDP_HEADER_LEN..=MAX_UDP_PAYLOAD).contains(&self.length) {
            return Err(bad("length_bytes",
                format!(
                    "{} bytes; a UDP payload is {UDP_HEADER_LEN} (sonde's header) to {MAX_UDP_PAYLOAD} bytes",
                    self.length
                ),
            ));
        }
        if self.bitrate.bps() > MAX_UDP_RATE_BPS {
            return Err(bad("bitrate_bps", "at most 100 Gbit/s per stream"));
        }
        if self.bitrate.bps() > 0 && self.bitrate.bps() < 800 {
            return Err(bad(
                "bitrate_bps",
                "at least 800 bit/s (or 0 for as fast as possible)",
            ));
        }
        if self.bitrate.bps() == 0 && self.profile != Profile::Cbr {
            return Err(bad("profile", "profiles other than cbr need a rate"));
        }
        Ok(())
    }

    /// The payload size packets actually carry (VoIP fixes it).
    pub fn payload_len(&self) -> u32 {
        match self.profile {
            Profile::Voip => VOIP_PAYLOAD,
            _ => self.length,
        }
    }

    /// The rate each stream is paced at; `None`: unpaced (flow-controlled).
    /// The one reading of "unpaced" for UDP: the spec spells it `bitrate`
    /// 0, as iperf3's `-b 0` (the format keeps that spelling), TCP
    /// leaves `bitrate` out ([`crate::TcpSpec::pace`]).
    pub fn pace(&self) -> Option<Rate> {
        Some(self.stream_rate()).filter(|r| r.bps() > 0)
    }

    /// The payload rate per stream actually offered (VoIP fixes it).
    pub fn stream_rate(&self) -> Rate {
        match self.profile {
            Profile::Voip => Rate::from_bps(
                u64::from(VOIP_PAYLOAD) * 8 * 1_000_000_000 / VOIP_INTERVAL.as_nanos() as u64,
            ),
            _ => self.bitrate,
        }
    }

    pub fn send_duration(&self) -> Duration {
        self.omit + self.time
    }

    /// The test's volume bound, if it has one (`-n` or `-k`).
    pub fn volume(&self) -> Option<Volume> {
        volume(self.bytes, self.blocks)
    }

    /// The datagrams each direction sends after the warm-up before the
    /// test ends (a byte count rounded up to whole datagrams of the
    /// payload size); `None`: timed only.
    pub fn packet_budget(&self) -> Option<u64> {
        self.volume().map(|v| match v {
            Volume::Bytes(n) => n.div_ceil(u64::from(self.payload_len().max(1))),
            Volume::Blocks(k) => k,
        })
    }
}

impl StreamLayout for UdpSpec {
    fn parallel(&self) -> u16 {
        self.parallel
    }
    fn direction(&self) -> Direction {
        self.direction
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_one_megabit_cbr() {
        let s = UdpSpec {
            host: "::1".into(),
            ..UdpSpec::default()
        };
        s.validate().unwrap();
        assert_eq!(s.stream_rate().bps(), 1_000_000);
    }

    #[test]
    fn voip_fixes_size_and_rate() {
        let s = UdpSpec {
            profile: Profile::Voip,
            ..UdpSpec::default()
        };
        assert_eq!(s.payload_len(), 160);
        assert_eq!(s.stream_rate().bps(), 64_000);
    }

    #[test]
    fn payload_below_the_header_is_refused_by_name() {
        let s = UdpSpec {
            host: "::1".into(),
            length: 16,
            ..UdpSpec::default()
        };
        let e = s.validate().unwrap_err();
        assert_eq!(e.field, "length_bytes");
        assert!(e.reason.contains("24"), "{e}");
    }

    #[test]
    fn json_round_trips() {
        let s = UdpSpec {
            host: "::1".into(),
            profile: "onoff:1s/1s".parse().unwrap(),
            ..UdpSpec::default()
        };
        let j = serde_json::to_value(&s).unwrap();
        assert_eq!(j["profile"], "onoff:1s/1s");
        assert_eq!(serde_json::from_value::<UdpSpec>(j).unwrap(), s);
    }
}
