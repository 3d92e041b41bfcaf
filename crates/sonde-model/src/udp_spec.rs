//! What to measure: the UDP test (`sonde udp`).

use crate::client_core::{declare_client_spec, with_client_core, Volume};
use crate::profile::{Profile, VOIP_INTERVAL, VOIP_PAYLOAD};
use crate::spec::bad;
use crate::{Rate, SpecError};
use serde::{Deserialize, Serialize};

/// Bytes of sonde's test-packet header; the smallest payload that can
/// carry it (see `sonde_wire::udp_packet`).
pub const UDP_HEADER_LEN: u32 = 24;
/// The largest UDP payload over IPv4 (65535 − 20 − 8).
pub const MAX_UDP_PAYLOAD: u32 = 65_507;
/// Highest rate a stream may ask for.
pub const MAX_UDP_RATE_BPS: u64 = 100_000_000_000;

with_client_core!(declare_client_spec! {
    /// A UDP test: paced streams of numbered, timestamped packets.
    pub struct UdpSpec {
        after_direction {
            /// Payload rate per stream; 0: as fast as the path takes.
            #[serde(rename = "bitrate_bps")]
            pub bitrate: Rate = Rate::from_bps(1_000_000),
            /// UDP payload bytes per packet.
            #[serde(rename = "length_bytes")]
            #[schemars(range(min = 24, max = 65507))]
            pub length: u32 = 1400,
            pub profile: Profile = Profile::Cbr,
        }
        after_title {
            /// The user vouches that both clocks are synchronised (PTP, GPS…),
            /// so one-way delays are meaningful, not only their variation.
            pub clock_synced: bool = false,
        }
        after_connect_timeout {}
    }
});

impl UdpSpec {
    pub fn validate(&self) -> Result<(), SpecError> {
        self.check_shared()?;
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
