//! A STAMP session-reflector (RFC 8762, stateless): answers each test
//! packet with one of exactly its length, stamped with when it arrived
//! (the kernel's receive time) and when the answer left; drops sources
//! above a packet-rate limit, and all sources together above an overall
//! one ([`crate::stamp_limit`]); ignores and counts what it cannot read.
//! A TWAMP-Light session-sender's unauthenticated packet shorter than
//! STAMP's base (14 to 43 bytes, RFC 5357 Appendix I) is answered with a
//! base-size answer, its missing bytes read as zeros (RFC 8762 §4.6),
//! unless `twamp_light` is off.
//! The bytes after the base packet come back as they went, but for the
//! RFC 8972 TLVs it knows: a Class of Service TLV is filled with the DSCP
//! and ECN the test packet arrived with, and the reply is sent with the
//! DSCP it asks for; a TLV of a type it does not know is flagged U.

use crate::stamp_limit::{PerSource, TotalCap};
use crate::sys::{enable_rx_timestamps, enable_rx_tos, enable_rx_ttl, send_to_with_tos, RecvBatch};
use sonde_wire::stamp::{
    ErrorEstimate, Mode, NtpTimestamp, ReflectorPacket, SenderPacket, StampError, TimestampFormat,
};
use std::io;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// What the reflector has done, for logs and tests.
#[derive(Debug, Default)]
pub struct ReflectorStats {
    pub answered: AtomicU64,
    /// Too short, too long, or otherwise not a STAMP test packet.
    pub malformed: AtomicU64,
    /// Authenticated mode: the HMAC did not match.
    pub bad_hmac: AtomicU64,
    /// Over the per-source rate limit: dropped, not answered.
    pub rate_limited: AtomicU64,
    /// Within its source's limit but over the overall cap: dropped, not
    /// answered.
    pub over_total: AtomicU64,
}

/// How the reflector runs.
#[derive(Debug, Clone)]
pub struct ReflectorOptions {
    pub mode: Mode,
    /// Most packets per second answered for one source address (a bucket
    /// of a tenth of a second of them, at least 10).
    pub rate_pps: u32,
    /// Most packets per second answered for all sources together, on
    /// every socket of the reflector (one cap, shared).
    pub total: Arc<TotalCap>,
    /// Unauthenticated: answer TWAMP-Light senders' packets of 14 to 43
    /// bytes with a 44-byte answer (RFC 8762 §4.6).
    pub twamp_light: bool,
}

fn unix_nanos(t: SystemTime) -> i128 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

/// The reflector's own error estimate: NTP format, not known to be
/// synchronised, about a millisecond.
fn error_estimate() -> ErrorEstimate {
    ErrorEstimate {
        synchronized: false,
        format: TimestampFormat::Ntp,
        scale: 22,
        multiplier: 1,
    }
}

/// Answers on `sock` until it fails for good.
pub fn run_reflector(
    sock: &UdpSocket,
    opts: &ReflectorOptions,
    stats: &ReflectorStats,
) -> io::Result<()> {
    enable_rx_timestamps(sock)?;
    let v6 = sock.local_addr()?.is_ipv6();
    enable_rx_ttl(sock, v6)?;
    enable_rx_tos(sock, v6)?;
    let mut batch = RecvBatch::new(32, 65_536);
    let mut limiter = PerSource::new(opts.rate_pps);
    let mut reply = vec![0u8; 65_536];
    loop {
        let n = match batch.recv(sock) {
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::Interrupted
                        | io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(e) => return Err(e),
        };
        let now = Instant::now();
        for i in 0..n {
            let Some(d) = batch.get(i) else { continue };
            let Some(source) = d.source else { continue };
            if !limiter.allow(source.ip(), now) {
                stats.rate_limited.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            if !opts.total.allow(now) {
                stats.over_total.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            let short = d.payload.len() < opts.mode.base_len();
            let decoded = match &opts.mode {
                Mode::Unauthenticated if short && opts.twamp_light => {
                    SenderPacket::decode_twamp_light(d.payload)
                }
                mode => SenderPacket::decode(d.payload, mode),
            };
            let request = match decoded {
                Ok(r) if !d.truncated => r,
                Err(StampError::BadHmac) => {
                    stats.bad_hmac.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                _ => {
                    stats.malformed.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
            };
            let received = d
                .rx_ns
                .map_or_else(|| unix_nanos(SystemTime::now()), i128::from);
            let transmit = unix_nanos(SystemTime::now());
            let answer = ReflectorPacket::reply_to(
                &request,
                request.seq,
                NtpTimestamp::from_unix_nanos(received),
                NtpTimestamp::from_unix_nanos(transmit),
                d.ttl.unwrap_or(255),
                error_estimate(),
            );
            // Exactly the request's length (never more bytes than came
            // in), but for a TWAMP-Light sender's short packet: the base.
            let Ok(len) = answer.encode_into(&opts.mode, &mut reply) else {
                stats.malformed.fetch_add(1, Ordering::Relaxed);
                continue;
            };
            // RFC 8762 §4.3: what follows the base packet is copied back;
            // RFC 8972's TLVs among it are answered.
            let base = opts.mode.base_len();
            let mut marked = None;
            if len > base && !short {
                reply[base..len].copy_from_slice(&d.payload[base..len]);
                marked = sonde_wire::stamp::tlv::reflect(&mut reply[base..len], d.tos.unwrap_or(0));
            }
            let sent = match marked {
                Some(dscp) => send_to_with_tos(sock, &reply[..len], dscp << 2, source),
                None => sock.send_to(&reply[..len], source),
            };
            if sent.is_ok() {
                stats.answered.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}
