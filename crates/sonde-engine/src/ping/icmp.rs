//! The ICMP / ICMPv6 echo socket: an unprivileged datagram ICMP socket
//! where the system allows one (`net.ipv4.ping_group_range`), a raw socket
//! otherwise (root or CAP_NET_RAW).

use super::echo::{self, ECHO_HEADER};
use super::probe_opts::ProbeOptions;
use super::sent_times::TxStamper;
use super::series::{recv_until, Answer, Prober};
use crate::sys::RecvBatch;
use crate::sys::TxStamp;
use crate::EngineError;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
pub use sonde_model::clock::now_ns;
use sonde_model::ProbeMethod;
use std::io;
use std::net::SocketAddr;
use std::time::Instant;

/// How the socket was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IcmpMethod {
    Datagram,
    Raw,
}

impl IcmpMethod {
    pub fn probe_method(self) -> ProbeMethod {
        match self {
            IcmpMethod::Datagram => ProbeMethod::IcmpDatagram,
            IcmpMethod::Raw => ProbeMethod::IcmpRaw,
        }
    }
}

/// An echo socket connected to one target.
pub struct IcmpProber {
    sock: Socket,
    v6: bool,
    method: IcmpMethod,
    id: u16,
    batch: RecvBatch,
    stamper: TxStamper,
}

fn denied(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM))
        || e.kind() == io::ErrorKind::PermissionDenied
}

impl IcmpProber {
    /// Opens an echo socket, sets `opts` and connects it to `target`.
    pub fn open(target: SocketAddr, opts: &ProbeOptions<'_>) -> Result<Self, EngineError> {
        let context = "opening the ICMP socket";
        let (sock, method) = Self::socket(target).map_err(EngineError::io(context))?;
        opts.apply(&sock, target)?;
        Self::connected(sock, method, target).map_err(EngineError::io(context))
    }

    /// A datagram echo socket if the system allows one, else a raw one.
    fn socket(target: SocketAddr) -> io::Result<(Socket, IcmpMethod)> {
        let v6 = target.is_ipv6();
        let (domain, proto) = if v6 {
            (Domain::IPV6, Protocol::ICMPV6)
        } else {
            (Domain::IPV4, Protocol::ICMPV4)
        };
        let (sock, method) = match Socket::new(domain, Type::DGRAM, Some(proto)) {
            Ok(s) => (s, IcmpMethod::Datagram),
            Err(e) if denied(&e) => match Socket::new(domain, Type::RAW, Some(proto)) {
                Ok(s) => (s, IcmpMethod::Raw),
                Err(e) if denied(&e) => {
                    return Err(io::Error::new(
                        io::ErrorKind::PermissionDenied,
                        "ICMP echo needs a datagram ICMP socket (allow this group in \
                         net.ipv4.ping_group_range) or a raw one (root or CAP_NET_RAW); \
                         or use --proto udp against a sonde reflector",
                    ))
                }
                Err(e) => return Err(e),
            },
            Err(e) => return Err(e),
        };
        Ok((sock, method))
    }

    fn connected(sock: Socket, method: IcmpMethod, target: SocketAddr) -> io::Result<Self> {
        let v6 = target.is_ipv6();
        sock.connect(&SockAddr::from(target))?;
        crate::sys::enable_rx_timestamps(&sock)?;
        // The TTL / hop limit of each reply, as ping prints it (a raw IPv4
        // socket has it in the IP header anyway).
        if let Err(e) = crate::sys::enable_rx_hop_limit(&sock, v6) {
            tracing::debug!(error = %e, "no TTL of replies");
        }
        // A raw socket sees every echo reply on the host: ours carry this id.
        let id = (std::process::id() as u16) ^ 0x5d00;
        let stamper = TxStamper::on(&sock);
        Ok(Self {
            sock,
            v6,
            method,
            id,
            batch: RecvBatch::new(16, 65_536),
            stamper,
        })
    }
}

impl Prober for IcmpProber {
    fn seq_bits(&self) -> u32 {
        16
    }

    fn method(&self) -> ProbeMethod {
        self.method.probe_method()
    }

    fn send(&mut self, seq: u64, size: u32) -> io::Result<i64> {
        let t = now_ns();
        let p = echo::request(self.v6, self.id, seq as u16, size as usize, t as u64);
        self.sock.send(&p)?;
        self.stamper.sent(seq);
        Ok(t)
    }

    fn sent_stamps(&mut self, out: &mut Vec<(u64, TxStamp)>) {
        self.stamper.collect(&self.sock, out);
    }

    fn recv(&mut self, until: Instant, out: &mut Vec<Answer>) -> io::Result<()> {
        let n = recv_until(&mut self.batch, &self.sock, until)?;
        let raw_v4 = self.method == IcmpMethod::Raw && !self.v6;
        for i in 0..n {
            let Some(d) = self.batch.get(i) else { continue };
            let Some(r) = echo::parse_reply(self.v6, raw_v4, d.payload) else {
                continue;
            };
            // A datagram socket only hands over its own replies (the kernel
            // set and checks the identifier); a raw one hands over all.
            if self.method == IcmpMethod::Raw && r.id != self.id {
                continue;
            }
            out.push(Answer {
                seq_low: u64::from(r.seq),
                rx_ns: d.rx_ns.unwrap_or_else(now_ns),
                rx_kernel: d.rx_ns.is_some(),
                rx_hw_ns: d.rx_hw_ns,
                ttl: r.ttl.or(d.ttl),
                bytes: r.payload_len + ECHO_HEADER,
                remote: None,
                cos: None,
            });
        }
        Ok(())
    }
}
