//! What one end of a UDP test measured: the sender counts what it sent,
//! the receiver everything else. [`crate::udp_assemble`] joins them.

use crate::schema::leaf_schema;
use crate::{Dscp, HostEnv, SampleWindow, SocketInForce, StreamRole};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Packet counts per DSCP value. Written in JSON as an object keyed by
/// the DSCP number (`{"46": 1000}`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DscpCounts(pub BTreeMap<u8, u64>);

impl DscpCounts {
    pub fn add(&mut self, dscp: u8, n: u64) {
        *self.0.entry(dscp).or_default() += n;
    }
    pub fn get(&self, dscp: u8) -> u64 {
        self.0.get(&dscp).copied().unwrap_or(0)
    }
    pub fn iter(&self) -> impl Iterator<Item = (u8, u64)> + '_ {
        self.0.iter().map(|(k, v)| (*k, *v))
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

leaf_schema!(DscpCounts, "DscpCounts", {
    "type": "object",
    "description": "Packet counts per DSCP value, keyed by the DSCP number (`{\"46\": 1000}`): a decimal string without leading zeros, 0–63.",
    "propertyNames": { "pattern": "^([0-9]|[1-5][0-9]|6[0-3])$" },
    "additionalProperties": { "type": "integer", "minimum": 0 }
});

impl Serialize for DscpCounts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k.to_string(), v)))
    }
}

impl<'de> Deserialize<'de> for DscpCounts {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = BTreeMap::<String, u64>::deserialize(d)?;
        raw.into_iter()
            .map(|(k, v)| {
                k.parse::<u8>()
                    .ok()
                    .filter(|d| *d < 64)
                    .map(|d| (d, v))
                    .ok_or_else(|| serde::de::Error::custom(format!("'{k}' is not a DSCP number")))
            })
            .collect::<Result<_, _>>()
            .map(DscpCounts)
    }
}

/// Percentiles of a distribution, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
pub struct Quantiles {
    #[schemars(range(min = 0))]
    pub p50_ms: f64,
    #[schemars(range(min = 0))]
    pub p90_ms: f64,
    #[schemars(range(min = 0))]
    pub p99_ms: f64,
    #[schemars(range(min = 0))]
    pub max_ms: f64,
}

/// One-way delay (RFC 7679): receive time minus the send time stamped in
/// the packet, both from the hosts' realtime clocks. Only meaningful when
/// `clock_synced`; `pdv_*` (delay minus its minimum, RFC 5481 PDV) is
/// meaningful either way.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
pub struct OneWayDelay {
    pub clock_synced: bool,
    pub min_ms: f64,
    pub avg_ms: f64,
    pub max_ms: f64,
    pub p99_ms: f64,
    #[schemars(range(min = 0))]
    pub pdv_p50_ms: f64,
    #[schemars(range(min = 0))]
    pub pdv_p99_ms: f64,
}

/// Packets sent with one DSCP that arrived with another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Remark {
    pub sent: Dscp,
    pub received: Dscp,
    pub packets: u64,
}

/// What a sender counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
pub struct SenderTally {
    pub packets: u64,
    /// Payload bytes.
    pub bytes: u64,
    /// Packets per DSCP value set (empty: not counted).
    pub dscp_sent: DscpCounts,
    /// Seconds over which they were sent.
    pub secs: f64,
}

/// Packets that arrived with one IPv6 flow label; `label: None` counts
/// those with labels past the most a receiver tells apart
/// ([`FlowLabelCount::MOST`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FlowLabelCount {
    #[schemars(range(max = 1048575))]
    pub label: Option<u32>,
    pub packets: u64,
}

impl FlowLabelCount {
    /// Distinct labels counted one by one.
    pub const MOST: usize = 16;

    /// Adds `n` packets of `label` to `counts`, lumping labels past
    /// [`Self::MOST`] together.
    pub fn add(counts: &mut Vec<FlowLabelCount>, label: Option<u32>, n: u64) {
        let label = match label {
            Some(l) if counts.iter().any(|c| c.label == Some(l)) => Some(l),
            Some(l) if counts.iter().filter(|c| c.label.is_some()).count() < Self::MOST => Some(l),
            _ => None,
        };
        match counts.iter_mut().find(|c| c.label == label) {
            Some(c) => c.packets += n,
            None => counts.push(FlowLabelCount { label, packets: n }),
        }
    }
}

/// What a receiver counted and estimated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
pub struct ReceiverTally {
    /// Distinct packets received.
    pub packets: u64,
    /// Payload bytes of distinct packets.
    pub bytes: u64,
    /// Extra copies received; `None` where the receiver does not count
    /// them (an iperf3 peer).
    pub duplicates: Option<u64>,
    /// Packets that arrived late (RFC 4737); `None` where not counted.
    pub reordered: Option<u64>,
    /// The longest run of consecutive sequence numbers not received, up
    /// to the sender's end marker (the whole stream only; `None` where
    /// not counted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_burst_max: Option<u64>,
    /// Packets the sequence numbers say should have arrived (the advance
    /// of RFC 4737's NextExp): the loss base within an interval.
    pub expected: u64,
    /// RFC 3550 interarrival jitter at the end (ms).
    pub jitter_ms: f64,
    pub ipdv: Option<Quantiles>,
    pub delay: Option<OneWayDelay>,
    /// Packets per DSCP value seen on arrival (empty: not counted).
    pub dscp_received: DscpCounts,
    /// Distinct packets received per DSCP the sender set (from the header).
    pub received_by_sent_dscp: DscpCounts,
    pub remarks: Vec<Remark>,
    /// The `video` profile: frames sent and decodable, by kind, over the
    /// whole stream (empty for other profiles).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frames: Vec<crate::video::FrameCount>,
    /// IPv6 packets per flow label they arrived with (empty: none
    /// counted, IPv4 or a peer that does not count them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flow_labels: Vec<FlowLabelCount>,
    /// Seconds from the first to the last packet received.
    pub secs: f64,
}

/// One end's count for one stream (or a direction's sum).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UdpTally {
    Sent(SenderTally),
    Received(ReceiverTally),
}

/// One UDP stream as one end saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UdpStreamSide {
    pub stream: u16,
    pub role: StreamRole,
    pub socket: SocketInForce,
    /// After the warm-up.
    pub measured: UdpTally,
    pub windows: Vec<UdpTally>,
}

/// Everything one end measured in a UDP test. `received_sum` merges the
/// streams this end received (their distributions cannot be added from
/// percentiles afterwards).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UdpSideReport {
    pub env: HostEnv,
    pub windows: Vec<SampleWindow>,
    pub streams: Vec<UdpStreamSide>,
    pub received_sum: Option<ReceivedSum>,
    #[serde(default)]
    pub stopped_early: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReceivedSum {
    pub measured: ReceiverTally,
    pub windows: Vec<ReceiverTally>,
}

#[cfg(test)]
mod flow_label_tests {
    use super::FlowLabelCount;

    #[test]
    fn labels_past_the_most_counted_are_lumped_together() {
        let mut c = Vec::new();
        for l in 0..20u32 {
            FlowLabelCount::add(&mut c, Some(l), 2);
        }
        FlowLabelCount::add(&mut c, Some(3), 1);
        FlowLabelCount::add(&mut c, Some(99), 1);
        assert_eq!(c.len(), FlowLabelCount::MOST + 1);
        assert_eq!(c.iter().find(|x| x.label == Some(3)).unwrap().packets, 3);
        assert_eq!(
            c.iter().find(|x| x.label.is_none()).unwrap().packets,
            4 * 2 + 1
        );
        assert_eq!(c.iter().map(|x| x.packets).sum::<u64>(), 42);
    }
}
