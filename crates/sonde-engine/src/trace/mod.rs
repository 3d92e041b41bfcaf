//! A path trace: ICMP / ICMPv6 echo requests sent with a growing TTL /
//! hop limit, each hop's answer read with the probe's header as the hop
//! quoted it (`answer`).
//!
//! - Every probe of a trace is the same flow: one echo identifier, and a
//!   checksum kept the same by two bytes of the payload that make up for
//!   the sequence number (Paris traceroute's rule for ICMP), so a load
//!   balancer that hashes the ICMP header sends every probe one way.
//! - Up to 16 probes are in flight at once, as traceroute's default: each
//!   router gets only its own TTL's probes (a hop's `-q` at once, within
//!   a router's ICMP burst allowance), and a hop is given as soon as its
//!   probes are answered or timed out, in order.
//! - A raw socket is needed (root or CAP_NET_RAW): a datagram ICMP socket
//!   delivers no errors with their quotations.

pub mod answer;
pub mod mda;
pub mod mtu;
pub mod tcp_probe;
pub mod test;
pub mod udp_probe;

use crate::ping::echo::checksum;
use crate::EngineError;
use answer::{AnswerKind, Quoted};
use socket2::{Domain, Protocol, Socket, Type};
use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How a trace runs.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceOptions {
    /// The first TTL / hop limit probed.
    pub first_hop: u8,
    /// The last.
    pub max_hops: u8,
    /// Probes per hop.
    pub queries: u8,
    /// How long a probe waits for its answer.
    pub wait: Duration,
    /// The TOS / traffic class byte the probes carry (DSCP << 2).
    pub tos: u8,
    /// What the probes are.
    pub probes: ProbeKind,
}

/// What a trace sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProbeKind {
    /// ICMP / ICMPv6 echo requests.
    #[default]
    Icmp,
    /// UDP to port 33434 (Paris traceroute's).
    Udp,
    /// TCP SYNs to this port.
    Tcp(u16),
}

impl Default for TraceOptions {
    fn default() -> Self {
        Self {
            first_hop: 1,
            max_hops: 30,
            queries: 3,
            wait: Duration::from_secs(1),
            tos: 0,
            probes: ProbeKind::Icmp,
        }
    }
}

/// One probe's outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    /// Who answered, how long it took, what kind of answer.
    pub from: IpAddr,
    pub rtt: Duration,
    pub kind: AnswerKind,
    /// The probe's header as that hop quoted it (none for an echo reply).
    pub quoted: Option<Quoted>,
    /// The flow (UDP source port) of a multipath trace's probe.
    pub flow: Option<u16>,
}

/// One hop: its TTL, and each probe's outcome (`None`: no answer within
/// the wait).
#[derive(Debug, Clone, PartialEq)]
pub struct Hop {
    pub ttl: u8,
    pub probes: Vec<Option<Probe>>,
}

fn denied(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM))
}

/// The raw ICMP socket of `target`'s family, as a datagram socket for its
/// send and receive calls (std's `send_to` and `recv_from` are those of
/// any datagram socket).
pub(super) fn open(target: IpAddr) -> Result<UdpSocket, EngineError> {
    let (domain, proto) = match target {
        IpAddr::V6(_) => (Domain::IPV6, Protocol::ICMPV6),
        IpAddr::V4(_) => (Domain::IPV4, Protocol::ICMPV4),
    };
    match Socket::new(domain, Type::RAW, Some(proto)) {
        Ok(s) => Ok(s.into()),
        Err(e) if denied(&e) => Err(EngineError::Io {
            context: "opening a raw ICMP socket (a trace reads the ICMP errors of every \
                      hop: run it as root or give sonde CAP_NET_RAW)",
            source: e,
        }),
        Err(source) => Err(EngineError::Io {
            context: "opening a raw ICMP socket",
            source,
        }),
    }
}

/// The echo request of probe `seq`: its payload's first two bytes make
/// the checksum the same for every sequence number (the flow stays one).
fn probe(v6: bool, id: u16, seq: u16) -> Vec<u8> {
    let mut p = crate::ping::echo::request(v6, id, seq, 16, 0);
    // Keep the one's complement sum of sequence + filler constant.
    let filler = 0xffffu16.wrapping_sub(seq);
    p[8..10].copy_from_slice(&filler.to_be_bytes());
    if !v6 {
        p[2..4].copy_from_slice(&[0, 0]);
        let c = checksum(&p);
        p[2..4].copy_from_slice(&c.to_be_bytes());
    }
    p
}

pub(super) fn set_hop_limit(sock: &UdpSocket, v6: bool, ttl: u8) -> io::Result<()> {
    let s = socket2::SockRef::from(sock);
    if v6 {
        s.set_unicast_hops_v6(u32::from(ttl))
    } else {
        s.set_ttl_v4(u32::from(ttl))
    }
}

/// Probes in flight at once, as traceroute's default (`-N 16`): each
/// router still gets only its own TTL's probes.
const WINDOW: usize = 16;

/// Traces the path to `target`, giving each hop to `on_hop` in order as
/// soon as its probes are answered or timed out; ends at the target, at a
/// hop that says it is unreachable, at `max_hops`, or when `stop` is set.
pub fn trace(
    target: IpAddr,
    opts: &TraceOptions,
    stop: &AtomicBool,
    on_hop: &mut dyn FnMut(&Hop),
) -> Result<Vec<Hop>, EngineError> {
    let v6 = target.is_ipv6();
    let sock = open(target)?;
    let s = socket2::SockRef::from(&sock);
    let set_tos = if v6 {
        s.set_tclass_v6(u32::from(opts.tos))
    } else {
        s.set_tos_v4(u32::from(opts.tos))
    };
    set_tos.map_err(EngineError::io("setting the probes' DSCP"))?;
    let udp = match opts.probes {
        ProbeKind::Udp => Some(
            udp_probe::UdpProbes::open(target, opts.tos)
                .map_err(EngineError::io("opening the UDP probes' socket"))?,
        ),
        _ => None,
    };
    let tcp = match opts.probes {
        ProbeKind::Tcp(port) => Some(
            tcp_probe::TcpProbes::open(target, port, opts.tos)
                .map_err(EngineError::io("opening the TCP probes' raw sockets"))?,
        ),
        _ => None,
    };
    // What the answers are matched by: the echo identifier, or the UDP
    // or TCP probes' source port.
    let id = match (&udp, &tcp) {
        (Some(u), _) => u.port(),
        (_, Some(t)) => t.port(),
        _ => (std::process::id() as u16) ^ 0x7a00,
    };
    let dest = SocketAddr::new(target, 0);
    let first = opts.first_hop.max(1);
    let queries = usize::from(opts.queries.max(1));
    let ttls: Vec<u8> = (first..=opts.max_hops).collect();
    // Probe k (sequence number k + 1) is query k % queries of TTL
    // ttls[k / queries]; its outcome once known.
    let total = ttls.len() * queries;
    let mut outcome: Vec<Option<Option<Probe>>> = vec![None; total];
    let mut sent_at: Vec<Option<Instant>> = vec![None; total];
    let mut next = 0;
    // The index (in `ttls`) of the first hop that ended the path.
    let mut end: Option<usize> = None;
    let mut emitted = 0;
    let mut hops = Vec::new();
    let mut buf = vec![0u8; 2048];
    // The target's TCP answers are read on a thread of their own, each
    // timed as it comes, while this one reads the hops' ICMP errors.
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let tcp_rx = tcp.as_ref().map(|t| {
            let (tx, rx) = std::sync::mpsc::channel();
            let done = &done;
            scope.spawn(move || tcp_reader(&t.recv, id, done, &tx));
            rx
        });
        let outcome_of = || -> Result<Vec<Hop>, EngineError> {
            loop {
                if stop.load(Ordering::Relaxed) {
                    return Ok(hops);
                }
                let limit = end.map_or(total, |e| (e + 1) * queries);
                let in_flight = (0..next.min(limit))
                    .filter(|&k| outcome[k].is_none())
                    .count();
                if next < limit && in_flight < WINDOW {
                    let ttl = ttls[next / queries];
                    let seq = next as u16 + 1;
                    // Timed from before the send: on a short path the
                    // answer can come before the call returns.
                    let t0 = Instant::now();
                    let sent = match (&udp, &tcp) {
                        (Some(u), _) => u.send(ttl, seq),
                        (_, Some(t)) => t.send(ttl, seq),
                        _ => set_hop_limit(&sock, v6, ttl)
                            .and_then(|()| sock.send_to(&probe(v6, id, seq), dest).map(drop)),
                    };
                    sent.map_err(EngineError::io("sending a trace probe"))?;
                    sent_at[next] = Some(t0);
                    next += 1;
                    continue;
                }
                // Probes past their wait have no answer.
                let now = Instant::now();
                for k in 0..next.min(limit) {
                    if outcome[k].is_none() && sent_at[k].is_some_and(|t| now >= t + opts.wait) {
                        outcome[k] = Some(None);
                    }
                }
                // Each hop whose probes are all known, in order.
                while emitted < limit / queries {
                    let probes = &outcome[emitted * queries..(emitted + 1) * queries];
                    if probes.iter().any(Option::is_none) {
                        break;
                    }
                    let hop = Hop {
                        ttl: ttls[emitted],
                        probes: probes.iter().map(|p| p.clone().flatten()).collect(),
                    };
                    on_hop(&hop);
                    hops.push(hop);
                    emitted += 1;
                }
                if emitted * queries >= limit {
                    return Ok(hops);
                }
                // The earliest deadline of a probe in flight bounds the wait.
                let until = (0..next.min(limit))
                    .filter(|&k| outcome[k].is_none())
                    .filter_map(|k| sent_at[k].map(|t| t + opts.wait))
                    .min()
                    .unwrap_or(now);
                let Some((seq, answer, at)) = receive(&sock, tcp_rx.as_ref(), &mut buf, id, until)?
                else {
                    continue;
                };
                let k = usize::from(seq).wrapping_sub(1);
                let (Some(slot), Some(Some(sent))) = (outcome.get(k), sent_at.get(k)) else {
                    continue;
                };
                if slot.is_some() {
                    continue;
                }
                let ends = matches!(
                    answer.0,
                    AnswerKind::EchoReply
                        | AnswerKind::PortUnreachable
                        | AnswerKind::TcpReply { .. }
                        | AnswerKind::Unreachable(_)
                );
                outcome[k] = Some(Some(Probe {
                    from: answer.1,
                    rtt: at.duration_since(*sent),
                    kind: answer.0,
                    quoted: answer.2,
                    flow: None,
                }));
                if ends {
                    let hop = k / queries;
                    end = Some(end.map_or(hop, |e| e.min(hop)));
                }
            }
        };
        let result = outcome_of();
        done.store(true, Ordering::Relaxed);
        result
    })
}

/// What a reader got: the probe's sequence number, the answer and who
/// sent it, the quotation, and when it came.
pub(super) type Got = (u16, (AnswerKind, IpAddr, Option<Quoted>), Instant);

/// Reads the target's SYN-ACKs and RSTs to port `id` until `done`.
fn tcp_reader(sock: &UdpSocket, id: u16, done: &AtomicBool, tx: &std::sync::mpsc::Sender<Got>) {
    let mut buf = vec![0u8; 2048];
    let _ = sock.set_read_timeout(Some(Duration::from_millis(50)));
    while !done.load(Ordering::Relaxed) {
        let Ok((n, from)) = sock.recv_from(&mut buf) else {
            continue;
        };
        let at = Instant::now();
        if let Some(a) = answer::parse_tcp(&buf[..n], from.is_ipv4()).filter(|a| a.id == id) {
            if tx.send((a.seq, (a.kind, from.ip(), None), at)).is_err() {
                return;
            }
        }
    }
}

/// The next answer to one of this trace's probes (identifier `id`)
/// before `until`: a hop's ICMP error or the target's echo reply from the
/// ICMP socket, or (TCP probes) the target's answer its reader got.
fn receive(
    icmp: &UdpSocket,
    tcp: Option<&std::sync::mpsc::Receiver<Got>>,
    buf: &mut [u8],
    id: u16,
    until: Instant,
) -> Result<Option<Got>, EngineError> {
    Ok(receive_any(icmp, tcp, buf, &|a| a == id, until)?.map(|(_, got)| got))
}

/// The next answer before `until` to a probe whose identifier (echo
/// identifier, or UDP / TCP source port) `accept`s, with that identifier.
pub(super) fn receive_any(
    icmp: &UdpSocket,
    tcp: Option<&std::sync::mpsc::Receiver<Got>>,
    buf: &mut [u8],
    accept: &dyn Fn(u16) -> bool,
    until: Instant,
) -> Result<Option<(u16, Got)>, EngineError> {
    loop {
        // The TCP reader matched its own port.
        if let Some(got) = tcp.and_then(|rx| rx.try_recv().ok()) {
            return Ok(Some((0, got)));
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(None);
        }
        // With a TCP reader beside, look at its answers every 2 ms.
        let slice = if tcp.is_some() {
            left.min(Duration::from_millis(2))
        } else {
            left
        };
        icmp.set_read_timeout(Some(slice))
            .map_err(EngineError::io("waiting for an answer"))?;
        let (n, from) = match icmp.recv_from(buf) {
            Ok(got) => got,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(source) => {
                return Err(EngineError::Io {
                    context: "reading an answer",
                    source,
                })
            }
        };
        let at = Instant::now();
        if let Some(a) = answer::parse(from.ip(), &buf[..n]).filter(|a| accept(a.id)) {
            return Ok(Some((a.id, (a.seq, (a.kind, from.ip(), a.quoted), at))));
        }
    }
}

/// Waits up to `wait` after `sent` for the answer to probe `seq`, passing
/// over anything else the raw socket sees.
pub(super) fn wait_for(
    sock: &UdpSocket,
    buf: &mut [u8],
    id: u16,
    seq: u16,
    sent: Instant,
    wait: Duration,
) -> Result<Option<Probe>, EngineError> {
    while let Some((got, (kind, from, quoted), at)) = receive(sock, None, buf, id, sent + wait)? {
        if got == seq {
            return Ok(Some(Probe {
                from,
                rtt: at.duration_since(sent),
                kind,
                quoted,
                flow: None,
            }));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_probe_of_a_trace_has_one_checksum() {
        // The flow a load balancer hashes (RFC 792's header: type, code,
        // checksum, identifier) is one for the whole trace.
        let sums: std::collections::BTreeSet<[u8; 2]> = (1..200u16)
            .map(|seq| {
                let p = probe(false, 0x7a01, seq);
                assert_eq!(checksum(&p), 0, "a valid checksum");
                [p[2], p[3]]
            })
            .collect();
        assert_eq!(sums.len(), 1, "{sums:?}");
    }
}
