//! How many HTTP connections the agent holds open: all together (the
//! configured `http.max_connections`, capped by the process's descriptor
//! limit less a reserve that keeps the control port and the archive
//! working) and from one source (an IPv4 address, an IPv6 /64 by
//! default). The last quarter of the places is kept for sources that
//! hold fewer than [`FEW`] connections, so that a few sources each under
//! their own cap cannot fill every place and hold everyone else out. A
//! connection over a cap is closed as soon as it is accepted, before a
//! byte is read from it.

use ipnet::IpNet;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Descriptors the HTTP side leaves to the rest of the agent: the
/// control port's listener and its tests' sockets, the archive's
/// connections, log and audit files.
pub const DESCRIPTOR_RESERVE: usize = 64;

/// Past three quarters of the total, a source holding this many
/// connections already gets no more.
pub const FEW: usize = 2;

/// The process's soft limit on open descriptors, from
/// `/proc/self/limits` (read there rather than through `getrlimit`, which
/// would need `unsafe`); `None` when unlimited or unreadable.
pub fn descriptor_limit() -> Option<usize> {
    let text = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    line["Max open files".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The total cap: `configured`, or fewer when the descriptor `limit`
/// less the reserve leaves fewer (at least 8, so that a tiny limit still
/// serves someone).
pub fn total_cap(configured: usize, limit: Option<usize>) -> usize {
    match limit {
        Some(l) => configured.min(l.saturating_sub(DESCRIPTOR_RESERVE).max(8)),
        None => configured,
    }
}

/// Why a connection was closed at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Over {
    Total,
    PerSource,
    /// Past three quarters of the total, from a source that holds
    /// [`FEW`] or more already.
    Crowded,
}

impl Over {
    pub fn name(self) -> &'static str {
        match self {
            Over::Total => "total",
            Over::PerSource => "per_source",
            Over::Crowded => "crowded",
        }
    }
}

/// The open connections, counted by source.
#[derive(Debug)]
pub struct Connections {
    total_cap: usize,
    per_source: usize,
    v4_prefix: u8,
    v6_prefix: u8,
    open: Mutex<(usize, HashMap<IpNet, usize>)>,
    refused_total: AtomicU64,
    refused_per_source: AtomicU64,
    refused_crowded: AtomicU64,
    accepted: AtomicU64,
}

/// One open connection's place; given back when dropped.
#[derive(Debug)]
pub struct Slot {
    of: Arc<Connections>,
    source: IpNet,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.of.lock();
        open.0 = open.0.saturating_sub(1);
        if let Some(n) = open.1.get_mut(&self.source) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.1.remove(&self.source);
            }
        }
    }
}

impl Connections {
    pub fn new(total_cap: usize, per_source: usize, v4_prefix: u8, v6_prefix: u8) -> Arc<Self> {
        Arc::new(Self {
            total_cap,
            per_source,
            v4_prefix,
            v6_prefix,
            open: Mutex::new((0, HashMap::new())),
            refused_total: AtomicU64::new(0),
            refused_per_source: AtomicU64::new(0),
            refused_crowded: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (usize, HashMap<IpNet, usize>)> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The source `ip` counts against: its prefix (an IPv4-mapped IPv6
    /// address counts as the IPv4 one).
    pub fn source(&self, ip: IpAddr) -> IpNet {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        let prefix = match ip {
            IpAddr::V4(_) => self.v4_prefix,
            IpAddr::V6(_) => self.v6_prefix,
        };
        IpNet::new(ip, prefix).map_or_else(|_| IpNet::from(ip), |n| n.trunc())
    }

    /// A place for a connection from `ip`, or which cap it is over.
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<Slot, Over> {
        let source = self.source(ip);
        let mut open = self.lock();
        if open.0 >= self.total_cap {
            self.refused_total.fetch_add(1, Ordering::Relaxed);
            return Err(Over::Total);
        }
        let total = open.0;
        let n = open.1.entry(source).or_insert(0);
        if *n >= self.per_source {
            self.refused_per_source.fetch_add(1, Ordering::Relaxed);
            return Err(Over::PerSource);
        }
        if total >= self.total_cap - self.total_cap / 4 && *n >= FEW {
            self.refused_crowded.fetch_add(1, Ordering::Relaxed);
            return Err(Over::Crowded);
        }
        *n += 1;
        open.0 += 1;
        self.accepted.fetch_add(1, Ordering::Relaxed);
        Ok(Slot {
            of: Arc::clone(self),
            source,
        })
    }

    pub fn open(&self) -> usize {
        self.lock().0
    }

    pub fn total_cap(&self) -> usize {
        self.total_cap
    }

    pub fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::Relaxed)
    }

    /// Connections closed at once, by the cap they were over.
    pub fn refused(&self) -> [(Over, u64); 3] {
        [
            (Over::Total, self.refused_total.load(Ordering::Relaxed)),
            (
                Over::PerSource,
                self.refused_per_source.load(Ordering::Relaxed),
            ),
            (Over::Crowded, self.refused_crowded.load(Ordering::Relaxed)),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_over_its_cap_is_refused_and_others_are_not() {
        let c = Connections::new(5, 2, 32, 64);
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        let s1 = c.admit(a).unwrap();
        let _s2 = c.admit(a).unwrap();
        assert_eq!(c.admit(a).unwrap_err(), Over::PerSource);
        let _b1 = c.admit(b).unwrap();
        drop(s1);
        let _s3 = c.admit(a).expect("a slot given back is free again");
        assert_eq!(c.open(), 3);
        assert_eq!(c.refused()[1].1, 1);
    }

    #[test]
    fn a_few_sources_under_their_caps_cannot_take_the_last_quarter() {
        // 8 places, 4 per source: two sources fill 6 (three quarters),
        // then only a source holding fewer than 2 gets in.
        let c = Connections::new(8, 4, 32, 64);
        let a = IpAddr::from([203, 0, 113, 1]);
        let b = IpAddr::from([203, 0, 113, 2]);
        let mut held = Vec::new();
        for _ in 0..3 {
            held.push(c.admit(a).unwrap());
            held.push(c.admit(b).unwrap());
        }
        assert_eq!(c.admit(a).unwrap_err(), Over::Crowded);
        assert_eq!(c.admit(b).unwrap_err(), Over::Crowded);
        let valid = IpAddr::from([198, 51, 100, 7]);
        held.push(c.admit(valid).expect("a new source gets in"));
        held.push(c.admit(valid).expect("and a second of its own"));
        assert_eq!(
            c.admit(valid).unwrap_err(),
            Over::Total,
            "every place taken"
        );
        assert_eq!(c.refused()[2].1, 2);
    }

    #[test]
    fn the_total_cap_holds_across_sources() {
        let c = Connections::new(3, 10, 32, 64);
        let slots: Vec<_> = (1..=3)
            .map(|i| c.admit(IpAddr::from([198, 51, 100, i])).unwrap())
            .collect();
        assert_eq!(
            c.admit(IpAddr::from([198, 51, 100, 9])).unwrap_err(),
            Over::Total
        );
        drop(slots);
        assert_eq!(c.open(), 0);
        assert!(c.admit(IpAddr::from([198, 51, 100, 9])).is_ok());
    }

    #[test]
    fn an_ipv6_64_is_one_source_and_mapped_ipv4_is_ipv4() {
        let c = Connections::new(100, 1, 24, 64);
        let _a = c.admit("2001:db8:1:2::1".parse().unwrap()).unwrap();
        assert_eq!(
            c.admit("2001:db8:1:2:ffff::9".parse().unwrap())
                .unwrap_err(),
            Over::PerSource
        );
        assert!(c.admit("2001:db8:1:3::1".parse().unwrap()).is_ok());
        let _v4 = c.admit("203.0.113.7".parse().unwrap()).unwrap();
        assert_eq!(
            c.admit("::ffff:203.0.113.200".parse().unwrap())
                .unwrap_err(),
            Over::PerSource,
            "the same /24, written as IPv4-mapped IPv6"
        );
    }

    #[test]
    fn the_descriptor_limit_caps_the_total_and_leaves_the_reserve() {
        assert_eq!(total_cap(512, Some(128)), 64);
        assert_eq!(total_cap(512, Some(1024)), 512);
        assert_eq!(total_cap(512, Some(40)), 8);
        assert_eq!(total_cap(512, None), 512);
        assert!(descriptor_limit().is_some_and(|l| l > 0));
    }
}
