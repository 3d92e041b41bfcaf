//! What was measured in a UDP test: the document `sonde udp -J` prints
//! (schema: `docs/schema/udp-result-v1.schema.json`).

use crate::udp_report::{DscpCounts, OneWayDelay, Quantiles, ReceiverTally, Remark, SenderTally};
use crate::{Direction, Dscp, Rate, SocketInForce, TestEnv, Timestamp, UdpSpec};
use serde::{Deserialize, Serialize};

/// The figures of a stream, a direction or an interval. Loss and PDR
/// follow RFC 7680: against the sender's count for a whole test (so loss
/// at the tail counts), against the sequence numbers due for an interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct UdpCounts {
    pub sent: u64,
    pub received: u64,
    pub lost: u64,
    pub loss_pct: f64,
    /// Packet delivery ratio: received / sent, in percent.
    pub pdr_pct: f64,
    pub duplicates: u64,
    pub reordered: u64,
    /// Payload bytes received.
    pub bytes: u64,
    /// Received payload rate.
    pub throughput_bps: u64,
    /// Payload rate the sender offered.
    pub offered_bps: u64,
    /// RFC 3550 interarrival jitter.
    pub jitter_ms: f64,
    /// RFC 5481 IPDV between consecutive packets, absolute value.
    pub ipdv: Option<Quantiles>,
    pub delay: Option<OneWayDelay>,
    pub dscp_sent: DscpCounts,
    pub dscp_received: DscpCounts,
    pub remarks: Vec<Remark>,
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

impl UdpCounts {
    /// Figures for a whole test: loss against what the sender sent.
    pub fn whole(tx: &SenderTally, rx: &ReceiverTally) -> Self {
        // Over the test time, or the arrival span if longer: a span that
        // ends in an on/off profile's silence would overstate the rate.
        Self::from_parts(tx, rx, tx.packets, rx.secs.max(tx.secs))
    }

    /// Figures for one interval of `secs`: loss against the sequence
    /// numbers due in it (packets in flight belong to the next one).
    pub fn interval(tx: &SenderTally, rx: &ReceiverTally, secs: f64) -> Self {
        Self::from_parts(tx, rx, rx.expected.max(rx.packets), secs)
    }

    fn from_parts(tx: &SenderTally, rx: &ReceiverTally, base: u64, secs: f64) -> Self {
        let lost = base.saturating_sub(rx.packets);
        Self {
            sent: tx.packets,
            received: rx.packets,
            lost,
            loss_pct: pct(lost, base),
            pdr_pct: pct(rx.packets.min(base), base),
            duplicates: rx.duplicates,
            reordered: rx.reordered,
            bytes: rx.bytes,
            throughput_bps: Rate::from_bytes_over(rx.bytes, secs).bps(),
            offered_bps: Rate::from_bytes_over(tx.bytes, tx.secs).bps(),
            jitter_ms: rx.jitter_ms,
            ipdv: rx.ipdv,
            delay: rx.delay,
            dscp_sent: tx.dscp_sent.clone(),
            dscp_received: rx.dscp_received.clone(),
            remarks: rx.remarks.clone(),
        }
    }
}

/// Loss per DSCP the sender set (for `video`, per frame type).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DscpClassCounts {
    pub dscp: Dscp,
    pub sent: u64,
    pub received: u64,
    pub lost: u64,
    pub loss_pct: f64,
    pub pdr_pct: f64,
}

impl DscpClassCounts {
    /// One entry per DSCP sent, over a whole test (intervals have none:
    /// packets in flight would show as lost in one and found in the next).
    pub fn classes(tx: &SenderTally, rx: &ReceiverTally) -> Vec<Self> {
        tx.dscp_sent
            .iter()
            .map(|(d, sent)| {
                let received = rx.received_by_sent_dscp.get(d).min(sent);
                Self {
                    dscp: Dscp::new(d).unwrap_or_default(),
                    sent,
                    received,
                    lost: sent - received,
                    loss_pct: pct(sent - received, sent),
                    pdr_pct: pct(received, sent),
                }
            })
            .collect()
    }
}

/// Remarking in words: "EF (46) arrived as CS0 (0) in 980 of 1000 packets (98.0 %)".
pub fn remarking_words(rx: &ReceiverTally) -> Vec<String> {
    rx.remarks
        .iter()
        .map(|r| {
            let of = rx.received_by_sent_dscp.get(r.sent.value()).max(r.packets);
            format!(
                "{} arrived as {} in {} of {} packets ({:.1} %): remarked on the path",
                r.sent,
                r.received,
                r.packets,
                of,
                pct(r.packets, of)
            )
        })
        .collect()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UdpStreamInterval {
    pub stream: u16,
    pub direction: Direction,
    #[serde(flatten)]
    pub counts: UdpCounts,
}

/// All streams of one direction, over an interval or the whole test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UdpDirectionCounts {
    pub direction: Direction,
    pub streams: u16,
    #[serde(flatten)]
    pub counts: UdpCounts,
    pub classes: Vec<DscpClassCounts>,
    /// Remarking seen, in words; empty when every packet kept its DSCP.
    pub remarking: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UdpInterval {
    pub start_s: f64,
    pub end_s: f64,
    pub omitted: bool,
    pub streams: Vec<UdpStreamInterval>,
    pub sums: Vec<UdpDirectionCounts>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UdpStreamResult {
    pub stream: u16,
    pub direction: Direction,
    pub client_socket: SocketInForce,
    pub server_socket: SocketInForce,
    #[serde(flatten)]
    pub counts: UdpCounts,
    pub classes: Vec<DscpClassCounts>,
}

/// One summary per direction that ran (both for `--bidir`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UdpSummary {
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub forward: Option<UdpDirectionCounts>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reverse: Option<UdpDirectionCounts>,
}

/// The result of one UDP test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UdpResult {
    pub format_version: u32,
    pub sonde_version: String,
    /// Always `"udp"`.
    pub test: String,
    pub title: Option<String>,
    pub spec: UdpSpec,
    pub env: TestEnv,
    pub start: Timestamp,
    pub duration_s: f64,
    pub interrupted: bool,
    pub intervals: Vec<UdpInterval>,
    pub streams: Vec<UdpStreamResult>,
    pub summary: UdpSummary,
    /// With `--latency`: RTT to the server idle and under this load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<crate::rtt::LatencyUnderLoad>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_test_loss_counts_the_tail() {
        let tx = SenderTally {
            packets: 1000,
            bytes: 1_000_000,
            secs: 1.0,
            ..SenderTally::default()
        };
        let rx = ReceiverTally {
            packets: 950,
            bytes: 950_000,
            expected: 950, // the last 50 never arrived
            secs: 1.0,
            ..ReceiverTally::default()
        };
        let c = UdpCounts::whole(&tx, &rx);
        assert_eq!(c.lost, 50);
        assert!((c.loss_pct - 5.0).abs() < 1e-9);
        assert!((c.pdr_pct - 95.0).abs() < 1e-9);
        assert_eq!(c.throughput_bps, 7_600_000);
        assert_eq!(c.offered_bps, 8_000_000);
        let i = UdpCounts::interval(&tx, &rx, 1.0);
        assert_eq!(i.lost, 0, "within the interval nothing due was missing");
    }

    #[test]
    fn remarking_is_described_in_words() {
        let rx = ReceiverTally {
            received_by_sent_dscp: DscpCounts([(46, 200)].into_iter().collect()),
            remarks: vec![Remark {
                sent: Dscp::EF,
                received: Dscp::BEST_EFFORT,
                packets: 200,
            }],
            ..ReceiverTally::default()
        };
        let w = remarking_words(&rx);
        assert_eq!(w.len(), 1);
        assert!(
            w[0].starts_with("EF (46) arrived as CS0 (0) in 200 of 200 packets (100.0 %)"),
            "{}",
            w[0]
        );
    }
}
