//! One ping series: requests every interval, answers matched to them,
//! first answers, duplicates and late (reordered) ones told apart.

use super::sent_times::SentTimes;
use crate::sys::{RecvBatch, TxStamp};
use sonde_model::ping::PingReply;
use sonde_model::ping::TimestampsUsed;
use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Times a reflector stamped on a request (ns, its clock).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoteTimes {
    pub received_ns: i64,
    pub sent_ns: i64,
}

/// One answer as a socket delivered it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    /// The request's sequence number, modulo 2^seq_bits.
    pub seq_low: u64,
    /// Receive time, ns since the Unix epoch (kernel stamp where there is one).
    pub rx_ns: i64,
    /// `rx_ns` is the kernel's (else sonde read its clock on receiving).
    pub rx_kernel: bool,
    /// The network card's receive time, where it gave one.
    pub rx_hw_ns: Option<i64>,
    pub ttl: Option<u8>,
    pub bytes: usize,
    pub remote: Option<RemoteTimes>,
    /// STAMP with the Class of Service TLV: what it and the reply said.
    pub cos: Option<CosAnswer>,
}

/// What a reply told of its class of service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CosAnswer {
    /// The DSCP and ECN the request arrived at the reflector with;
    /// `None`: the reflector did not fill them (it flagged the TLV as
    /// unknown, or did not answer it at all).
    pub at_reflector: Option<(u8, u8)>,
    /// The DSCP the reply arrived back with, where the kernel said.
    pub returned: Option<u8>,
}

/// A way to send requests and collect answers.
pub trait Prober {
    /// Bits of the sequence number on the wire.
    fn seq_bits(&self) -> u32;
    /// How requests travel, as results name it.
    fn method(&self) -> sonde_model::ProbeMethod;
    /// Sends request `seq` (counted from 1) with `size` bytes of data;
    /// returns its send time (ns since the Unix epoch).
    fn send(&mut self, seq: u64, size: u32) -> io::Result<i64>;
    /// Waits until `until` at most for answers and appends them.
    fn recv(&mut self, until: Instant, out: &mut Vec<Answer>) -> io::Result<()>;
    /// Kernel send times that came in since the last call, by request
    /// (a prober without them has none).
    fn sent_stamps(&mut self, _out: &mut Vec<(u64, TxStamp)>) {}
}

/// Waits until `until` at most for a batch of datagrams on `sock`; how
/// many came (0 when the time ran out first).
pub fn recv_until<S>(batch: &mut RecvBatch, sock: &S, until: Instant) -> io::Result<usize>
where
    S: std::os::fd::AsFd + std::os::fd::AsRawFd,
{
    let wait = until.saturating_duration_since(Instant::now());
    if wait.is_zero() {
        return Ok(0);
    }
    socket2::SockRef::from(sock).set_read_timeout(Some(wait.max(Duration::from_micros(1))))?;
    match batch.recv(sock) {
        Ok(n) => Ok(n),
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
            ) =>
        {
            Ok(0)
        }
        Err(e) => Err(e),
    }
}

/// How a series runs.
#[derive(Debug, Clone, Copy)]
pub struct SeriesPlan {
    pub size: u32,
    /// 0: until `stop`.
    pub count: u64,
    pub interval: Duration,
    /// Wait for answers after the last request.
    pub timeout: Duration,
    /// The series ends here whatever the count (iputils `-w`); with a
    /// count, it then sends until `count` requests are answered.
    pub deadline: Option<Instant>,
}

/// What a series sent and got back.
#[derive(Debug, Clone, Default)]
pub struct SeriesOutcome {
    pub sent: u64,
    /// Send times, s after `t0`, by sequence number (the first, 1, at 0).
    pub sent_at_s: Vec<f64>,
    /// Every answer, duplicates included, in arrival order.
    pub replies: Vec<PingReply>,
    /// First answers that came after an answer to a later request.
    pub reordered: u64,
    pub interrupted: bool,
    /// The deadline ended it.
    pub deadline_reached: bool,
    /// Which clocks the first answers' round trips were taken with.
    pub timestamps: TimestampsUsed,
}

/// The full sequence number of `low` (its low `bits`), the one nearest
/// below `next` (the next number to be sent).
pub fn widen(low: u64, bits: u32, next: u64) -> Option<u64> {
    let modulus = 1u64 << bits;
    let back = next.wrapping_sub(low) % modulus;
    let back = if back == 0 { modulus } else { back };
    next.checked_sub(back)
}

/// Runs `plan` on `prober`; `on_reply` sees each answer as it comes.
/// `t0` is the test's start (send times are reported from it).
pub fn run(
    prober: &mut dyn Prober,
    plan: SeriesPlan,
    t0: Instant,
    stop: &AtomicBool,
    on_reply: &mut dyn FnMut(&PingReply),
) -> io::Result<SeriesOutcome> {
    let mut out = SeriesOutcome::default();
    let mut tx_ns: HashMap<u64, SentTimes> = HashMap::new();
    let mut stamps = Vec::new();
    let mut take_stamps = |prober: &mut dyn Prober, tx_ns: &mut HashMap<u64, SentTimes>| {
        stamps.clear();
        prober.sent_stamps(&mut stamps);
        for (seq, s) in &stamps {
            if let Some(t) = tx_ns.get_mut(seq) {
                t.take(s);
            }
        }
    };
    let mut answered: HashMap<u64, ()> = HashMap::new();
    let mut highest: Option<u64> = None;
    let mut answers = Vec::new();
    let start = Instant::now();
    let mut next_send = start;
    let mut last_send = start;
    // Once stopped: no more requests, and answers in flight are waited
    // for until this (three times the longest RTT seen, within the
    // timeout) so that they do not count as lost.
    let mut drain_until: Option<Instant> = None;
    let mut longest = Duration::from_millis(10);
    loop {
        let now = Instant::now();
        if plan.deadline.is_some_and(|d| now >= d) {
            out.deadline_reached = true;
            break;
        }
        if drain_until.is_none() && stop.load(Ordering::Relaxed) {
            out.interrupted = true;
            drain_until = Some(now + (longest * 3).min(plan.timeout));
        }
        if drain_until.is_some_and(|d| now >= d) {
            break;
        }
        let answers_in = answered.len() as u64;
        // With a deadline, iputils keeps sending until `count` answers.
        let counted = if plan.deadline.is_some() {
            answers_in
        } else {
            out.sent
        };
        let more = drain_until.is_none() && (plan.count == 0 || counted < plan.count);
        if more && now >= next_send {
            let seq = out.sent + 1;
            tx_ns.insert(seq, SentTimes::user(prober.send(seq, plan.size)?));
            take_stamps(prober, &mut tx_ns);
            out.sent_at_s.push(now.duration_since(t0).as_secs_f64());
            out.sent += 1;
            last_send = now;
            // Keep the schedule, but never send a burst to catch up.
            next_send = (next_send + plan.interval).max(now);
            continue;
        }
        let enough = plan.deadline.is_some() && plan.count > 0 && answers_in >= plan.count;
        let all_in = answers_in >= out.sent || enough;
        if !more && (all_in || now >= last_send + plan.timeout) {
            break;
        }
        let until = match (more, drain_until) {
            (true, _) => next_send,
            (false, Some(d)) => d.min(last_send + plan.timeout),
            (false, None) => last_send + plan.timeout,
        };
        // Wake at least every 100 ms to see `stop`, and at the deadline.
        let mut until = until.min(Instant::now() + Duration::from_millis(100));
        if let Some(d) = plan.deadline {
            until = until.min(d);
        }
        answers.clear();
        prober.recv(until, &mut answers)?;
        if !answers.is_empty() {
            take_stamps(prober, &mut tx_ns);
        }
        for a in &answers {
            // With a deadline, `count` answers end the series at once (as
            // iputils reads them one by one): later ones are not taken.
            if plan.deadline.is_some() && plan.count > 0 && answered.len() as u64 >= plan.count {
                break;
            }
            let Some(seq) = widen(a.seq_low, prober.seq_bits(), out.sent + 1) else {
                continue;
            };
            let Some(sent) = tx_ns.get(&seq) else {
                continue;
            };
            let sent_ns = sent.system();
            let (round_trip_ns, tx_kind, rx_kind) = sent.round_trip(a);
            let duplicate = answered.insert(seq, ()).is_some();
            let rtt = Duration::from_nanos(u64::try_from(round_trip_ns).unwrap_or(0));
            longest = longest.max(rtt);
            if !duplicate {
                out.timestamps.send.add(tx_kind);
                out.timestamps.receive.add(rx_kind);
                if highest.is_some_and(|h| seq < h) {
                    out.reordered += 1;
                }
                highest = highest.max(Some(seq));
            }
            let (forward_ms, backward_ms, dwell_ms, rtt_ns) = match a.remote {
                Some(r) => {
                    let dwell = r.sent_ns - r.received_ns;
                    (
                        Some((r.received_ns - sent_ns) as f64 / 1e6),
                        Some((a.rx_ns - r.sent_ns) as f64 / 1e6),
                        Some(dwell as f64 / 1e6),
                        round_trip_ns - dwell,
                    )
                }
                None => (None, None, None, round_trip_ns),
            };
            let reply = PingReply {
                seq,
                size: plan.size,
                sent_s: seq
                    .checked_sub(1)
                    .and_then(|i| out.sent_at_s.get(i as usize))
                    .copied()
                    .unwrap_or_default(),
                rtt_ms: rtt_ns as f64 / 1e6,
                ttl: a.ttl,
                duplicate,
                forward_ms,
                backward_ms,
                dwell_ms,
                received_unix_s: Some(a.rx_ns as f64 / 1e9),
                dscp_at_reflector: a
                    .cos
                    .and_then(|c| c.at_reflector)
                    .and_then(|(d, _)| sonde_model::Dscp::new(d)),
                ecn_at_reflector: a.cos.and_then(|c| c.at_reflector).map(|(_, e)| e),
                dscp_returned: a
                    .cos
                    .and_then(|c| c.returned)
                    .and_then(sonde_model::Dscp::new),
            };
            on_reply(&reply);
            out.replies.push(reply);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_numbers_widen_to_the_latest_sent() {
        assert_eq!(widen(5, 16, 10), Some(5));
        assert_eq!(widen(9, 16, 10), Some(9));
        assert_eq!(widen(10, 16, 10), None, "not sent yet");
        // After wrapping: 70,001 sent (0..=70,000); 70,000 is 4,464 in 16
        // bits, and 4,464 itself is long past.
        assert_eq!(widen(69_999 & 0xffff, 16, 70_001), Some(69_999));
        assert_eq!(widen(4_464, 16, 70_001), Some(70_000));
        assert_eq!(widen(4_464, 16, 70_000), Some(4_464));
        assert_eq!(widen(7, 32, 8), Some(7));
    }

    /// A prober that answers each request after a fixed delay, twice for
    /// every fifth, and never for every seventh.
    struct Echoes {
        pending: Vec<(Instant, u64, i64)>,
    }

    impl Prober for Echoes {
        fn seq_bits(&self) -> u32 {
            16
        }
        fn method(&self) -> sonde_model::ProbeMethod {
            sonde_model::ProbeMethod::IcmpDatagram
        }
        fn send(&mut self, seq: u64, _size: u32) -> io::Result<i64> {
            let t = super::super::icmp::now_ns();
            if seq % 7 != 6 {
                let at = Instant::now() + Duration::from_millis(2);
                self.pending.push((at, seq, t));
                if seq.is_multiple_of(5) {
                    self.pending.push((at, seq, t));
                }
            }
            Ok(t)
        }
        fn recv(&mut self, until: Instant, out: &mut Vec<Answer>) -> io::Result<()> {
            std::thread::sleep(
                until
                    .saturating_duration_since(Instant::now())
                    .min(Duration::from_millis(1)),
            );
            let now = Instant::now();
            let (due, rest): (Vec<_>, Vec<_>) = self.pending.drain(..).partition(|p| p.0 <= now);
            self.pending = rest;
            for (_, seq, t) in due {
                out.push(Answer {
                    seq_low: seq & 0xffff,
                    rx_ns: t + 2_000_000,
                    rx_kernel: true,
                    rx_hw_ns: None,
                    ttl: None,
                    bytes: 64,
                    remote: None,
                    cos: None,
                });
            }
            Ok(())
        }
    }

    fn echoes(count: u64, deadline: Option<Instant>) -> SeriesOutcome {
        let mut p = Echoes {
            pending: Vec::new(),
        };
        let plan = SeriesPlan {
            size: 56,
            count,
            interval: Duration::from_millis(1),
            timeout: Duration::from_millis(50),
            deadline,
        };
        run(
            &mut p,
            plan,
            Instant::now(),
            &AtomicBool::new(false),
            &mut |_| {},
        )
        .unwrap()
    }

    #[test]
    fn a_series_counts_answers_duplicates_and_silence() {
        let o = echoes(21, None);
        assert_eq!(o.sent, 21);
        // 1..=21 as iputils numbers them: 6, 13 and 20 unanswered; 5, 10
        // and 15 answered twice.
        let firsts: Vec<u64> = o
            .replies
            .iter()
            .filter(|r| !r.duplicate)
            .map(|r| r.seq)
            .collect();
        let dups = o.replies.iter().filter(|r| r.duplicate).count();
        assert_eq!((firsts.len(), dups), (18, 3));
        assert_eq!(firsts.first(), Some(&1));
        assert!(!firsts.contains(&6) && firsts.contains(&21));
        assert!(o.replies.iter().all(|r| (r.rtt_ms - 2.0).abs() < 1e-9));
        assert!(o.replies.iter().all(|r| r.received_unix_s.is_some()));
        assert_eq!(o.reordered, 0);
        assert!(!o.deadline_reached);
    }

    #[test]
    fn with_a_deadline_a_count_is_of_answers() {
        // 21 answers take at least 24 requests when 6, 13 and 20 go
        // unanswered (iputils -c with -w).
        let o = echoes(21, Some(Instant::now() + Duration::from_secs(20)));
        let firsts = o.replies.iter().filter(|r| !r.duplicate).count();
        assert!(firsts == 21 && o.sent >= 24, "{firsts} of {}", o.sent);
        assert!(!o.deadline_reached);
        // A deadline long before the count ends the series.
        let o = echoes(100_000, Some(Instant::now() + Duration::from_millis(50)));
        assert!(o.deadline_reached);
        assert!(o.sent < 100_000);
    }
}
