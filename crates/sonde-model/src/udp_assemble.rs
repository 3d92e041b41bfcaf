//! Joining both ends' [`UdpSideReport`] into one [`UdpResult`]: the
//! sender's counts give the loss base and the offered rate, the
//! receiver's everything measured on arrival.

use crate::assemble::{find, AssembleError};
use crate::spec::StreamLayout;
use crate::udp_report::{ReceiverTally, SenderTally, UdpSideReport, UdpStreamSide, UdpTally};
use crate::udp_result::{
    remarking_words, DscpClassCounts, UdpCounts, UdpDirectionCounts, UdpInterval,
    UdpStreamInterval, UdpStreamResult, UdpSummary,
};
use crate::{
    Direction, StreamRole, TestEnv, Timestamp, UdpResult, UdpSpec, RESULT_FORMAT_VERSION,
    SONDE_VERSION,
};

struct Pair<'a> {
    stream: u16,
    direction: Direction,
    client: &'a UdpStreamSide,
    server: &'a UdpStreamSide,
}

fn sent(t: &UdpTally) -> SenderTally {
    match t {
        UdpTally::Sent(s) => s.clone(),
        UdpTally::Received(_) => SenderTally::default(),
    }
}

fn received(t: &UdpTally) -> ReceiverTally {
    match t {
        UdpTally::Received(r) => r.clone(),
        UdpTally::Sent(_) => ReceiverTally::default(),
    }
}

impl Pair<'_> {
    fn sender(&self) -> &UdpStreamSide {
        if self.direction == Direction::Reverse {
            self.server
        } else {
            self.client
        }
    }
    fn receiver(&self) -> &UdpStreamSide {
        if self.direction == Direction::Reverse {
            self.client
        } else {
            self.server
        }
    }
    fn window(&self, k: usize) -> (SenderTally, ReceiverTally) {
        let tx = self.sender().windows.get(k).map(sent).unwrap_or_default();
        let rx = self
            .receiver()
            .windows
            .get(k)
            .map(received)
            .unwrap_or_default();
        (tx, rx)
    }
}

fn add_sent(into: &mut SenderTally, t: &SenderTally) {
    into.packets += t.packets;
    into.bytes += t.bytes;
    into.secs = into.secs.max(t.secs);
    for (d, n) in t.dscp_sent.iter() {
        into.dscp_sent.add(d, n);
    }
}

fn direction_counts(
    direction: Direction,
    tx: &SenderTally,
    rx: &ReceiverTally,
    streams: u16,
    secs: Option<f64>,
) -> UdpDirectionCounts {
    UdpDirectionCounts {
        direction,
        streams,
        counts: match secs {
            Some(s) => UdpCounts::interval(tx, rx, s),
            None => UdpCounts::whole(tx, rx),
        },
        classes: if secs.is_some() {
            Vec::new()
        } else {
            DscpClassCounts::classes(tx, rx)
        },
        remarking: remarking_words(rx),
    }
}

/// The receiving end of `direction` and its merged tallies.
fn sums_of<'a>(
    d: Direction,
    client: &'a UdpSideReport,
    server: &'a UdpSideReport,
) -> Option<&'a crate::udp_report::ReceivedSum> {
    match d {
        Direction::Reverse => client.received_sum.as_ref(),
        _ => server.received_sum.as_ref(),
    }
}

/// Joins both ends' reports of the UDP test `spec`, started at `start`.
pub fn udp_result(
    spec: &UdpSpec,
    start: Timestamp,
    client: &UdpSideReport,
    server: &UdpSideReport,
) -> Result<UdpResult, AssembleError> {
    let pairs = (0..spec.stream_count())
        .map(|i| {
            let stream = u16::try_from(i).unwrap_or(u16::MAX);
            let direction = spec.stream_direction(i);
            let (c, s) = match direction {
                Direction::Reverse => (StreamRole::Receiver, StreamRole::Sender),
                _ => (StreamRole::Sender, StreamRole::Receiver),
            };
            Ok(Pair {
                stream,
                direction,
                client: find(&client.streams, "client", stream, c)?,
                server: find(&server.streams, "server", stream, s)?,
            })
        })
        .collect::<Result<Vec<_>, AssembleError>>()?;
    let flows = spec.direction.flows();
    let omit_s = spec.omit.as_secs_f64();
    let intervals = client
        .windows
        .iter()
        .enumerate()
        .map(|(k, w)| {
            let secs = w.end_s - w.start_s;
            let streams = pairs
                .iter()
                .map(|p| {
                    let (tx, rx) = p.window(k);
                    UdpStreamInterval {
                        stream: p.stream,
                        direction: p.direction,
                        counts: UdpCounts::interval(&tx, &rx, secs),
                    }
                })
                .collect();
            let sums = flows
                .iter()
                .map(|&d| {
                    let mut tx = SenderTally::default();
                    let mut n = 0u16;
                    for p in pairs.iter().filter(|p| p.direction == d) {
                        add_sent(&mut tx, &p.window(k).0);
                        n += 1;
                    }
                    let rx = sums_of(d, client, server)
                        .and_then(|s| s.windows.get(k).cloned())
                        .unwrap_or_default();
                    direction_counts(d, &tx, &rx, n, Some(secs))
                })
                .collect();
            UdpInterval {
                start_s: w.start_s,
                end_s: w.end_s,
                omitted: w.end_s <= omit_s + 1e-3,
                streams,
                sums,
            }
        })
        .collect();
    let streams = pairs
        .iter()
        .map(|p| {
            let tx = sent(&p.sender().measured);
            let rx = received(&p.receiver().measured);
            UdpStreamResult {
                stream: p.stream,
                direction: p.direction,
                client_socket: p.client.socket.clone(),
                server_socket: p.server.socket.clone(),
                counts: UdpCounts::whole(&tx, &rx),
                classes: DscpClassCounts::classes(&tx, &rx),
            }
        })
        .collect();
    let summary_of = |d: Direction| -> Option<UdpDirectionCounts> {
        if !flows.contains(&d) {
            return None;
        }
        let mut tx = SenderTally::default();
        let mut n = 0u16;
        for p in pairs.iter().filter(|p| p.direction == d) {
            add_sent(&mut tx, &sent(&p.sender().measured));
            n += 1;
        }
        let rx = sums_of(d, client, server)
            .map(|s| s.measured.clone())
            .unwrap_or_default();
        Some(direction_counts(d, &tx, &rx, n, None))
    };
    let interrupted = client.stopped_early || server.stopped_early;
    Ok(UdpResult {
        format_version: RESULT_FORMAT_VERSION,
        sonde_version: SONDE_VERSION.to_string(),
        test: "udp".to_string(),
        title: spec.title.clone(),
        spec: spec.clone(),
        env: TestEnv {
            client: client.env.clone(),
            server: server.env.clone(),
        },
        start,
        duration_s: if interrupted {
            pairs
                .iter()
                .map(|p| sent(&p.sender().measured).secs)
                .fold(0.0, f64::max)
        } else {
            spec.time.as_secs_f64()
        },
        interrupted,
        intervals,
        streams,
        summary: UdpSummary {
            forward: summary_of(Direction::Forward),
            reverse: summary_of(Direction::Reverse),
        },
        latency: None,
    })
}
