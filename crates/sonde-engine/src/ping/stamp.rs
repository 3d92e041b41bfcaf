//! STAMP test packets (RFC 8762) to a session-reflector: the prober of
//! `sonde ping --proto udp`.

use super::icmp::now_ns;
use super::probe_opts::ProbeOptions;
use super::sent_times::TxStamper;
use super::series::{recv_until, Answer, CosAnswer, Prober, RemoteTimes};
use crate::sys::TxStamp;
use crate::sys::{enable_rx_timestamps, enable_rx_tos, RecvBatch};
use crate::EngineError;
use socket2::{Domain, Socket, Type};
use sonde_model::ProbeMethod;
use sonde_wire::stamp::tlv::ClassOfService;
use sonde_wire::stamp::{
    ErrorEstimate, Mode, NtpTimestamp, ReflectorPacket, SenderPacket, TimestampFormat,
};
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::Instant;

/// A UDP socket connected to one reflector.
pub struct StampProber {
    sock: UdpSocket,
    mode: Mode,
    synced: bool,
    batch: RecvBatch,
    stamper: TxStamper,
    /// The DSCP the replies are asked to carry, when each request has a
    /// Class of Service TLV (RFC 8972).
    cos: Option<u8>,
}

impl StampProber {
    /// Opens a UDP socket, sets `opts` and connects it to `target`;
    /// with `cos`, each request asks for its reply's DSCP (`opts.dscp`,
    /// else CS0) in a Class of Service TLV.
    pub fn open(
        target: SocketAddr,
        opts: &ProbeOptions<'_>,
        mode: Mode,
        synced: bool,
        cos: bool,
    ) -> Result<Self, EngineError> {
        let io = EngineError::io("opening the STAMP socket");
        let domain = if target.is_ipv6() {
            Domain::IPV6
        } else {
            Domain::IPV4
        };
        let sock = Socket::new(domain, Type::DGRAM, None).map_err(io)?;
        opts.apply(&sock, target)?;
        let io = EngineError::io("connecting the STAMP socket");
        sock.connect(&target.into()).map_err(io)?;
        let sock: UdpSocket = sock.into();
        enable_rx_timestamps(&sock).map_err(EngineError::io("receive timestamps"))?;
        if cos {
            enable_rx_tos(&sock, target.is_ipv6())
                .map_err(EngineError::io("the replies' traffic class"))?;
        }
        let stamper = TxStamper::on(&sock);
        Ok(Self {
            sock,
            mode,
            synced,
            batch: RecvBatch::new(16, 65_536),
            stamper,
            cos: cos.then(|| opts.dscp.map_or(0, sonde_model::Dscp::value)),
        })
    }
}

impl Prober for StampProber {
    fn seq_bits(&self) -> u32 {
        32
    }

    fn method(&self) -> ProbeMethod {
        match self.mode {
            Mode::Unauthenticated => ProbeMethod::Stamp,
            Mode::Authenticated(_) => ProbeMethod::StampAuthenticated,
        }
    }

    fn send(&mut self, seq: u64, size: u32) -> io::Result<i64> {
        let t = now_ns();
        let mut packet = SenderPacket {
            // iputils counts from 1, STAMP (RFC 8762 §4.2.1) from 0.
            seq: seq.wrapping_sub(1) as u32,
            timestamp: NtpTimestamp::from_unix_nanos(i128::from(t)),
            error_estimate: ErrorEstimate {
                synchronized: self.synced,
                format: TimestampFormat::Ntp,
                scale: 22,
                multiplier: 1,
            },
            len: size as usize,
        }
        .encode(&self.mode)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        if let Some(dscp) = self.cos {
            // The spec's smallest size leaves room for it after the base.
            let base = self.mode.base_len();
            let tlv = ClassOfService::request(dscp);
            if let Some(room) = packet.get_mut(base..base + tlv.len()) {
                room.copy_from_slice(&tlv);
            }
        }
        self.sock.send(&packet)?;
        self.stamper.sent(seq);
        Ok(t)
    }

    fn sent_stamps(&mut self, out: &mut Vec<(u64, TxStamp)>) {
        self.stamper.collect(&self.sock, out);
    }

    fn recv(&mut self, until: Instant, out: &mut Vec<Answer>) -> io::Result<()> {
        let n = recv_until(&mut self.batch, &self.sock, until)?;
        for i in 0..n {
            let Some(d) = self.batch.get(i) else { continue };
            let Ok(r) = ReflectorPacket::decode(d.payload, &self.mode) else {
                continue;
            };
            let rx_ns = d.rx_ns.unwrap_or_else(now_ns);
            let near = i128::from(rx_ns);
            let as_ns =
                |t: NtpTimestamp| i64::try_from(t.to_unix_nanos_near(near)).unwrap_or(rx_ns);
            let cos = self.cos.map(|_| CosAnswer {
                at_reflector: reflector_cos(
                    &d.payload[self.mode.base_len().min(d.payload.len())..],
                ),
                returned: d.tos.map(|t| t >> 2),
            });
            out.push(Answer {
                seq_low: u64::from(r.sender_seq) + 1,
                rx_ns,
                rx_kernel: d.rx_ns.is_some(),
                rx_hw_ns: d.rx_hw_ns,
                ttl: None,
                bytes: d.payload.len(),
                remote: Some(RemoteTimes {
                    received_ns: as_ns(r.receive_timestamp),
                    sent_ns: as_ns(r.timestamp),
                }),
                cos,
            });
        }
        Ok(())
    }
}

/// The DSCP and ECN a reply's Class of Service TLV says its request
/// arrived at the reflector with; `None` when the TLV is not there or
/// the reflector did not process it (its U flag still set).
fn reflector_cos(tlvs: &[u8]) -> Option<(u8, u8)> {
    match sonde_wire::stamp::tlv::find_cos(tlvs)? {
        (cos, true) => Some((cos.dscp2, cos.ecn)),
        (_, false) => None,
    }
}
