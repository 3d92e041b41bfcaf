//! iperf3's UDP data streams: datagrams that start with its header (send
//! time, sequence number from 1), sent at a rate, and received with loss,
//! order and RFC 3550-style jitter counted as iperf3 counts them.

use crate::budget::Budget;
use crate::pacer::{DepartureClock, Step};
use crate::udp::schedule::Schedule;
use sonde_model::{Profile, Rate};
use sonde_wire::iperf3::{CounterWidth, UdpHeader};
use std::io;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// What one stream moved.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct UdpTally {
    /// Datagrams sent, or received.
    pub packets: u64,
    pub bytes: u64,
    /// Receiver: the highest sequence number seen.
    pub highest: u64,
    /// Receiver: datagrams missing, as iperf3 counts them (a gap adds, a
    /// late datagram takes one back).
    pub lost: u64,
    pub out_of_order: u64,
    /// Receiver: smoothed |transit difference|, seconds.
    pub jitter_s: f64,
    /// Seconds from the first to the last datagram (or the run).
    pub secs: f64,
}

fn now_unix() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// Sends `len`-byte datagrams at `rate_bps` (0: as fast as possible)
/// until `end` or `stop`: on the native sender's CBR [`Schedule`],
/// waited for by the same [`DepartureClock`], sleeping rather than
/// spinning (a late sender sends at once what came due in the last
/// [`crate::pacer::MAX_LAG`] and slips the rest of its schedule, and
/// sends nothing due after `end`).
pub fn send(
    sock: &UdpSocket,
    len: usize,
    rate_bps: u64,
    width: CounterWidth,
    end: Instant,
    stop: &AtomicBool,
) -> io::Result<UdpTally> {
    send_within(sock, len, rate_bps, width, &SendBounds::until(end), stop).map(|(t, _)| t)
}

/// What ends a send and what is left out of its count.
#[derive(Debug, Clone, Copy)]
pub struct SendBounds<'a> {
    /// No datagram is due after this.
    pub end: Instant,
    /// iperf3's `-O`: what was sent before this is left out of the results.
    pub omit_end: Option<Instant>,
    /// `-n`/`-k`: a volume shared with the direction's other streams.
    pub budget: Option<&'a Budget>,
}

impl SendBounds<'_> {
    /// Only a time bound.
    pub fn until(end: Instant) -> Self {
        SendBounds {
            end,
            omit_end: None,
            budget: None,
        }
    }
}

/// [`send`] within `bounds`: the whole count, and the count at
/// `omit_end` (the whole count if the run ended first; zero without an
/// omit period).
pub fn send_within(
    sock: &UdpSocket,
    len: usize,
    rate_bps: u64,
    width: CounterWidth,
    bounds: &SendBounds<'_>,
    stop: &AtomicBool,
) -> io::Result<(UdpTally, UdpTally)> {
    let SendBounds {
        end,
        omit_end,
        budget,
    } = *bounds;
    let mut omitted: Option<UdpTally> = None;
    let mut buf = vec![0u8; len.max(width.header_len())];
    for (i, b) in buf.iter_mut().enumerate().skip(width.header_len()) {
        *b = (i as u8).wrapping_mul(31);
    }
    let start = Instant::now();
    let size = u32::try_from(buf.len()).unwrap_or(u32::MAX);
    let mut schedule = Schedule::new(Profile::Cbr, Rate::from_bps(rate_bps), size, 0);
    let mut clock = DepartureClock::sleeping(schedule.next_gap(), start, end);
    let mut next = schedule.next_departure();
    let mut t = UdpTally::default();
    while !stop.load(Ordering::Relaxed) {
        match clock.wait(next.at_ns) {
            Step::Send => {}
            Step::Over => break,
            Step::Nap(_) | Step::Spin(_) => continue,
        }
        if omitted.is_none() && omit_end.is_some_and(|at| Instant::now() >= at) {
            omitted = Some(t);
        }
        let sent_at = now_unix();
        let header = UdpHeader {
            sec: sent_at.as_secs() as u32,
            usec: sent_at.subsec_micros(),
            count: t.packets + 1,
        };
        if header.encode(width, &mut buf).is_err() {
            break;
        }
        let now = Instant::now();
        if budget.is_some_and(|b| b.take(1, now) == 0) {
            break;
        }
        let sent = sock.send(&buf);
        if sent.is_err() {
            if let Some(b) = budget {
                b.give_back(1, now);
            }
        }
        match sent {
            Ok(n) => {
                t.packets += 1;
                t.bytes += n as u64;
                next = schedule.next_departure();
            }
            // A full buffer or an ICMP error from an earlier datagram:
            // this one goes again (late), so no sequence number is lost.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::ConnectionRefused
                ) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {}
            Err(e) => return Err(e),
        }
    }
    // The schedule's last departure is up to one gap before the end; the
    // run is the sender's time unless it was stopped.
    let elapsed = start.elapsed();
    t.secs = if stop.load(Ordering::Relaxed) || budget.is_some_and(Budget::spent) {
        elapsed
    } else {
        elapsed.max(end.saturating_duration_since(start))
    }
    .as_secs_f64();
    let omitted = match omit_end {
        Some(_) => omitted.unwrap_or(t),
        None => UdpTally::default(),
    };
    Ok((t, omitted))
}

/// [`receive_bounded`] without a volume bound: until `end` or `stop`.
pub fn receive(
    sock: &UdpSocket,
    width: CounterWidth,
    end: Instant,
    stop: &AtomicBool,
) -> io::Result<UdpTally> {
    receive_bounded(sock, width, end, None, stop)
}

/// Receives until `end`, `stop`, or the receivers' budget has arrived.
pub fn receive_bounded(
    sock: &UdpSocket,
    width: CounterWidth,
    end: Instant,
    budget: Option<&Budget>,
    stop: &AtomicBool,
) -> io::Result<UdpTally> {
    sock.set_read_timeout(Some(Duration::from_millis(50)))?;
    let mut buf = vec![0u8; 65_536];
    let mut t = UdpTally::default();
    let mut prev_transit: Option<f64> = None;
    let (mut first, mut last) = (None, None);
    while !stop.load(Ordering::Relaxed)
        && Instant::now() < end
        && !budget.is_some_and(Budget::spent)
    {
        let n = match sock.recv(&mut buf) {
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                        | io::ErrorKind::ConnectionRefused
                ) =>
            {
                continue
            }
            Err(e) => return Err(e),
        };
        let Ok(h) = UdpHeader::decode(&buf[..n], width) else {
            continue;
        };
        let arrived = now_unix().as_secs_f64();
        first.get_or_insert(Instant::now());
        last = Some(Instant::now());
        t.packets += 1;
        t.bytes += n as u64;
        if h.count > t.highest {
            t.lost += h.count - t.highest - 1;
            t.highest = h.count;
        } else {
            t.out_of_order += 1;
            t.lost = t.lost.saturating_sub(1);
        }
        let transit = arrived - (f64::from(h.sec) + f64::from(h.usec) / 1e6);
        if let Some(p) = prev_transit {
            t.jitter_s += ((transit - p).abs() - t.jitter_s) / 16.0;
        }
        prev_transit = Some(transit);
        if let Some(b) = budget {
            b.count(1);
        }
    }
    t.secs = match (first, last) {
        (Some(f), Some(l)) => l.duration_since(f).as_secs_f64(),
        _ => 0.0,
    };
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paced_stream_arrives_whole_and_in_order_on_loopback() {
        let rx = UdpSocket::bind("[::1]:0").unwrap();
        let tx = UdpSocket::bind("[::1]:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        rx.connect(tx.local_addr().unwrap()).unwrap();
        let stop = AtomicBool::new(false);
        let end = Instant::now() + Duration::from_millis(500);
        let receiver = std::thread::spawn(move || {
            receive(
                &rx,
                CounterWidth::Bits64,
                end + Duration::from_millis(200),
                &AtomicBool::new(false),
            )
            .unwrap()
        });
        // 1 Mbit/s of 1250-byte datagrams: 100 a second, 50 in 0.5 s.
        let sent = send(&tx, 1250, 1_000_000, CounterWidth::Bits64, end, &stop).unwrap();
        let got = receiver.join().unwrap();
        assert!((49..=51).contains(&sent.packets), "{sent:?}");
        assert_eq!(got.packets, sent.packets);
        assert_eq!(
            (got.lost, got.out_of_order, got.highest),
            (0, 0, sent.packets)
        );
        assert_eq!(got.bytes, sent.packets * 1250);
    }

    #[test]
    fn a_block_count_ends_both_ends_at_that_many_datagrams() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        rx.connect(tx.local_addr().unwrap()).unwrap();
        let stop = AtomicBool::new(false);
        // 10 s of time, but 40 datagrams at 1000 a second.
        let end = Instant::now() + Duration::from_secs(10);
        let receiver = std::thread::spawn(move || {
            let budget = Budget::new(40, Instant::now());
            receive_bounded(
                &rx,
                CounterWidth::Bits64,
                end,
                Some(&budget),
                &AtomicBool::new(false),
            )
            .unwrap()
        });
        let budget = Budget::new(40, Instant::now());
        let bounds = SendBounds {
            budget: Some(&budget),
            ..SendBounds::until(end)
        };
        let (sent, _) =
            send_within(&tx, 1250, 10_000_000, CounterWidth::Bits64, &bounds, &stop).unwrap();
        let got = receiver.join().unwrap();
        assert_eq!(sent.packets, 40);
        assert_eq!((got.packets, got.highest, got.lost), (40, 40, 0));
        assert!(sent.secs < 5.0, "{sent:?}");
    }
}
