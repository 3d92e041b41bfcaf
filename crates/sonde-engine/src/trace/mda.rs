//! A multipath trace: the Multipath Detection Algorithm of Paris
//! traceroute (Augustin et al., "Multipath tracing with Paris
//! traceroute", 2007; stopping points after Veitch et al., 2009), hop by
//! hop. Each flow is a UDP socket of its own source port (a load
//! balancer hashes the ports with the addresses), and every probe of a
//! flow, at every TTL, is that flow: so flow *i* takes the same way at
//! each hop, as a packet of that flow would.
//!
//! At each TTL, probes go out on new flows until `n_k` probes have been
//! answered while `k` interfaces answered, `n_k` being the fewest probes that,
//! all landing among `k` interfaces, leave less than 5 % chance of a
//! (k+1)-th one, equally likely, never seen (6 for one interface, 11 for
//! two, 16 for three). This is per hop (MDA-Lite's node control, without
//! the links between the hops): it finds every interface of a hop that
//! takes its share of flows evenly, which is what per-flow ECMP does. A
//! hop is given up after two rounds with no answer at all: a silent
//! router, or one whose ICMP rate limit drops what it would have said
//! (its interfaces found so far are kept, with fewer answers than `n_k`).

use super::udp_probe::UdpProbes;
use super::{answer::AnswerKind, open, receive_any, Hop, Probe, TraceOptions};
use crate::EngineError;
use std::collections::{BTreeSet, HashMap};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// The chance of missing an interface a hop's enumeration accepts by
/// default (95 % confidence).
pub const ALPHA: f64 = 0.05;

/// The most flows a trace opens: enough for 15 interfaces at one hop
/// (n_15 = 90 at 95 %).
pub const MAX_FLOWS: usize = 96;

/// The chance that `n` probes, each landing on one of `m` interfaces with
/// equal chance, miss one of them at least (inclusion–exclusion).
fn miss(m: usize, n: usize) -> f64 {
    let mut p = 0.0;
    let mut choose = 1.0;
    for j in 1..m {
        choose = choose * (m - j + 1) as f64 / j as f64;
        let term = choose * ((m - j) as f64 / m as f64).powi(n as i32);
        p += if j % 2 == 1 { term } else { -term };
    }
    p
}

/// `n_k`: how many probes must land among the `k` interfaces seen so far
/// to rule out a (k+1)-th with chance `1 - alpha`. `n_0` is 1.
pub fn stopping_point(k: usize, alpha: f64) -> usize {
    if k == 0 {
        return 1;
    }
    (1..10_000)
        .find(|&n| miss(k + 1, n) <= alpha)
        .unwrap_or(10_000)
}

/// The probe of flow `flow` at `ttl`: its number in the UDP checksum.
fn seq_of(ttl: u8, flow: usize) -> u16 {
    u16::from(ttl) * 128 + flow as u16 + 1
}

/// Traces the load-balanced paths to `target` hop by hop (UDP probes),
/// each hop's interfaces enumerated until the chance of one missed is
/// under `alpha`,
/// giving each hop to `on_hop` as it is done: each probe with its flow.
/// Ends at the hop where a probe reached the target or was refused, at
/// `max_hops`, or when `stop` is set.
pub fn multipath(
    target: IpAddr,
    opts: &TraceOptions,
    alpha: f64,
    stop: &AtomicBool,
    on_hop: &mut dyn FnMut(&Hop),
) -> Result<Vec<Hop>, EngineError> {
    let icmp = open(target)?;
    let mut flows: Vec<UdpProbes> = Vec::new();
    let mut index: HashMap<u16, usize> = HashMap::new();
    let mut buf = vec![0u8; 2048];
    let mut hops = Vec::new();
    let least = usize::from(opts.queries.max(1));
    for ttl in opts.first_hop.max(1)..=opts.max_hops {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let mut probes: Vec<Option<Probe>> = Vec::new();
        // Rounds in a row that brought no answer: two end the hop (a
        // silent router, or one whose ICMP rate limit holds: Linux answers
        // a burst of 6, then one a second).
        let mut fruitless = 0;
        loop {
            let seen: BTreeSet<IpAddr> = probes.iter().flatten().map(|p| p.from).collect();
            let answered = probes.iter().flatten().count();
            let want = stopping_point(seen.len(), alpha).max(least);
            if answered >= want
                || probes.len() >= MAX_FLOWS
                || fruitless >= 2
                || stop.load(Ordering::Relaxed)
            {
                break;
            }
            // New flows, each sent once at this TTL, for the answers
            // still wanted.
            let first = probes.len();
            let last = (first + want - answered).min(MAX_FLOWS);
            let mut sent_at = Vec::new();
            for f in first..last {
                if f == flows.len() {
                    let u = UdpProbes::open(target, opts.tos)
                        .map_err(EngineError::io("opening a multipath flow's UDP socket"))?;
                    index.insert(u.port(), f);
                    flows.push(u);
                }
                let t0 = Instant::now();
                flows[f]
                    .send(ttl, seq_of(ttl, f))
                    .map_err(EngineError::io("sending a multipath probe"))?;
                sent_at.push(t0);
                probes.push(None);
            }
            let until = Instant::now() + opts.wait;
            let mut got_one = false;
            let accept = |port: u16| {
                index
                    .get(&port)
                    .is_some_and(|&f| (first..last).contains(&f))
            };
            while probes[first..last].iter().any(Option::is_none) {
                let Some((port, (seq, (kind, from, quoted), at))) =
                    receive_any(&icmp, None, &mut buf, &accept, until)?
                else {
                    break;
                };
                let f = index[&port];
                if seq != seq_of(ttl, f) || probes[f].is_some() {
                    continue;
                }
                got_one = true;
                probes[f] = Some(Probe {
                    from,
                    rtt: at.duration_since(sent_at[f - first]),
                    kind,
                    quoted,
                    flow: Some(port),
                });
            }
            fruitless = if got_one { 0 } else { fruitless + 1 };
        }
        let ends = probes.iter().flatten().any(|p| {
            matches!(
                p.kind,
                AnswerKind::PortUnreachable | AnswerKind::Unreachable(_)
            )
        });
        let hop = Hop { ttl, probes };
        on_hop(&hop);
        hops.push(hop);
        if ends {
            break;
        }
    }
    Ok(hops)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stopping_points_are_the_mda_table_at_95_percent() {
        // Veitch et al.'s n_k for a 5 % failure bound per hop.
        let n: Vec<usize> = (1..=6).map(|k| stopping_point(k, ALPHA)).collect();
        assert_eq!(n, [6, 11, 16, 21, 27, 33]);
        assert_eq!(stopping_point(0, ALPHA), 1);
        assert_eq!(stopping_point(15, ALPHA), 90);
        assert!(stopping_point(15, ALPHA) <= MAX_FLOWS);
    }

    #[test]
    fn each_probe_of_a_trace_has_its_own_number() {
        let all: BTreeSet<u16> = (1..=255u8)
            .flat_map(|t| (0..MAX_FLOWS).map(move |f| seq_of(t, f)))
            .collect();
        assert_eq!(all.len(), 255 * MAX_FLOWS);
        assert!(all.iter().all(|&s| (1..0xffff).contains(&s)));
    }
}
