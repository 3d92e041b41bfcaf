//! UDP streams: the datagram pair that opens each stream, and the header
//! at the front of every test datagram.
//!
//! A UDP stream opens with a 4-byte datagram from the client to the
//! server's port; the server learns the client's address from it and
//! answers with 4 bytes. iperf3 writes both as host-order integers, so
//! their bytes have varied:
//!
//! | sent by | request | reply | [`ConnectFlavor`] |
//! |---|---|---|---|
//! | 3.12+ on little-endian hosts, 3.17+ everywhere | `9876` (39 38 37 36) | `6789` (36 37 38 39) | `Current` |
//! | 3.12–3.16 on big-endian hosts | `6789` | `9876` | `BigEndianHost` |
//! | up to 3.11, little-endian | 15 cd 5b 07 (123456789) | b1 68 de 3a (987654321) | `Legacy` |
//! | up to 3.11, big-endian | 07 5b cd 15 | 3a de 68 b1 | `LegacyBigEndianHost` |
//!
//! An iperf3 server takes any first datagram as the request without
//! looking at it; iperf3 3.12+ clients take the current or the legacy
//! little-endian reply. A request of `6789` is a big-endian 3.12–3.16
//! client, while a reply of `6789` is a current server, which is why
//! requests and replies are classified apart.
//!
//! Test datagrams start with the sender's send time and a counter, all
//! big-endian; the rest of the datagram (to `len` bytes) is fill:
//!
//! | bytes | 32-bit counters (default) | 64-bit counters (`udp_counters_64bit`) |
//! |---|---|---|
//! | 0–3 | seconds | seconds |
//! | 4–7 | microseconds | microseconds |
//! | 8–11 | counter | counter, high half |
//! | 12–15 | (fill) | counter, low half |
//!
//! The counter starts at 1 and counts every datagram of the stream. The
//! time comes from the sender's clock (iperf3 uses a monotonic clock
//! where it has one), so only differences between datagrams mean
//! anything: they feed the receiver's jitter.

use super::Iperf3Error;

/// Bytes in a connect request or reply.
pub const UDP_CONNECT_LEN: usize = 4;
/// The request iperf3 3.12+ clients send ("9876").
pub const UDP_CONNECT_REQUEST: [u8; UDP_CONNECT_LEN] = *b"9876";
/// The reply iperf3 3.12+ servers send ("6789").
pub const UDP_CONNECT_REPLY: [u8; UDP_CONNECT_LEN] = *b"6789";
/// The request of iperf3 up to 3.11 on little-endian hosts (123456789).
pub const LEGACY_UDP_CONNECT_REQUEST: [u8; UDP_CONNECT_LEN] = 123_456_789u32.to_le_bytes();
/// The reply of iperf3 up to 3.11 on little-endian hosts (987654321),
/// which iperf3 3.12+ clients still accept.
pub const LEGACY_UDP_CONNECT_REPLY: [u8; UDP_CONNECT_LEN] = 987_654_321u32.to_le_bytes();

/// Which iperf3 generation (and host byte order) a connect datagram
/// comes from; see the table in the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConnectFlavor {
    /// iperf3 3.12+ (little-endian host) or 3.17+ (any host).
    Current,
    /// iperf3 3.12 to 3.16 on a big-endian host.
    BigEndianHost,
    /// iperf3 up to 3.11 on a little-endian host.
    Legacy,
    /// iperf3 up to 3.11 on a big-endian host.
    LegacyBigEndianHost,
}

impl ConnectFlavor {
    const ALL: [ConnectFlavor; 4] = [
        ConnectFlavor::Current,
        ConnectFlavor::BigEndianHost,
        ConnectFlavor::Legacy,
        ConnectFlavor::LegacyBigEndianHost,
    ];

    /// The request a client of this flavor sends.
    pub const fn request(self) -> [u8; UDP_CONNECT_LEN] {
        match self {
            ConnectFlavor::Current => UDP_CONNECT_REQUEST,
            ConnectFlavor::BigEndianHost => UDP_CONNECT_REPLY,
            ConnectFlavor::Legacy => LEGACY_UDP_CONNECT_REQUEST,
            ConnectFlavor::LegacyBigEndianHost => 123_456_789u32.to_be_bytes(),
        }
    }

    /// The reply a server of this flavor sends.
    pub const fn reply(self) -> [u8; UDP_CONNECT_LEN] {
        match self {
            ConnectFlavor::Current => UDP_CONNECT_REPLY,
            ConnectFlavor::BigEndianHost => UDP_CONNECT_REQUEST,
            ConnectFlavor::Legacy => LEGACY_UDP_CONNECT_REPLY,
            ConnectFlavor::LegacyBigEndianHost => 987_654_321u32.to_be_bytes(),
        }
    }
}

/// Names the client that sent `datagram` as a connect request; `None`
/// if it is not one of the known requests (an iperf3 server would still
/// accept it: any datagram opens a stream).
pub fn classify_connect_request(datagram: &[u8]) -> Option<ConnectFlavor> {
    ConnectFlavor::ALL
        .into_iter()
        .find(|f| f.request() == datagram)
}

/// Names the server that sent `datagram` as a connect reply; `None` if it
/// is not a known reply. Test datagrams (12 bytes or more) are never
/// replies: in a reverse test the server's data may overtake its reply.
pub fn classify_connect_reply(datagram: &[u8]) -> Option<ConnectFlavor> {
    ConnectFlavor::ALL
        .into_iter()
        .find(|f| f.reply() == datagram)
}

/// Bytes of the header with 32-bit counters.
pub const UDP_HEADER_LEN_32: usize = 12;
/// Bytes of the header with 64-bit counters.
pub const UDP_HEADER_LEN_64: usize = 16;

/// The size of the datagram counter, chosen by `udp_counters_64bit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CounterWidth {
    /// iperf3's default: sec, usec, `u32` counter (12 bytes).
    #[default]
    Bits32,
    /// sec, usec, `u64` counter (16 bytes).
    Bits64,
}

impl CounterWidth {
    /// Bytes of the header in this layout.
    pub const fn header_len(self) -> usize {
        match self {
            CounterWidth::Bits32 => UDP_HEADER_LEN_32,
            CounterWidth::Bits64 => UDP_HEADER_LEN_64,
        }
    }
}

/// The header of one UDP test datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UdpHeader {
    /// Send time, seconds part.
    pub sec: u32,
    /// Send time, microseconds part.
    pub usec: u32,
    /// The datagram's number in its stream, from 1.
    pub count: u64,
}

impl UdpHeader {
    /// Writes the header into the front of `buf`, leaving the rest (the
    /// fill) as it is. With 32-bit counters only the low 32 bits of
    /// `count` are written, as iperf3 does, so the counter wraps after
    /// 2^32 − 1.
    pub fn encode(&self, width: CounterWidth, buf: &mut [u8]) -> Result<(), Iperf3Error> {
        let len = buf.len();
        let head = buf
            .get_mut(..width.header_len())
            .ok_or(Iperf3Error::TooShort {
                what: "UDP datagram buffer",
                len,
                need: width.header_len(),
            })?;
        head[0..4].copy_from_slice(&self.sec.to_be_bytes());
        head[4..8].copy_from_slice(&self.usec.to_be_bytes());
        match width {
            CounterWidth::Bits32 => head[8..12].copy_from_slice(&(self.count as u32).to_be_bytes()),
            CounterWidth::Bits64 => head[8..16].copy_from_slice(&self.count.to_be_bytes()),
        }
        Ok(())
    }

    /// Reads the header at the front of a received datagram.
    pub fn decode(datagram: &[u8], width: CounterWidth) -> Result<Self, Iperf3Error> {
        let need = width.header_len();
        let head = datagram.get(..need).ok_or(Iperf3Error::TooShort {
            what: "UDP datagram",
            len: datagram.len(),
            need,
        })?;
        // `head` holds `need` (12 or 16) bytes, so every index is in range.
        let word = |i: usize| u32::from_be_bytes([head[i], head[i + 1], head[i + 2], head[i + 3]]);
        let count = match width {
            CounterWidth::Bits32 => u64::from(word(8)),
            CounterWidth::Bits64 => (u64::from(word(8)) << 32) | u64::from(word(12)),
        };
        Ok(Self {
            sec: word(0),
            usec: word(4),
            count,
        })
    }
}
