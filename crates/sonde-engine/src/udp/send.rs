//! The UDP sender: packets leave when the [`Schedule`] says, waited for
//! by the [`DepartureClock`] (evenly spaced at low rates: sleep, then
//! spin the last stretch), in batches with UDP GSO at high rates (every
//! packet that is due goes in one call).

use crate::budget::Budget;
use crate::pacer::{DepartureClock, Step};
use crate::sys;
use crate::udp::flow::{window_open, window_packets, Credits, FLOW_PROBE};
use crate::udp::schedule::Schedule;
use sonde_model::udp_report::{DscpCounts, SenderTally};
use sonde_wire::TestPacket;
use std::io;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Most packets one call carries (UDP GSO allows 64 segments).
const BATCH: usize = 64;
/// Most bytes one GSO call carries.
const GSO_BYTES: usize = 65_000;

/// What a UDP sender has sent, read by the sampler.
#[derive(Debug)]
pub struct UdpSendCounters {
    pub packets: AtomicU64,
    pub bytes: AtomicU64,
    /// Packets and bytes after the warm-up.
    pub measured_packets: AtomicU64,
    pub measured_bytes: AtomicU64,
    /// Packets per DSCP set, warm-up included (for intervals).
    pub dscp: [AtomicU64; 64],
    /// Packets per DSCP set after the warm-up.
    pub measured_dscp: [AtomicU64; 64],
    /// ns from the start to the last packet sent.
    pub last_ns: AtomicU64,
}

impl Default for UdpSendCounters {
    fn default() -> Self {
        Self {
            packets: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            measured_packets: AtomicU64::new(0),
            measured_bytes: AtomicU64::new(0),
            dscp: std::array::from_fn(|_| AtomicU64::new(0)),
            measured_dscp: std::array::from_fn(|_| AtomicU64::new(0)),
            last_ns: AtomicU64::new(0),
        }
    }
}

fn dscp_counts(per_dscp: &[AtomicU64; 64]) -> DscpCounts {
    DscpCounts(
        per_dscp
            .iter()
            .enumerate()
            .filter_map(|(d, n)| {
                let n = n.load(Ordering::Relaxed);
                (n > 0).then_some((u8::try_from(d).unwrap_or(0), n))
            })
            .collect(),
    )
}

impl UdpSendCounters {
    /// Everything sent so far, warm-up included (`secs` left at 0).
    pub fn sent(&self) -> SenderTally {
        SenderTally {
            packets: self.packets.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            dscp_sent: dscp_counts(&self.dscp),
            secs: 0.0,
        }
    }

    /// What was sent after the warm-up (`secs` left at 0).
    pub fn measured(&self) -> SenderTally {
        SenderTally {
            packets: self.measured_packets.load(Ordering::Relaxed),
            bytes: self.measured_bytes.load(Ordering::Relaxed),
            dscp_sent: dscp_counts(&self.measured_dscp),
            secs: 0.0,
        }
    }
}

/// What one sender sent between two of its tallies, over `secs`.
pub fn sent_since(now: &SenderTally, before: &SenderTally, secs: f64) -> SenderTally {
    let mut dscp_sent = DscpCounts::default();
    for (d, n) in now.dscp_sent.iter() {
        let was = before.dscp_sent.get(d);
        if n > was {
            dscp_sent.add(d, n - was);
        }
    }
    SenderTally {
        packets: now.packets - before.packets,
        bytes: now.bytes - before.bytes,
        dscp_sent,
        secs,
    }
}

/// Timing and marking of one sending stream.
#[derive(Debug, Clone, Copy)]
pub struct UdpSendPlan {
    pub stream: u16,
    pub start: Instant,
    /// The realtime clock at `start`, ns since the epoch.
    pub start_wall_ns: u64,
    pub omit: Duration,
    pub send_end: Instant,
    /// The socket's DSCP (set on the socket by the caller).
    pub dscp: u8,
    pub ipv6: bool,
}

/// Flow control of an unpaced sender (see [`crate::udp::flow`]).
#[derive(Debug, Default)]
struct Window {
    probe_floor: u64,
    stalled_since: Option<Instant>,
}

/// Errors after which the sender goes on: a full buffer, an ICMP error
/// from an earlier packet, a packet this host's firewall dropped (EPERM).
fn transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted | io::ErrorKind::ConnectionRefused
    ) || matches!(e.raw_os_error(), Some(libc::ENOBUFS | libc::EPERM))
}

struct Batch {
    buf: Vec<u8>,
    len: usize,
    count: usize,
    dscp: Option<u8>,
}

/// What holds a sender back besides its schedule.
#[derive(Debug, Clone, Copy, Default)]
pub struct SendLimits<'a> {
    /// Flow control of an unpaced test.
    pub credits: Option<&'a Credits>,
    /// The direction's datagram budget (`-n`, `-k`).
    pub budget: Option<&'a Budget>,
}

/// Sends until `send_end`, `stop`, or the budget is spent, then a few
/// end markers.
pub fn udp_send_loop(
    sock: &UdpSocket,
    plan: UdpSendPlan,
    mut schedule: Schedule,
    counters: &UdpSendCounters,
    limits: SendLimits<'_>,
    stop: &AtomicBool,
) -> io::Result<()> {
    let SendLimits { credits, budget } = limits;
    let mut window = Window::default();
    let mut clock = DepartureClock::spinning(schedule.next_gap(), plan.start, plan.send_end);
    let mut next = schedule.next_departure();
    let max_len = 65_535usize;
    let mut batch = Batch {
        buf: vec![0u8; max_len.max(GSO_BYTES) + max_len],
        len: 0,
        count: 0,
        dscp: None,
    };
    let mut gso_ok = true;
    let mut seq: u64 = 0;
    while !stop.load(Ordering::Relaxed) {
        match clock.wait(next.at_ns) {
            Step::Send => {}
            Step::Over => break,
            Step::Nap(_) | Step::Spin(_) => continue,
        }
        let now = Instant::now();
        if let Some(c) = credits {
            let w = window_packets(next.len);
            if !window_open(
                seq,
                BATCH as u64,
                c.acked(plan.stream),
                window.probe_floor,
                w,
            ) {
                let since = *window.stalled_since.get_or_insert(now);
                if now - since >= FLOW_PROBE {
                    window.probe_floor = seq;
                    window.stalled_since = None;
                } else {
                    std::thread::sleep(Duration::from_micros(50));
                }
                continue;
            }
            window.stalled_since = None;
        }
        // Everything due now goes in one batch of equal packets.
        let elapsed = plan.start.elapsed();
        let send_ns = plan.start_wall_ns + elapsed.as_nanos() as u64;
        let warmup = elapsed < plan.omit;
        // A bounded test: at most what is left of the budget.
        let granted = budget.map_or(BATCH as u64, |b| b.take(BATCH as u64, now));
        if granted == 0 {
            break;
        }
        batch.len = next.len as usize;
        batch.dscp = next.dscp.map(sonde_model::Dscp::value);
        batch.count = 0;
        let elapsed_ns = elapsed.as_nanos() as u64;
        loop {
            let off = batch.count * batch.len;
            let packet = TestPacket {
                stream: plan.stream,
                seq: seq + batch.count as u64,
                send_ns,
                dscp: batch.dscp.unwrap_or(plan.dscp),
                warmup,
                end: false,
            };
            if packet.encode(&mut batch.buf[off..off + batch.len]).is_err() {
                break;
            }
            batch.count += 1;
            next = schedule.next_departure();
            let fits = (batch.count + 1) * batch.len <= GSO_BYTES && batch.count < BATCH;
            let same = next.len as usize == batch.len
                && next.dscp.map(sonde_model::Dscp::value) == batch.dscp;
            // A late wake-up may find packets due past the end: they
            // are not part of the test.
            let due = clock.due_now(next.at_ns, elapsed_ns);
            let allowed = (batch.count as u64) < granted;
            if !(gso_ok && fits && same && batch.dscp.is_none() && due && allowed) {
                break;
            }
        }
        let sent = send_batch(sock, &batch, plan.ipv6, &mut gso_ok);
        if let Some(b) = budget {
            let used = sent.as_ref().map_or(0, |&n| n as u64);
            b.give_back(granted.saturating_sub(used), now);
        }
        let sent = sent?;
        seq += batch.count as u64;
        if sent > 0 {
            let bytes = (sent * batch.len) as u64;
            counters.packets.fetch_add(sent as u64, Ordering::Relaxed);
            counters.bytes.fetch_add(bytes, Ordering::Relaxed);
            let d = usize::from(batch.dscp.unwrap_or(plan.dscp) & 0x3f);
            counters.dscp[d].fetch_add(sent as u64, Ordering::Relaxed);
            if !warmup {
                counters
                    .measured_packets
                    .fetch_add(sent as u64, Ordering::Relaxed);
                counters.measured_bytes.fetch_add(bytes, Ordering::Relaxed);
                counters.measured_dscp[d].fetch_add(sent as u64, Ordering::Relaxed);
            }
            counters.last_ns.store(elapsed_ns, Ordering::Relaxed);
        }
    }
    send_end_markers(sock, &plan, seq);
    let slip = clock.slip();
    if slip > Duration::ZERO {
        tracing::info!(
            stream = plan.stream,
            "the sender fell behind its schedule (a busy CPU): its packets left up to {:.1} ms \
             late, at the rate asked, rather than catch up in a burst",
            slip.as_secs_f64() * 1e3
        );
    }
    Ok(())
}

/// Sends the batch; returns how many packets the kernel took. A packet
/// the kernel refused for lack of buffer is not sent, and not counted.
fn send_batch(sock: &UdpSocket, b: &Batch, ipv6: bool, gso_ok: &mut bool) -> io::Result<usize> {
    let data = &b.buf[..b.count * b.len];
    if b.count > 1 && *gso_ok {
        let seg = u16::try_from(b.len).unwrap_or(u16::MAX);
        match sys::send_gso(sock, data, seg) {
            Ok(n) => return Ok(n / b.len),
            Err(e) if transient(&e) => return Ok(0),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EINVAL | libc::EIO | libc::EOPNOTSUPP)
                ) =>
            {
                tracing::debug!(error = %e, "UDP GSO unavailable; sending one by one");
                *gso_ok = false;
            }
            Err(e) => return Err(e),
        }
    }
    let mut sent = 0;
    for chunk in data.chunks(b.len) {
        let r = match b.dscp {
            Some(d) => sys::send_with_tos(sock, chunk, d << 2, ipv6),
            None => sock.send(chunk),
        };
        match r {
            Ok(_) => sent += 1,
            Err(e) if transient(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(sent)
}

/// Tells the receiver the stream is over (it stops waiting soon after);
/// three copies in case some are lost.
fn send_end_markers(sock: &UdpSocket, plan: &UdpSendPlan, seq: u64) {
    let mut buf = [0u8; sonde_wire::TEST_HEADER_LEN];
    let marker = TestPacket {
        stream: plan.stream,
        seq,
        send_ns: plan.start_wall_ns + plan.start.elapsed().as_nanos() as u64,
        dscp: plan.dscp,
        warmup: false,
        end: true,
    };
    if marker.encode(&mut buf).is_ok() {
        for _ in 0..3 {
            let _ = sock.send(&buf);
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_model::{Profile, Rate};

    #[test]
    fn a_late_sender_sends_nothing_due_after_the_end() {
        // One 1000-byte packet every 10 ms for 100 ms: packets at 0 to 90
        // ms. The sender starts 102 ms late, when the packet of 100 ms is
        // also "due": it must not go out. The schedule slips 97 ms, and
        // the ten packets leave 10 ms apart, within the catch-up time.
        let rx = UdpSocket::bind("[::1]:0").unwrap();
        let tx = UdpSocket::bind("[::1]:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        let start = Instant::now() - Duration::from_millis(102);
        let plan = UdpSendPlan {
            stream: 0,
            start,
            start_wall_ns: 0,
            omit: Duration::ZERO,
            send_end: start + Duration::from_millis(100),
            dscp: 0,
            ipv6: true,
        };
        let schedule = Schedule::new(Profile::Cbr, Rate::from_bps(800_000), 1000, 1);
        let counters = UdpSendCounters::default();
        udp_send_loop(
            &tx,
            plan,
            schedule,
            &counters,
            SendLimits::default(),
            &AtomicBool::new(false),
        )
        .unwrap();
        assert_eq!(counters.packets.load(Ordering::Relaxed), 10);
    }
}
