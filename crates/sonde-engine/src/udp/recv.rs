//! The UDP receiver: every arriving packet goes through the estimators
//! of [`crate::udp::stats`] (loss, reordering, duplicates, RFC 3550
//! jitter, one-way delay, IPDV) and the DSCP checks, once for the current
//! interval and once for the measured part of the test.

use crate::sys::{Datagram, RecvBatch};
use crate::udp::frames::VideoRx;
use crate::udp::stats::{Arrival, DelayStats, IpdvStats, JitterEstimator, SequenceTracker};
use sonde_model::udp_report::{
    DscpCounts, FlowLabelCount, OneWayDelay, Quantiles, ReceiverTally, Remark,
};
use sonde_model::video::FrameCount;
use sonde_model::Dscp;
use sonde_wire::TestPacket;
use std::io;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Datagrams per `recvmmsg`.
const BATCH: usize = 64;
/// Buffers per `recvmmsg` with UDP GRO (each up to 64 KiB of datagrams).
const GRO_BATCH: usize = 8;
/// Full GRO batches in a row without a coalesced datagram after which a
/// receiver takes plain batches instead.
const UNCOALESCED_SWITCH: u32 = 16;
/// After the sender's end marker, how long stragglers may still arrive.
const END_LINGER: Duration = Duration::from_millis(200);

/// One accumulator: an interval, or the measured part of a test.
#[derive(Debug)]
pub struct RxAcc {
    packets: u64,
    bytes: u64,
    duplicates: u64,
    reordered: u64,
    expected: u64,
    delay: DelayStats,
    ipdv: IpdvStats,
    dscp_received: [u64; 64],
    by_sent: [u64; 64],
    remarks: Vec<((u8, u8), u64)>,
    flow_labels: Vec<FlowLabelCount>,
    first_rx_ns: Option<i64>,
    last_rx_ns: i64,
    jitter_sum_ms: f64,
    jitter_n: u32,
}

fn counts(per_dscp: &[u64; 64]) -> DscpCounts {
    DscpCounts(
        per_dscp
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(d, n)| (u8::try_from(d).unwrap_or(0), *n))
            .collect(),
    )
}

impl Default for RxAcc {
    fn default() -> Self {
        Self {
            packets: 0,
            bytes: 0,
            duplicates: 0,
            reordered: 0,
            expected: 0,
            delay: DelayStats::default(),
            ipdv: IpdvStats::default(),
            dscp_received: [0; 64],
            by_sent: [0; 64],
            remarks: Vec::new(),
            flow_labels: Vec::new(),
            first_rx_ns: None,
            last_rx_ns: 0,
            jitter_sum_ms: 0.0,
            jitter_n: 0,
        }
    }
}

fn ms(ns: f64) -> f64 {
    ns / 1e6
}

impl RxAcc {
    fn record(
        &mut self,
        p: &TestPacket,
        arrival: Arrival,
        rx_ns: i64,
        tos: Option<u8>,
        flow_label: Option<u32>,
        len: usize,
    ) {
        if flow_label.is_some() {
            FlowLabelCount::add(&mut self.flow_labels, flow_label, 1);
        }
        if let Some(t) = tos {
            let got = t >> 2;
            self.dscp_received[usize::from(got)] += 1;
            if got != p.dscp {
                self.remark(p.dscp, got, 1);
            }
        }
        if arrival == Arrival::Duplicate {
            self.duplicates += 1;
            return;
        }
        if arrival == Arrival::Reordered {
            self.reordered += 1;
        }
        self.packets += 1;
        self.bytes += len as u64;
        self.by_sent[usize::from(p.dscp & 0x3f)] += 1;
        let delay = rx_ns.saturating_sub(i64::try_from(p.send_ns).unwrap_or(i64::MAX));
        self.delay.record(delay);
        self.ipdv.record(p.seq, delay);
        self.first_rx_ns.get_or_insert(rx_ns);
        self.last_rx_ns = rx_ns;
    }

    fn remark(&mut self, sent: u8, got: u8, n: u64) {
        match self.remarks.iter_mut().find(|(k, _)| *k == (sent, got)) {
            Some((_, c)) => *c += n,
            None => self.remarks.push(((sent, got), n)),
        }
    }

    /// Adds another stream's accumulator (for a direction's sum).
    pub fn merge(&mut self, o: &RxAcc, jitter_ms: f64) {
        self.packets += o.packets;
        self.bytes += o.bytes;
        self.duplicates += o.duplicates;
        self.reordered += o.reordered;
        self.expected += o.expected;
        self.delay.merge(&o.delay);
        self.ipdv.merge(&o.ipdv);
        for d in 0..64 {
            self.dscp_received[d] += o.dscp_received[d];
            self.by_sent[d] += o.by_sent[d];
        }
        for &((sent, got), n) in &o.remarks {
            self.remark(sent, got, n);
        }
        for c in &o.flow_labels {
            FlowLabelCount::add(&mut self.flow_labels, c.label, c.packets);
        }
        self.first_rx_ns = match (self.first_rx_ns, o.first_rx_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.last_rx_ns = self.last_rx_ns.max(o.last_rx_ns);
        self.jitter_sum_ms += jitter_ms;
        self.jitter_n += 1;
    }

    /// The figures of this accumulator; `jitter_ms` is the stream's
    /// running RFC 3550 value (a sum's is the mean of its streams').
    pub fn tally(&self, jitter_ms: Option<f64>, clock_synced: bool) -> ReceiverTally {
        let jitter_ms = jitter_ms.unwrap_or(if self.jitter_n > 0 {
            self.jitter_sum_ms / f64::from(self.jitter_n)
        } else {
            0.0
        });
        let q = |f: &dyn Fn(f64) -> Option<f64>| -> Option<Quantiles> {
            Some(Quantiles {
                p50_ms: f(50.0)?,
                p90_ms: f(90.0)?,
                p99_ms: f(99.0)?,
                max_ms: f(100.0)?,
            })
        };
        let ipdv = q(&|p| self.ipdv.abs_percentile_ns(p).map(|v| ms(v as f64)));
        let d = &self.delay;
        let delay = (|| {
            Some(OneWayDelay {
                clock_synced,
                min_ms: ms(d.min_ns()? as f64),
                avg_ms: ms(d.mean_ns()?),
                max_ms: ms(d.max_ns()? as f64),
                p99_ms: ms(d.percentile_ns(99.0)? as f64),
                pdv_p50_ms: ms(d.pdv_percentile_ns(50.0)? as f64),
                pdv_p99_ms: ms(d.pdv_percentile_ns(99.0)? as f64),
            })
        })();
        ReceiverTally {
            packets: self.packets,
            bytes: self.bytes,
            duplicates: Some(self.duplicates),
            reordered: Some(self.reordered),
            loss_burst_max: None,
            expected: self.expected,
            jitter_ms,
            ipdv,
            delay,
            dscp_received: counts(&self.dscp_received),
            received_by_sent_dscp: counts(&self.by_sent),
            frames: Vec::new(),
            flow_labels: self.flow_labels.clone(),
            remarks: self
                .remarks
                .iter()
                .map(|&((s, r), n)| Remark {
                    sent: Dscp::new(s).unwrap_or_default(),
                    received: Dscp::new(r).unwrap_or_default(),
                    packets: n,
                })
                .collect(),
            // n packets span n − 1 gaps: stretch the span by one mean gap
            // so the rate of n packets is not overstated.
            secs: self.first_rx_ns.map_or(0.0, |f| {
                let span = (self.last_rx_ns - f) as f64 / 1e9;
                if self.packets > 1 {
                    span * self.packets as f64 / (self.packets - 1) as f64
                } else {
                    span
                }
            }),
        }
    }
}

/// Everything a receiving stream knows, shared with the sampler.
#[derive(Debug, Default)]
pub struct RxStream {
    seq: SequenceTracker,
    jitter: JitterEstimator,
    /// The current interval: packets of the warm-up and of the measured
    /// part apart, so each packet is recorded once and the measured part
    /// is the sum of the `window_measured` parts at each cut.
    window_warmup: RxAcc,
    window_measured: RxAcc,
    window_next_exp: u64,
    measured: RxAcc,
    /// Receive time (realtime ns) of the last test packet, if any.
    last_rx_ns: Option<i64>,
    /// The sender's end marker's number: how many packets it sent.
    end_seq: Option<u64>,
    /// Datagrams that were not test packets of this stream.
    pub strays: u64,
    /// The `video` profile: packets per frame.
    video: Option<VideoRx>,
}

impl RxStream {
    /// A stream of the `video` profile: its frames are counted too.
    pub fn video(rx: VideoRx) -> Self {
        Self {
            video: Some(rx),
            ..Self::default()
        }
    }

    /// The `video` profile's frames, sent and decodable (empty for other
    /// profiles).
    pub fn frame_counts(&self) -> Vec<FrameCount> {
        self.video.as_ref().map(VideoRx::counts).unwrap_or_default()
    }

    /// RFC 4737 NextExp: the sequence number expected next.
    pub fn next_expected(&self) -> u64 {
        self.seq.next_expected()
    }

    pub fn jitter_ms(&self) -> f64 {
        ms(self.jitter.jitter_ns())
    }

    /// The longest run of packets lost in a row, up to the sender's end
    /// marker (up to the last number received if it never came).
    pub fn loss_burst_max(&self) -> u64 {
        let end = self.end_seq.unwrap_or(self.seq.next_expected());
        self.seq.longest_loss_run(end)
    }

    /// When the last test packet arrived (realtime ns), if one did.
    pub fn last_rx_ns(&self) -> Option<i64> {
        self.last_rx_ns
    }

    /// Takes one datagram; returns whether it was the sender's end marker.
    pub fn on_datagram(&mut self, stream: u16, d: &Datagram<'_>, now_wall_ns: i64) -> bool {
        let Some(p) = TestPacket::decode(d.payload).filter(|p| p.stream == stream && !d.truncated)
        else {
            self.strays += 1;
            return false;
        };
        if p.end {
            self.end_seq = self.end_seq.max(Some(p.seq));
            if let Some(v) = &mut self.video {
                v.end(p.seq);
            }
            return true;
        }
        let rx_ns = d.rx_ns.unwrap_or(now_wall_ns);
        self.last_rx_ns = self.last_rx_ns.max(Some(rx_ns));
        let arrival = self.seq.observe(p.seq);
        if let Some(v) = self
            .video
            .as_mut()
            .filter(|_| arrival != Arrival::Duplicate)
        {
            v.record(p.seq);
        }
        if arrival != Arrival::Duplicate {
            self.jitter
                .update(i64::try_from(p.send_ns).unwrap_or(i64::MAX), rx_ns);
        }
        let acc = if p.warmup {
            &mut self.window_warmup
        } else {
            &mut self.window_measured
        };
        // Linux gives IPV6_FLOWINFO only when the flow information word
        // (traffic class and label) is not 0: an IPv6 packet without it
        // arrived with label 0. (IPv4 packets have no label.)
        let flow_label = d.flow_label.or(match d.source {
            Some(std::net::SocketAddr::V6(a)) if a.ip().to_ipv4_mapped().is_none() => Some(0),
            _ => None,
        });
        acc.record(&p, arrival, rx_ns, d.tos, flow_label, d.payload.len());
        false
    }

    /// Closes the current interval and returns it.
    pub fn cut(&mut self) -> RxAcc {
        let now = self.seq.next_expected();
        let meas = std::mem::take(&mut self.window_measured);
        self.measured.merge(&meas, 0.0);
        let mut w = std::mem::take(&mut self.window_warmup);
        w.merge(&meas, 0.0);
        w.jitter_n = 0;
        w.jitter_sum_ms = 0.0;
        w.expected = now.saturating_sub(self.window_next_exp);
        self.window_next_exp = now;
        w
    }

    /// The measured part so far (every interval cut up to now, and what
    /// arrived since the last cut).
    pub fn measured(&mut self) -> &RxAcc {
        let meas = std::mem::take(&mut self.window_measured);
        self.measured.merge(&meas, 0.0);
        self.measured.jitter_n = 0;
        self.measured.jitter_sum_ms = 0.0;
        &self.measured
    }
}

fn transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock
            | io::ErrorKind::TimedOut
            | io::ErrorKind::Interrupted
            | io::ErrorKind::ConnectionRefused
    )
}

fn wall_ns() -> i64 {
    sonde_model::clock::now_ns()
}

/// Receives until `hard_end`, `stop`, or shortly after the sender's end
/// marker. The socket needs a read timeout (it is the polling period).
pub fn udp_receive_loop(
    sock: &UdpSocket,
    stream: u16,
    state: &Mutex<RxStream>,
    hard_end: Instant,
    max_len: usize,
    coalesce: bool,
    stop: &AtomicBool,
) -> io::Result<()> {
    // Unpaced streams take runs of datagrams per buffer (UDP GRO): far
    // fewer system calls per packet, at the cost of one receive time for
    // all packets of a run.
    let mut gro = coalesce && crate::sys::enable_udp_gro(sock);
    let mut batch = if gro {
        RecvBatch::new(GRO_BATCH, 65_536)
    } else {
        RecvBatch::new(BATCH, max_len + 1)
    };
    // Full batches in a row in which the kernel coalesced nothing.
    let mut uncoalesced = 0u32;
    let mut end_seen: Option<Instant> = None;
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now >= hard_end || end_seen.is_some_and(|t| now >= t + END_LINGER) {
            break;
        }
        let n = match batch.recv(sock) {
            Ok(n) => n,
            Err(e) if transient(&e) => continue,
            Err(e) => return Err(e),
        };
        let wall = wall_ns();
        if gro {
            // A path that hands over datagrams one by one (no offloads on
            // its devices, as on a per-packet veth path) fills the GRO
            // buffers one datagram each: 8 per call. Such a stream does
            // better with a plain batch of 64, and GRO off so that nothing
            // coalesced later can be longer than the plain buffers.
            let coalesced = (0..n).any(|i| batch.get(i).is_some_and(|d| d.segment.is_some()));
            uncoalesced = if n == GRO_BATCH && !coalesced {
                uncoalesced + 1
            } else {
                0
            };
            if uncoalesced >= UNCOALESCED_SWITCH && crate::sys::disable_udp_gro(sock).is_ok() {
                tracing::debug!(stream, "no datagrams coalesced: receiving in plain batches");
                gro = false;
                let plain = RecvBatch::new(BATCH, max_len + 1);
                let old = std::mem::replace(&mut batch, plain);
                if !handle(&old, n, stream, state, wall, &mut end_seen) {
                    break;
                }
                continue;
            }
        }
        if !handle(&batch, n, stream, state, wall, &mut end_seen) {
            break;
        }
    }
    Ok(())
}

/// Feeds the `n` datagrams of `batch` to the stream's state; false when
/// that state is gone (a thread holding it panicked).
fn handle(
    batch: &RecvBatch,
    n: usize,
    stream: u16,
    state: &Mutex<RxStream>,
    wall: i64,
    end_seen: &mut Option<Instant>,
) -> bool {
    {
        let Ok(mut st) = state.lock() else {
            return false;
        };
        for i in 0..n {
            let Some(d) = batch.get(i) else { continue };
            let seg = d.segment.map_or(d.payload.len(), usize::from).max(1);
            for payload in d.payload.chunks(seg) {
                let one = Datagram {
                    payload,
                    segment: None,
                    ..d
                };
                if st.on_datagram(stream, &one, wall) && end_seen.is_none() {
                    *end_seen = Some(Instant::now());
                }
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn datagram(buf: &mut [u8], stream: u16, seq: u64, end: bool) -> &[u8] {
        let p = TestPacket {
            stream,
            seq,
            send_ns: 1,
            dscp: 0,
            warmup: false,
            end,
        };
        p.encode(buf).unwrap();
        buf
    }

    #[test]
    fn the_last_arrival_is_the_latest_test_packet_of_the_stream() {
        let mut st = RxStream::default();
        assert_eq!(st.last_rx_ns(), None);
        let mut buf = [0u8; 100];
        let mut arrive = |st: &mut RxStream, stream, seq, end, rx_ns| {
            let d = Datagram {
                payload: datagram(&mut buf, stream, seq, end),
                rx_ns: Some(rx_ns),
                rx_hw_ns: None,
                tos: None,
                truncated: false,
                segment: None,
                source: None,
                ttl: None,
                flow_label: None,
            };
            st.on_datagram(0, &d, 0)
        };
        arrive(&mut st, 0, 0, false, 3_000);
        arrive(&mut st, 0, 2, false, 5_000);
        // Reordered, stamped earlier: the latest arrival stays.
        arrive(&mut st, 0, 1, false, 4_000);
        assert_eq!(st.last_rx_ns(), Some(5_000));
        // Neither another stream's packet nor the end marker is data.
        arrive(&mut st, 7, 3, false, 9_000);
        assert!(arrive(&mut st, 0, 3, true, 9_000));
        assert_eq!(st.last_rx_ns(), Some(5_000));
    }
}

#[cfg(test)]
mod socket_tests {
    use super::*;
    use std::sync::Arc;

    /// Datagrams sent one by one on loopback are never coalesced (only a
    /// GSO send is): the receiver that asked for UDP GRO goes over to
    /// plain batches part of the way, and every datagram still counts
    /// once, none truncated or stray.
    #[test]
    fn a_receiver_that_gets_nothing_coalesced_takes_plain_batches_and_loses_nothing() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        // Room for every datagram before the receiver starts, so that its
        // batches are full whatever the machine's pace (as root).
        if !crate::sys::force_buffers(&rx, 64 << 20) {
            eprintln!("not root: no receive buffer for the whole run; skipped");
            return;
        }
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        let watch = rx.try_clone().unwrap();
        const N: u64 = 20_000;
        let mut buf = [0u8; 64];
        // Every test packet, then the end marker.
        for seq in 0..=N {
            tx.send(tests::datagram(&mut buf, 0, seq, seq == N))
                .unwrap();
        }
        let state = Arc::new(Mutex::new(RxStream::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let receiver = {
            let (state, stop) = (state.clone(), stop.clone());
            std::thread::spawn(move || {
                let end = Instant::now() + Duration::from_secs(30);
                udp_receive_loop(&rx, 0, &state, end, 64, true, &stop)
            })
        };
        receiver.join().unwrap().unwrap();
        stop.store(true, Ordering::Relaxed);
        // It had asked for GRO, and turned it off on going over.
        assert!(!crate::sys::udp_gro_enabled(&watch).unwrap());
        let mut st = state.lock().unwrap();
        assert_eq!(st.strays, 0);
        let t = st.measured().tally(None, false);
        assert_eq!(t.packets, N, "{t:?}");
        assert_eq!(t.duplicates, Some(0));
    }
}
