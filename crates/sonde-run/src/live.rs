//! This end's interval samples, as the engine hands them out while a test
//! runs, turned into the model's [`Interval`] of [`Figures`]: what the
//! text printer and the live view show before the peer's report comes.

use sonde_engine::tcp::side::LiveInterval;
use sonde_engine::udp::side::UdpLive;
use sonde_model::assemble::add_tcp;
use sonde_model::udp_assemble::{one_interval, receiver_half, sender_half};
use sonde_model::udp_report::Remark;
use sonde_model::{Direction, Event, Figures, Interval, Rate, StreamLayout, StreamRole, UdpTally};
use sonde_wire::ReceivedInterval;
use std::collections::{HashMap, HashSet};

fn interval(
    start_s: f64,
    end_s: f64,
    omitted: bool,
    streams: Vec<Figures>,
    sums: Vec<Figures>,
) -> Interval {
    Interval {
        start_s,
        end_s,
        omitted,
        size_bytes: None,
        streams,
        sums,
        round_trip: None,
    }
}

/// TCP: keeps each sender's retransmit count, so that every live
/// interval says how many happened in it.
#[derive(Debug, Default)]
pub struct TcpLive {
    retrans: HashMap<u16, u64>,
}

impl TcpLive {
    pub fn interval(&mut self, layout: &impl StreamLayout, live: &LiveInterval) -> Interval {
        let secs = live.window.end_s - live.window.start_s;
        let streams: Vec<Figures> = live
            .streams
            .iter()
            .map(|(stream, role, sample)| {
                let rate = Some(Rate::from_bytes_over(sample.bytes, secs).bps());
                let tcp = sample.tcp;
                let figures = match role {
                    StreamRole::Sender => Figures {
                        sent_bytes: Some(sample.bytes),
                        sender_throughput_bps: rate,
                        retransmits: tcp.and_then(|t| t.total_retrans).map(|now| {
                            let before = self.retrans.insert(*stream, now).unwrap_or(0);
                            now.saturating_sub(before)
                        }),
                        cwnd_bytes: tcp.and_then(|t| t.cwnd_bytes),
                        srtt_ms: tcp.and_then(|t| t.srtt_us).map(|us| f64::from(us) / 1000.0),
                        ..Figures::default()
                    },
                    StreamRole::Receiver => Figures {
                        received_bytes: Some(sample.bytes),
                        throughput_bps: rate,
                        ..Figures::default()
                    },
                };
                figures.of_stream(*stream, layout.stream_direction(usize::from(*stream)))
            })
            .collect();
        let sums = layout
            .direction()
            .flows()
            .iter()
            .filter_map(|&d| {
                let of: Vec<&Figures> = streams.iter().filter(|s| s.direction == Some(d)).collect();
                (!of.is_empty()).then(|| {
                    let mut sum = add_tcp(&of);
                    // Rates of a sum are its bytes over the window, as in
                    // the result, not a sum of rounded rates.
                    let rate = |b: Option<u64>| b.map(|b| Rate::from_bytes_over(b, secs).bps());
                    sum.throughput_bps = rate(sum.received_bytes);
                    sum.sender_throughput_bps = rate(sum.sent_bytes);
                    sum.direction = Some(d);
                    sum
                })
            })
            .collect();
        interval(
            live.window.start_s,
            live.window.end_s,
            live.omitted,
            streams,
            sums,
        )
    }
}

/// UDP: remembers which remarkings were already reported, so that each
/// is an event once.
#[derive(Debug, Default)]
pub struct UdpLiveState {
    remarks_seen: HashSet<(u16, u8, u8)>,
}

impl UdpLiveState {
    /// The interval, and the remarkings first seen in it. `received`:
    /// what the peer's receivers counted in the same interval, joined to
    /// this end's senders (their loss, live).
    pub fn interval(
        &mut self,
        layout: &impl StreamLayout,
        live: &UdpLive,
        received: Option<&ReceivedInterval>,
    ) -> (Interval, Vec<Event>) {
        let peer_rx = |stream: u16| {
            received
                .and_then(|r| r.streams.iter().find(|s| s.stream == stream))
                .map(|s| &s.tally)
        };
        let secs = (live.window.end_s - live.window.start_s).max(1e-9);
        let mut remarked = Vec::new();
        let streams = live
            .streams
            .iter()
            .map(|(stream, tally)| {
                let direction = layout.stream_direction(usize::from(*stream));
                let figures = match tally {
                    UdpTally::Sent(tx) => match peer_rx(*stream) {
                        Some(rx) => one_interval(tx, rx, secs),
                        None => sender_half(tx, secs),
                    },
                    UdpTally::Received(rx) => {
                        for r in &rx.remarks {
                            if self.remarks_seen.insert((
                                *stream,
                                r.sent.value(),
                                r.received.value(),
                            )) {
                                remarked.push(remark_event(*stream, direction, *r));
                            }
                        }
                        receiver_half(rx, secs)
                    }
                };
                figures.of_stream(*stream, direction)
            })
            .collect();
        (
            interval(
                live.window.start_s,
                live.window.end_s,
                live.omitted,
                streams,
                Vec::new(),
            ),
            remarked,
        )
    }
}

fn remark_event(stream: u16, direction: Direction, remark: Remark) -> Event {
    Event::Remarked {
        stream,
        direction,
        remark,
    }
}
