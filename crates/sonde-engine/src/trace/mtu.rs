//! The path MTU, tracepath's way: echo requests the size of a packet the
//! path may carry, sent whole (Don't Fragment; IPv6 never fragments on
//! the way), to the target. A hop whose next link is smaller answers
//! Packet Too Big (IPv6) or Fragmentation Needed (IPv4) with that link's
//! MTU; the next probe is that size, until one arrives.
//!
//! A first size this host's own link cannot send is tried again at the
//! sizes links commonly have (1500, 1492, 1480, 1460, 1400, 1280).

use super::answer::AnswerKind;
use crate::EngineError;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// One hop that said the path is smaller past it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MtuStep {
    pub from: IpAddr,
    pub mtu: u32,
}

/// What the probes found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathMtu {
    /// The hops that said so, in the order they did.
    pub steps: Vec<MtuStep>,
    /// The size of the packet that reached the target (its path MTU);
    /// `None` if none did.
    pub mtu: Option<u32>,
}

/// The sizes a first packet too big for this host's own link falls back
/// to.
const COMMON: [u32; 6] = [1500, 1492, 1480, 1460, 1400, 1280];

/// Probes the path MTU to `target`, starting at `start` bytes (the whole
/// IP packet); each probe waits `wait` for its answer.
pub fn path_mtu(
    target: IpAddr,
    start: u32,
    wait: Duration,
    stop: &AtomicBool,
) -> Result<PathMtu, EngineError> {
    let v6 = target.is_ipv6();
    let sock = super::open(target)?;
    crate::sys::probe_path_mtu(&sock, v6).map_err(EngineError::io("sending probes whole"))?;
    let header = if v6 { 40 } else { 20 };
    let floor = if v6 { 1280 } else { 68 };
    let id = (std::process::id() as u16) ^ 0x6d00;
    let dest = SocketAddr::new(target, 0);
    let mut buf = vec![0u8; 2048];
    let mut out = PathMtu {
        steps: Vec::new(),
        mtu: None,
    };
    let mut size = start;
    let mut silent = 0;
    for seq in 1..=32u16 {
        if stop.load(Ordering::Relaxed) || size < floor {
            break;
        }
        let payload = size.saturating_sub(header + 8) as usize;
        let packet = crate::ping::echo::request(v6, id, seq, payload, 0);
        let sent = Instant::now();
        match sock.send_to(&packet, dest) {
            Ok(_) => {}
            // Too big for this host's own link: the next common size.
            Err(e) if e.raw_os_error() == Some(libc::EMSGSIZE) => {
                match COMMON.iter().find(|&&c| c < size) {
                    Some(&c) => {
                        size = c;
                        continue;
                    }
                    None => break,
                }
            }
            Err(source) => {
                return Err(EngineError::Io {
                    context: "sending a path MTU probe",
                    source,
                })
            }
        }
        match super::wait_for(&sock, &mut buf, id, seq, sent, wait)? {
            Some(p) if p.kind == AnswerKind::EchoReply => {
                out.mtu = Some(size);
                break;
            }
            Some(p) => match p.kind {
                AnswerKind::TooBig(mtu) if mtu >= floor && mtu < size => {
                    out.steps.push(MtuStep { from: p.from, mtu });
                    size = mtu;
                }
                // A hop that names no smaller size: nothing to go on.
                _ => break,
            },
            // Lost, or dropped without a word (an ICMP black hole):
            // tried twice, then given up.
            None => {
                silent += 1;
                if silent == 2 {
                    break;
                }
            }
        }
    }
    Ok(out)
}
