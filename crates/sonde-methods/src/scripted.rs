//! A scripted path for the methods' unit tests: a [`Runner`] that answers
//! each tcp or udp spec with the figures a path of known capacity and
//! limiter would give, computed, not measured. It opens no socket. The
//! lab tests run the same methods over real namespaces.
//!
//! Each direction has a limiter of a class (none, shaper with a queue,
//! policer, punisher) at a rate counted on bytes of a chosen layer
//! (`overhead_bytes` beyond the UDP payload), a base one-way delay, an
//! unpaced sender's top rate and a noise: each trial sees the limiter's
//! rate moved by a Gaussian of `noise_pct` (seeded, so runs repeat).
//! Host names resolve to [`ScriptedPath::addresses`], literal addresses
//! to themselves, without a lookup. Each run ends with its `Finished`
//! event, as a real runner's does.

use sonde_model::udp_report::OneWayDelay;
use sonde_model::{
    Direction, Event, Figures, HostEnv, IpFamily, MethodEvent, PeerKind, Summary, TestEnv,
    TestResult, TestSpec, Timestamp,
};
use sonde_run::{Events, RunError, Runner, Stop};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::{Arc, Mutex};

/// Runs `body` with a hub of events and returns what it returned with
/// the method events it heard, in order (its trials' own are left out).
pub fn method_events<T>(body: impl FnOnce(&Events) -> T) -> (T, Vec<MethodEvent>) {
    let events = Events::new();
    let rx = events.subscribe();
    let out = body(&events);
    events.close();
    let heard = rx
        .iter()
        .filter_map(|e| match e {
            Event::Method(m) => Some(m),
            _ => None,
        })
        .collect();
    (out, heard)
}

/// A runner that stops `stop` once its `after`-th run has ended (as a
/// Ctrl-C between trials would).
pub struct StopAfter<'a> {
    pub inner: &'a dyn Runner,
    pub stop: &'a Stop,
    pub after: usize,
    runs: Mutex<usize>,
}

impl<'a> StopAfter<'a> {
    pub fn new(inner: &'a dyn Runner, stop: &'a Stop, after: usize) -> Self {
        Self {
            inner,
            stop,
            after,
            runs: Mutex::new(0),
        }
    }
}

impl Runner for StopAfter<'_> {
    fn run(&self, spec: &TestSpec, stop: &Stop, events: &Events) -> Result<TestResult, RunError> {
        let r = self.inner.run(spec, stop, events);
        let mut runs = self.runs.lock().unwrap();
        *runs += 1;
        if *runs >= self.after {
            self.stop.stop();
        }
        r
    }

    fn resolve(&self, host: &str, family: IpFamily) -> Result<Vec<IpAddr>, RunError> {
        self.inner.resolve(host, family)
    }
}

/// What limits one direction of the scripted path.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Limit {
    None,
    /// A token bucket with a FIFO of `queue_ms` at the rate.
    Shaper {
        queue_ms: f64,
    },
    /// A token bucket that drops the excess at once.
    Policer,
    /// Above the rate only `fraction` of the offered load passes.
    Punisher {
        fraction: f64,
    },
}

/// One direction.
#[derive(Debug, Clone, Copy)]
pub struct PathDir {
    pub limit: Limit,
    /// The limiter's rate in bits/s of (payload + UDP/IP headers +
    /// `l2_bytes`) per packet; ignored for `Limit::None`.
    pub rate_bps: f64,
    /// Bytes per packet below IP that the limiter counts (14 for a shaper
    /// on an Ethernet interface, 0 for a router's policer).
    pub l2_bytes: u32,
    pub base_delay_ms: f64,
    /// The sender's top rate (payload bits/s) when unpaced or asked more.
    pub sender_max_bps: f64,
    /// Standard deviation of the limiter's rate per trial, in percent.
    pub noise_pct: f64,
}

impl PathDir {
    pub fn new(limit: Limit, rate_bps: f64) -> Self {
        Self {
            limit,
            rate_bps,
            l2_bytes: 0,
            base_delay_ms: 10.0,
            sender_max_bps: 10e9,
            noise_pct: 0.0,
        }
    }
}

/// The path: one [`PathDir`] each way, and a log of what it was asked.
pub struct ScriptedPath {
    pub forward: PathDir,
    pub reverse: PathDir,
    /// Extra delay of IPv4 over IPv6 (to tell families apart in tests).
    pub v4_extra_delay_ms: f64,
    /// What every host name resolves to (both families by default).
    pub addresses: Vec<IpAddr>,
    rng: Mutex<u64>,
    asked: Mutex<Vec<TestSpec>>,
}

impl ScriptedPath {
    pub fn new(forward: PathDir, reverse: PathDir) -> Self {
        Self {
            forward,
            reverse,
            v4_extra_delay_ms: 0.0,
            addresses: vec![
                IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1)),
                IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)),
            ],
            rng: Mutex::new(0x9e37_79b9_7f4a_7c15),
            asked: Mutex::new(Vec::new()),
        }
    }

    /// The same in both directions.
    pub fn symmetric(dir: PathDir) -> Self {
        Self::new(dir, dir)
    }

    /// How many tests it ran.
    pub fn trials(&self) -> usize {
        self.asked.lock().unwrap().len()
    }

    /// The specs it was asked to run, in order.
    pub fn asked(&self) -> Vec<TestSpec> {
        self.asked.lock().unwrap().clone()
    }

    /// A standard normal draw (Box–Muller over an xorshift).
    fn gaussian(&self) -> f64 {
        let mut s = self.rng.lock().unwrap();
        let mut next = || {
            *s ^= *s << 13;
            *s ^= *s >> 7;
            *s ^= *s << 17;
            ((*s >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        };
        let (u1, u2) = (next(), next());
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    fn dir(&self, d: Direction) -> &PathDir {
        match d {
            Direction::Reverse => &self.reverse,
            _ => &self.forward,
        }
    }
}

/// IP + UDP (or TCP with timestamps) header bytes of `family`.
fn ip_transport_bytes(family: IpFamily, tcp: bool) -> f64 {
    let ip = if family == IpFamily::V4 { 20.0 } else { 40.0 };
    ip + if tcp { 32.0 } else { 8.0 }
}

/// What a direction delivers of `offered_bps` payload in packets of
/// `payload` bytes over `secs`.
struct Outcome {
    sent_bps: f64,
    delivered_bps: f64,
    loss: f64,
    delay_avg_ms: f64,
    delay_p99_ms: f64,
}

fn carry(
    dir: &PathDir,
    noise: f64,
    offered_bps: f64,
    payload: f64,
    hdr: f64,
    secs: f64,
) -> Outcome {
    let sent = offered_bps.min(dir.sender_max_bps);
    let per_packet = payload + hdr + f64::from(dir.l2_bytes);
    let wire = sent * per_packet / payload;
    let limit = dir.rate_bps * (1.0 + noise * dir.noise_pct / 100.0);
    let base = dir.base_delay_ms;
    let clear = Outcome {
        sent_bps: sent,
        delivered_bps: sent,
        loss: 0.0,
        delay_avg_ms: base,
        delay_p99_ms: base + 0.05,
    };
    if matches!(dir.limit, Limit::None) || wire <= limit {
        return clear;
    }
    let share = limit / wire;
    match dir.limit {
        Limit::None => clear,
        Limit::Policer => Outcome {
            delivered_bps: sent * share,
            loss: 1.0 - share,
            ..clear
        },
        Limit::Punisher { fraction } => Outcome {
            delivered_bps: sent * fraction,
            loss: 1.0 - fraction,
            ..clear
        },
        Limit::Shaper { queue_ms } => {
            // The queue grows at (wire − limit) until it holds queue_ms.
            let fill_s = queue_ms / 1000.0 * limit / (wire - limit);
            if fill_s >= secs {
                let rise = (wire - limit) * secs / limit * 1000.0;
                Outcome {
                    // Everything arrives, over the test plus the drain.
                    delivered_bps: sent * secs / (secs + rise / 1000.0),
                    delay_avg_ms: base + rise / 2.0,
                    delay_p99_ms: base + rise * 0.99,
                    ..clear
                }
            } else {
                let queued = limit * queue_ms / 1000.0;
                let lost = ((wire - limit) * secs - queued).max(0.0) / (wire * secs);
                Outcome {
                    delivered_bps: sent * (1.0 - lost) * secs / (secs + queue_ms / 1000.0),
                    loss: lost,
                    delay_avg_ms: base + queue_ms * (1.0 - fill_s / secs / 2.0),
                    delay_p99_ms: base + queue_ms,
                    ..clear
                }
            }
        }
    }
}

fn figures(d: Direction, o: &Outcome, payload: f64, secs: f64, udp: bool) -> Figures {
    let sent_bytes = (o.sent_bps * secs / 8.0) as u64;
    let received_bytes = (o.sent_bps * (1.0 - o.loss) * secs / 8.0) as u64;
    let mut f = Figures {
        direction: Some(d),
        sent_bytes: Some(sent_bytes),
        received_bytes: Some(received_bytes),
        throughput_bps: Some(o.delivered_bps.round() as u64),
        sender_throughput_bps: Some(o.sent_bps.round() as u64),
        ..Figures::default()
    };
    if udp {
        let sent = (sent_bytes as f64 / payload).round() as u64;
        let received = ((sent as f64) * (1.0 - o.loss)).round() as u64;
        f.sent_packets = Some(sent);
        f.received_packets = Some(received);
        f.lost_packets = Some(sent - received);
        f.loss_pct = Some(if sent == 0 {
            0.0
        } else {
            100.0 * (sent - received) as f64 / sent as f64
        });
        f.pdr_pct = Some(100.0 - f.loss_pct.unwrap_or(0.0));
        f.jitter_ms = Some(0.01);
        f.delay = Some(OneWayDelay {
            clock_synced: true,
            min_ms: o.delay_avg_ms.min(o.delay_p99_ms) - 0.01,
            avg_ms: o.delay_avg_ms,
            max_ms: o.delay_p99_ms + 0.1,
            p99_ms: o.delay_p99_ms,
            pdv_p50_ms: 0.01,
            pdv_p99_ms: o.delay_p99_ms - o.delay_avg_ms.min(o.delay_p99_ms),
        });
    } else {
        f.retransmits = Some(if o.loss > 0.0 { 10 } else { 0 });
    }
    f
}

impl Runner for ScriptedPath {
    fn resolve(&self, host: &str, family: IpFamily) -> Result<Vec<IpAddr>, RunError> {
        let literal = host.trim_start_matches('[').trim_end_matches(']').parse();
        let mut addrs: Vec<IpAddr> = match literal {
            Ok(ip) => vec![ip],
            Err(_) => self.addresses.clone(),
        };
        addrs.retain(|a| match family {
            IpFamily::Any => true,
            IpFamily::V4 => a.is_ipv4(),
            IpFamily::V6 => a.is_ipv6(),
        });
        addrs.sort_by_key(IpAddr::is_ipv4);
        if addrs.is_empty() {
            return Err(RunError::Unsupported(format!(
                "{host} has no {family:?} address"
            )));
        }
        Ok(addrs)
    }

    fn run(&self, spec: &TestSpec, stop: &Stop, events: &Events) -> Result<TestResult, RunError> {
        spec.validate()?;
        if stop.is_stopped() {
            return Err(RunError::Interrupted);
        }
        self.asked.lock().unwrap().push(spec.clone());
        let (direction, family, offered, payload, secs, udp) = match spec {
            TestSpec::Udp(s) => {
                let offered = if s.bitrate.bps() == 0 {
                    f64::INFINITY
                } else {
                    s.bitrate.bps() as f64 * f64::from(s.parallel)
                };
                (
                    s.direction,
                    s.family,
                    offered,
                    f64::from(s.length),
                    s.time.as_secs_f64(),
                    true,
                )
            }
            TestSpec::Tcp(s) => {
                // TCP fills what the path carries without loss: model it
                // as offering just the limiter's share (or the sender's
                // top rate), with a 1448-byte segment.
                let per_stream = s.bitrate.map_or(f64::INFINITY, |r| r.bps() as f64);
                let offered = per_stream * f64::from(s.parallel);
                (
                    s.direction,
                    s.family,
                    offered,
                    1448.0,
                    s.time.as_secs_f64(),
                    false,
                )
            }
            TestSpec::Ping(_) | TestSpec::Http(_) | TestSpec::Trace(_) => {
                return Err(RunError::Unsupported(
                    "the scripted path answers tcp and udp only".into(),
                ))
            }
        };
        let hdr = ip_transport_bytes(family, !udp);
        let mut summary = Summary::default();
        for &d in direction.flows() {
            let dir = self.dir(d);
            let noise = self.gaussian();
            let mut o = if udp {
                carry(dir, noise, offered, payload, hdr, secs)
            } else {
                // TCP backs off to what the limiter passes, loss-free.
                let per_packet = payload + hdr + f64::from(dir.l2_bytes);
                let cap = match dir.limit {
                    Limit::None => f64::INFINITY,
                    _ => {
                        dir.rate_bps * (1.0 + noise * dir.noise_pct / 100.0) * payload / per_packet
                    }
                };
                let rate = offered.min(dir.sender_max_bps).min(cap);
                carry(
                    &PathDir {
                        limit: Limit::None,
                        ..*dir
                    },
                    0.0,
                    rate,
                    payload,
                    hdr,
                    secs,
                )
            };
            if family == IpFamily::V4 {
                o.delay_avg_ms += self.v4_extra_delay_ms;
                o.delay_p99_ms += self.v4_extra_delay_ms;
            }
            let f = figures(d, &o, payload, secs, udp);
            match d {
                Direction::Reverse => summary.reverse = Some(f),
                _ => summary.forward = Some(f),
            }
        }
        let env = TestEnv::between(HostEnv::default(), HostEnv::default(), PeerKind::Sonde);
        let mut result = TestResult::new(spec.clone(), env, Timestamp::now());
        result.duration_s = secs;
        result.summary = summary;
        events.emit(Event::Finished(Arc::new(result.clone())));
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_model::{Rate, UdpSpec};
    use std::time::Duration;

    fn udp(rate_bps: u64, length: u32) -> TestSpec {
        UdpSpec {
            host: "path".into(),
            bitrate: Rate::from_bps(rate_bps),
            length,
            time: Duration::from_secs(2),
            ..UdpSpec::default()
        }
        .into()
    }

    fn forward(r: &TestResult) -> Figures {
        r.summary.forward.clone().unwrap()
    }

    #[test]
    fn a_policer_passes_its_rate_of_ip_bytes() {
        let path = ScriptedPath::symmetric(PathDir::new(Limit::Policer, 88e6));
        let run = |bps| {
            path.run(&udp(bps, 1400), &Stop::new(), &Events::new())
                .unwrap()
        };
        assert_eq!(forward(&run(80_000_000)).loss_pct, Some(0.0));
        let f = forward(&run(100_000_000));
        let expected = 88e6 * 1400.0 / 1448.0;
        let got = f.throughput_bps.unwrap() as f64;
        assert!((got - expected).abs() < 1e3, "{got} vs {expected}");
        assert_eq!(path.trials(), 2);
    }

    #[test]
    fn a_shaper_delays_before_it_drops() {
        let dir = PathDir::new(Limit::Shaper { queue_ms: 50.0 }, 9e6);
        let path = ScriptedPath::symmetric(dir);
        let f = forward(
            &path
                .run(&udp(18_000_000, 1400), &Stop::new(), &Events::new())
                .unwrap(),
        );
        assert!(f.loss_pct.unwrap() > 40.0, "{f:?}");
        assert!(f.delay.unwrap().p99_ms > 55.0);
        // Just above the rate, a 2 s trial fills only part of the queue.
        let f = forward(
            &path
                .run(&udp(8_800_000, 1400), &Stop::new(), &Events::new())
                .unwrap(),
        );
        assert_eq!(f.loss_pct, Some(0.0));
        assert!(f.delay.unwrap().p99_ms > 10.5, "{f:?}");
    }

    #[test]
    fn a_punisher_collapses_the_flow() {
        let path = ScriptedPath::symmetric(PathDir::new(Limit::Punisher { fraction: 0.05 }, 88e6));
        let f = forward(
            &path
                .run(&udp(95_000_000, 1400), &Stop::new(), &Events::new())
                .unwrap(),
        );
        assert!((f.pdr_pct.unwrap() - 5.0).abs() < 0.01, "{f:?}");
    }
}
