//! When each request left: sonde's own clock read before the send, and
//! the kernel's (or the network card's) send timestamp where the socket
//! gives one, matched to the request it belongs to.

use super::series::Answer;
use crate::sys::{enable_tx_timestamps, read_tx_stamps, StampSource, TxStamp};
use sonde_model::ping::StampKind;
use std::collections::VecDeque;
use std::os::fd::AsRawFd;

/// A kernel send time more than this after sonde's own is not this
/// request's (a send the kernel numbered but did not carry out would
/// shift the numbers); such a request keeps sonde's time.
const MAX_KERNEL_LAG_NS: i64 = 1_000_000_000;

/// Requests numbered by the kernel still waiting for their stamps.
const MAX_PENDING: usize = 4096;

/// The send times of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SentTimes {
    /// Read by sonde just before the send (ns since the Unix epoch).
    pub user: i64,
    pub kernel: Option<i64>,
    /// The card's clock, which need not be the system's.
    pub hardware: Option<i64>,
}

impl SentTimes {
    pub fn user(ns: i64) -> Self {
        Self {
            user: ns,
            kernel: None,
            hardware: None,
        }
    }

    /// The send time on the system clock (for one-way delays against a
    /// reflector's clock): the kernel's where there is one.
    pub fn system(&self) -> i64 {
        self.kernel.unwrap_or(self.user)
    }

    /// The round trip to `a` (ns) and the kinds of its two times: both
    /// of the card's clock, else the kernel's send time where the answer
    /// has a kernel receive time, else sonde's own send time.
    pub fn round_trip(&self, a: &Answer) -> (i64, StampKind, StampKind) {
        if let (Some(tx), Some(rx)) = (self.hardware, a.rx_hw_ns) {
            return (rx - tx, StampKind::Hardware, StampKind::Hardware);
        }
        let rx_kind = if a.rx_kernel {
            StampKind::Kernel
        } else {
            StampKind::User
        };
        match self.kernel.filter(|_| a.rx_kernel) {
            Some(tx) => (a.rx_ns - tx, StampKind::Kernel, rx_kind),
            None => (a.rx_ns - self.user, StampKind::User, rx_kind),
        }
    }

    /// Takes a kernel stamp of this request.
    pub fn take(&mut self, s: &TxStamp) {
        match s.source {
            StampSource::Hardware => self.hardware = Some(s.ns),
            StampSource::Kernel if (0..MAX_KERNEL_LAG_NS).contains(&(s.ns - self.user)) => {
                self.kernel = Some(s.ns);
            }
            StampSource::Kernel => {}
        }
    }
}

/// Numbers a socket's sends as the kernel does and hands back their
/// kernel stamps by sequence number.
#[derive(Debug, Default)]
pub struct TxStamper {
    on: bool,
    next_id: u32,
    /// (kernel number, request) of recent sends.
    pending: VecDeque<(u32, u64)>,
    stamps: Vec<TxStamp>,
}

impl TxStamper {
    /// Asks the kernel of `sock` for send stamps; without them (an old
    /// kernel), every request keeps sonde's own time.
    pub fn on(sock: &impl AsRawFd) -> Self {
        let on = match enable_tx_timestamps(sock) {
            Ok(()) => true,
            Err(e) => {
                tracing::debug!(error = %e, "no kernel send timestamps");
                false
            }
        };
        Self {
            on,
            ..Self::default()
        }
    }

    /// Request `seq` was just sent (the kernel took it).
    pub fn sent(&mut self, seq: u64) {
        if !self.on {
            return;
        }
        if self.pending.len() >= MAX_PENDING {
            self.pending.pop_front();
        }
        self.pending.push_back((self.next_id, seq));
        self.next_id = self.next_id.wrapping_add(1);
    }

    /// The stamps that came since the last call, with the request each
    /// belongs to, appended to `out`.
    pub fn collect(&mut self, sock: &impl AsRawFd, out: &mut Vec<(u64, TxStamp)>) {
        if !self.on {
            return;
        }
        self.stamps.clear();
        if let Err(e) = read_tx_stamps(sock, &mut self.stamps) {
            tracing::debug!(error = %e, "reading send timestamps");
            return;
        }
        for s in &self.stamps {
            if let Some(&(_, seq)) = self.pending.iter().rev().find(|(id, _)| *id == s.id) {
                out.push((seq, *s));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(rx_ns: i64, rx_kernel: bool, rx_hw_ns: Option<i64>) -> Answer {
        Answer {
            seq_low: 1,
            rx_ns,
            rx_kernel,
            rx_hw_ns,
            ttl: None,
            bytes: 64,
            remote: None,
            cos: None,
        }
    }

    fn kernel(ns: i64) -> TxStamp {
        TxStamp {
            id: 0,
            ns,
            source: StampSource::Kernel,
        }
    }

    #[test]
    fn a_round_trip_pairs_times_of_one_clock() {
        let mut t = SentTimes::user(1_000);
        // sonde's send time against a kernel receive time (as iputils).
        assert_eq!(
            t.round_trip(&answer(9_000, true, None)),
            (8_000, StampKind::User, StampKind::Kernel)
        );
        t.take(&kernel(1_400));
        assert_eq!(t.system(), 1_400);
        assert_eq!(
            t.round_trip(&answer(9_000, true, None)),
            (7_600, StampKind::Kernel, StampKind::Kernel)
        );
        // A receive time sonde read itself is paired with its own send time.
        assert_eq!(
            t.round_trip(&answer(9_500, false, None)),
            (8_500, StampKind::User, StampKind::User)
        );
        // The card's clock only with the card's clock.
        t.take(&TxStamp {
            id: 0,
            ns: 50,
            source: StampSource::Hardware,
        });
        assert_eq!(
            t.round_trip(&answer(9_000, true, Some(5_050))),
            (5_000, StampKind::Hardware, StampKind::Hardware)
        );
        assert_eq!(t.round_trip(&answer(9_000, true, None)).0, 7_600);
        // The one-way delays stay on the system clock.
        assert_eq!(t.system(), 1_400);
    }

    #[test]
    fn a_kernel_stamp_before_or_long_after_the_send_is_not_this_requests() {
        let mut t = SentTimes::user(5_000_000_000);
        t.take(&kernel(4_999_999_000));
        assert_eq!(t.kernel, None);
        t.take(&kernel(6_500_000_000));
        assert_eq!(t.kernel, None);
        t.take(&kernel(5_000_020_000));
        assert_eq!(t.kernel, Some(5_000_020_000));
    }
}
