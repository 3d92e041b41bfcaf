//! [`Figures`]: what was measured over a direction, a stream, an interval
//! or a whole test, with the same field name for the same figure in every
//! test.
//!
//! A TCP direction fills the byte, rate and TCP fields; a UDP direction
//! the byte, rate and packet fields; ping the packet and RTT fields. A
//! figure a test does not measure, or a peer did not report, is `None`
//! and absent from the JSON, never 0. The definitions, with their RFCs,
//! are in docs/metrics.md.

use crate::profile::FrameKind;
use crate::rtt::RttStats;
use crate::udp_report::{DscpCounts, OneWayDelay, Quantiles, Remark};
use crate::video::FrameCount;
use crate::{Direction, Dscp};
use serde::{Deserialize, Serialize};

/// The figures of one direction, stream, interval or test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(default)]
pub struct Figures {
    /// Which way the data went (in lists of streams and interval sums).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub direction: Option<Direction>,
    /// The stream these figures are of (in lists of streams).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 255))]
    pub stream: Option<u16>,
    /// How many streams these figures add up.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 256))]
    pub streams: Option<u16>,

    /// Payload bytes handed to the sender's sockets after the warm-up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sent_bytes: Option<u64>,
    /// Payload bytes the receiver got after the warm-up (distinct
    /// packets only, for UDP).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub received_bytes: Option<u64>,
    /// Receiver goodput: received bytes over the time they took to arrive.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throughput_bps: Option<u64>,
    /// Sent bytes over the test (or interval) time: the offered load.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender_throughput_bps: Option<u64>,
    /// Seconds from the end of the warm-up to the last byte received.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub receiver_duration_s: Option<f64>,

    /// TCP segments the sender retransmitted (after the warm-up).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
    /// The sender's smoothed RTT (TCP_INFO) at the end.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub srtt_ms: Option<f64>,
    /// The lowest RTT the sender's TCP saw.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub min_rtt_ms: Option<f64>,
    /// The sender's congestion window at the end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwnd_bytes: Option<u64>,
    /// The largest congestion window sampled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_cwnd_bytes: Option<u64>,

    /// Packets (datagrams, echo requests) sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sent_packets: Option<u64>,
    /// Distinct packets received (duplicates not counted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub received_packets: Option<u64>,
    /// Packets never received: sent minus received for a whole test (so
    /// loss at the tail counts), due minus received for an interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_packets: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub loss_pct: Option<f64>,
    /// Packet delivery ratio: received / sent, in percent.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub pdr_pct: Option<f64>,
    /// Extra copies of packets already received.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duplicates: Option<u64>,
    /// Packets that arrived after a later one (RFC 4737).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reordered: Option<u64>,
    /// The longest run of consecutive sequence numbers never received
    /// (RFC 3357's loss period length; whole tests only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loss_burst_max: Option<u64>,
    /// RFC 3550 interarrival jitter.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub jitter_ms: Option<f64>,
    /// RFC 5481 IPDV between consecutive packets, absolute value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipdv: Option<Quantiles>,
    /// One-way delay (RFC 7679).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delay: Option<OneWayDelay>,
    /// Packets per DSCP the sender set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dscp_sent: Option<DscpCounts>,
    /// Packets per DSCP seen on arrival.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dscp_received: Option<DscpCounts>,
    /// Loss per DSCP the sender set (whole tests only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1))]
    pub classes: Vec<DscpClass>,
    /// The `video` profile: loss per frame type, from the class of the
    /// DSCP each type is sent with (whole tests only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1))]
    pub frames: Vec<FrameClass>,
    /// The `video` profile: the share of frames sent that could be
    /// decoded (all their packets and references arrived), in percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub decodable_frames_pct: Option<f64>,
    /// The IPv6 flow label the sender set (`--flowlabel`), and the labels
    /// the packets arrived with (whole tests only): kept, or rewritten on
    /// the path (seed 004 §6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 1048575))]
    pub flow_label_sent: Option<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1))]
    pub flow_labels: Vec<crate::udp_report::FlowLabelCount>,
    /// Packets that arrived with another DSCP than they were sent with;
    /// empty when every packet kept its marking.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1))]
    pub remarks: Vec<Remark>,

    /// Round-trip times of the answers (ping, latency under load).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_ms: Option<RttStats>,
}

/// Loss of the packets sent with one DSCP (for `video`, one frame type).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DscpClass {
    pub dscp: Dscp,
    pub sent_packets: u64,
    pub received_packets: u64,
    pub lost_packets: u64,
    #[schemars(range(min = 0, max = 100))]
    pub loss_pct: f64,
    #[schemars(range(min = 0, max = 100))]
    pub pdr_pct: f64,
}

/// Loss of one frame type of the `video` profile: the [`DscpClass`] of
/// the DSCP that type is sent with ([`FrameKind::dscp`]), named.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FrameClass {
    pub frame: FrameKind,
    #[serde(flatten)]
    pub class: DscpClass,
    /// Frames of this type sent, and how many of them could be decoded
    /// (their packets and their references arrived; the decodable frame
    /// rate of docs/udp.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_frames: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decodable_frames: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub decodable_pct: Option<f64>,
}

impl FrameClass {
    /// The frame types among `classes`, in the order I, P, B, with their
    /// frames sent and decodable from `counts` (the receiver's).
    pub fn from_classes(classes: &[DscpClass], counts: &[FrameCount]) -> Vec<FrameClass> {
        FrameKind::ALL
            .into_iter()
            .filter_map(|frame| {
                let class = classes.iter().find(|c| c.dscp == frame.dscp())?;
                let count = counts.iter().find(|c| c.frame == frame);
                Some(FrameClass {
                    frame,
                    class: class.clone(),
                    sent_frames: count.map(|c| c.sent),
                    decodable_frames: count.map(|c| c.decodable),
                    decodable_pct: count
                        .filter(|c| c.sent > 0)
                        .map(|c| pct(c.decodable, c.sent)),
                })
            })
            .collect()
    }
}

/// `part` of `whole` in percent; 0 of nothing is 0 %.
pub fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

impl Figures {
    /// The figures of a series of echo requests: `sent`, the RTTs (ms) of
    /// the first answers, extra answers and answers out of order (`None`
    /// where order was not followed).
    pub fn round_trip(sent: u64, rtts_ms: &[f64], duplicates: u64, reordered: Option<u64>) -> Self {
        let received = rtts_ms.len() as u64;
        let lost = sent.saturating_sub(received);
        Self {
            sent_packets: Some(sent),
            received_packets: Some(received),
            lost_packets: Some(lost),
            loss_pct: Some(pct(lost, sent)),
            duplicates: Some(duplicates),
            reordered,
            rtt_ms: RttStats::from_ms(rtts_ms),
            ..Self::default()
        }
    }

    /// These figures marked as stream `stream`'s, going `direction`.
    pub fn of_stream(self, stream: u16, direction: Direction) -> Self {
        Self {
            stream: Some(stream),
            direction: Some(direction),
            ..self
        }
    }

    /// The share of the packets sent with `dscp` that a remark covers, if
    /// the class is known.
    pub fn remark_share_pct(&self, remark: &Remark) -> Option<f64> {
        self.classes
            .iter()
            .find(|c| c.dscp == remark.sent)
            .map(|c| pct(remark.packets, c.received_packets.max(remark.packets)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_types_are_the_classes_of_their_dscps() {
        let class = |dscp: u8, sent: u64, received: u64| DscpClass {
            dscp: Dscp::new(dscp).unwrap(),
            sent_packets: sent,
            received_packets: received,
            lost_packets: sent - received,
            loss_pct: pct(sent - received, sent),
            pdr_pct: pct(received, sent),
        };
        // AF13 (B), AF11 (I) and EF, which is no frame type.
        let classes = [class(14, 80, 80), class(10, 100, 75), class(46, 5, 5)];
        let frames = FrameClass::from_classes(&classes, &[]);
        let got: Vec<(FrameKind, u64, f64)> = frames
            .iter()
            .map(|f| (f.frame, f.class.lost_packets, f.class.loss_pct))
            .collect();
        assert_eq!(got, vec![(FrameKind::I, 25, 25.0), (FrameKind::B, 0, 0.0)]);
        let json = serde_json::to_value(&frames[0]).unwrap();
        assert_eq!(json["frame"], "I");
        assert_eq!(json["dscp"], 10, "AF11");
        assert_eq!(json["sent_packets"], 100);
        assert_eq!(
            serde_json::from_value::<FrameClass>(json).unwrap(),
            frames[0]
        );
    }

    #[test]
    fn loss_counts_what_was_never_answered() {
        let c = Figures::round_trip(10, &[1.0; 9], 2, Some(1));
        assert_eq!(
            (
                c.received_packets,
                c.lost_packets,
                c.duplicates,
                c.reordered
            ),
            (Some(9), Some(1), Some(2), Some(1))
        );
        assert!((c.loss_pct.unwrap() - 10.0).abs() < 1e-12);
        assert_eq!(Figures::round_trip(0, &[], 0, None).loss_pct, Some(0.0));
        assert!(Figures::round_trip(5, &[], 0, None).rtt_ms.is_none());
    }

    #[test]
    fn unmeasured_figures_are_absent_not_zero() {
        let f = Figures {
            received_bytes: Some(0),
            ..Figures::default()
        };
        let j = serde_json::to_value(&f).unwrap();
        assert_eq!(j, serde_json::json!({"received_bytes": 0}));
        assert_eq!(serde_json::from_value::<Figures>(j).unwrap(), f);
    }
}
