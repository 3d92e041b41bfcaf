//! The test parameters: one JSON object the client sends right after the
//! server's `PARAM_EXCHANGE`.
//!
//! iperf3 writes a key only when its value matters: `omit`, `time`,
//! `num`, `blockcount` and `parallel` always, most others only when not
//! zero, flags only when set. [`Params`] writes the same way (its zero
//! means "not set, use the default") and in iperf3's key order. Which
//! JSON type a flag takes matters to iperf3 3.21, which ignores a key of
//! the wrong type: `tcp`, `udp`, `sctp`, `nodelay`, `reverse`,
//! `bidirectional` and `mptcp` are written `true`; `get_server_output`,
//! `udp_counters_64bit`, `repeating_payload`, `zerocopy`, `dont_fragment`
//! and `skip_rx_copy` are written `1`.
//!
//! Reading is lenient: unknown keys are ignored (iperf3 adds keys from
//! version to version), flags may be booleans or numbers, integers may
//! come as integral floats, and `null` counts as absent. A flag that is
//! `false` or `0` is not set (iperf3 itself treats a flag key that is
//! present as set, whatever its value; it never sends `false`).

use super::udp::CounterWidth;

/// What sonde puts in `client_version` (iperf3 servers do not read it).
pub const SONDE_CLIENT_VERSION: &str = concat!("sonde ", env!("CARGO_PKG_VERSION"));

/// The test length an iperf3 server assumes when `time` is absent.
pub(super) const DEFAULT_TIME: u32 = 10;

/// The transport of the data streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Protocol {
    #[default]
    Tcp,
    Udp,
    Sctp,
}

impl Protocol {
    /// The key that selects this protocol in the parameters.
    pub const fn key(self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
            Protocol::Sctp => "sctp",
        }
    }
}

/// Which way test data flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Direction {
    /// Client to server (iperf3's default).
    #[default]
    Forward,
    /// Server to client (`-R`, key `reverse`).
    Reverse,
    /// Both ways at once, `parallel` streams each way (`--bidir`, key
    /// `bidirectional`).
    Bidirectional,
}

impl Direction {
    /// Whether the client sends test data.
    pub const fn client_sends(self) -> bool {
        !matches!(self, Direction::Reverse)
    }

    /// Whether the server sends test data.
    pub const fn server_sends(self) -> bool {
        !matches!(self, Direction::Forward)
    }
}

/// The parameters JSON. Field names follow iperf3's keys; a numeric field
/// at 0 (or a flag at `false`, or `None`) is left out when written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    /// Key `tcp`, `udp` or `sctp` (`true`); TCP when none is present.
    pub protocol: Protocol,
    /// `omit`: seconds at the start left out of the results.
    pub omit: u32,
    /// `server_affinity`: CPU the server should pin itself to.
    pub server_affinity: Option<u32>,
    /// `time`: test length in seconds (0 when ended by bytes or blocks);
    /// 10 when absent, as iperf3 assumes.
    pub time: u32,
    /// `num`: bytes to send, 0 for none (`-n`).
    pub num: u64,
    /// `blockcount`: blocks to send, 0 for none (`-k`).
    pub blockcount: u64,
    /// `MSS`: TCP maximum segment size to set.
    pub mss: u32,
    /// `nodelay`: set `TCP_NODELAY`.
    pub nodelay: bool,
    /// `parallel`: streams per direction; 1 when absent.
    pub parallel: u32,
    /// `reverse`: the server sends (`-R`).
    pub reverse: bool,
    /// `bidirectional`: both send (`--bidir`); wins over `reverse`.
    pub bidirectional: bool,
    /// `mptcp`: use Multipath TCP (3.21, Linux).
    pub mptcp: bool,
    /// `window`: socket buffer size in bytes.
    pub window: u32,
    /// `len`: bytes per write, i.e. the UDP datagram payload size.
    pub len: u32,
    /// `bandwidth`: target bitrate in bits per second per stream.
    pub bandwidth: u64,
    /// `fqrate`: fair-queue pacing rate in bits per second per stream.
    pub fqrate: u64,
    /// `pacing_timer`: microseconds between pacing checks.
    pub pacing_timer: u32,
    /// `burst`: datagrams sent back to back per pacing slot.
    pub burst: u32,
    /// `gso` (3.21, written for every UDP test): UDP segmentation offload.
    pub gso: Option<bool>,
    /// `gso_dg_size` (3.21): datagram size within a GSO buffer.
    pub gso_dg_size: Option<u32>,
    /// `gso_bf_size` (3.21): GSO buffer size.
    pub gso_bf_size: Option<u32>,
    /// `gro` (3.21): UDP receive offload.
    pub gro: Option<bool>,
    /// `gro_bf_size` (3.21): GRO buffer size.
    pub gro_bf_size: Option<u32>,
    /// `TOS`: IPv4 TOS / IPv6 traffic class byte.
    pub tos: u8,
    /// `flowlabel`: IPv6 flow label (20 bits).
    pub flowlabel: u32,
    /// `title`: a prefix for the server's output lines.
    pub title: Option<String>,
    /// `extra_data`: free text stored with the results.
    pub extra_data: Option<String>,
    /// `congestion`: TCP congestion control algorithm to use.
    pub congestion: Option<String>,
    /// `congestion_used`: the algorithm the client ended up with.
    pub congestion_used: Option<String>,
    /// `get_server_output`: the client wants the server's output in the
    /// results.
    pub get_server_output: bool,
    /// `udp_counters_64bit`: UDP datagrams carry a 64-bit counter.
    pub udp_counters_64bit: bool,
    /// `repeating_payload`: fill with a repeating pattern, not random
    /// bytes.
    pub repeating_payload: bool,
    /// `zerocopy`: the sender uses zero-copy sends.
    pub zerocopy: bool,
    /// `dont_fragment`: set IPv4 Don't Fragment.
    pub dont_fragment: bool,
    /// `authtoken`: base64 of the RSA-encrypted credentials.
    pub authtoken: Option<String>,
    /// `skip_rx_copy` (3.21): the receiver may discard data unread.
    pub skip_rx_copy: bool,
    /// `client_version`: the client's version string (informational).
    pub client_version: Option<String>,
}

impl Default for Params {
    /// What an iperf3 server assumes for keys that are absent.
    fn default() -> Self {
        Self {
            protocol: Protocol::Tcp,
            omit: 0,
            server_affinity: None,
            time: DEFAULT_TIME,
            num: 0,
            blockcount: 0,
            mss: 0,
            nodelay: false,
            parallel: 1,
            reverse: false,
            bidirectional: false,
            mptcp: false,
            window: 0,
            len: 0,
            bandwidth: 0,
            fqrate: 0,
            pacing_timer: 0,
            burst: 0,
            gso: None,
            gso_dg_size: None,
            gso_bf_size: None,
            gro: None,
            gro_bf_size: None,
            tos: 0,
            flowlabel: 0,
            title: None,
            extra_data: None,
            congestion: None,
            congestion_used: None,
            get_server_output: false,
            udp_counters_64bit: false,
            repeating_payload: false,
            zerocopy: false,
            dont_fragment: false,
            authtoken: None,
            skip_rx_copy: false,
            client_version: None,
        }
    }
}

impl Params {
    /// Parameters for sonde's client: `parallel` streams (per direction)
    /// for `time` seconds, `client_version` set to sonde's. Refine with
    /// the `with_*` methods or the public fields.
    pub fn client(protocol: Protocol, direction: Direction, time: u32, parallel: u32) -> Self {
        let mut params = Self {
            protocol,
            time,
            parallel,
            client_version: Some(SONDE_CLIENT_VERSION.to_string()),
            ..Self::default()
        };
        params.set_direction(direction);
        params
    }

    /// Sets `len`: bytes per write, or the UDP payload size.
    pub fn with_len(mut self, len: u32) -> Self {
        self.len = len;
        self
    }

    /// Sets `bandwidth`: bits per second per stream (0: unlimited for
    /// TCP; iperf3's UDP default is 1 Mbit/s = 1,048,576).
    pub fn with_bandwidth(mut self, bits_per_second: u64) -> Self {
        self.bandwidth = bits_per_second;
        self
    }

    /// Sets `omit`: seconds left out at the start.
    pub fn with_omit(mut self, seconds: u32) -> Self {
        self.omit = seconds;
        self
    }

    /// Sets `window`: the socket buffer size.
    pub fn with_window(mut self, bytes: u32) -> Self {
        self.window = bytes;
        self
    }

    /// Sets `TOS`: the TOS / traffic class byte.
    pub fn with_tos(mut self, tos: u8) -> Self {
        self.tos = tos;
        self
    }

    /// Sets `flowlabel`: the IPv6 flow label.
    pub fn with_flowlabel(mut self, label: u32) -> Self {
        self.flowlabel = label;
        self
    }

    /// Sets `udp_counters_64bit`.
    pub fn with_udp_counters_64bit(mut self, on: bool) -> Self {
        self.udp_counters_64bit = on;
        self
    }

    /// Sets `num`: end after this many bytes instead of after `time`
    /// (`time` becomes 0, as iperf3 sends it).
    pub fn with_bytes(mut self, bytes: u64) -> Self {
        self.num = bytes;
        self.time = 0;
        self
    }

    /// The direction the flags select (`bidirectional` wins over
    /// `reverse`, as in iperf3).
    pub fn direction(&self) -> Direction {
        match (self.bidirectional, self.reverse) {
            (true, _) => Direction::Bidirectional,
            (false, true) => Direction::Reverse,
            (false, false) => Direction::Forward,
        }
    }

    /// Sets the `reverse` and `bidirectional` flags for `direction`.
    pub fn set_direction(&mut self, direction: Direction) {
        self.reverse = direction == Direction::Reverse;
        self.bidirectional = direction == Direction::Bidirectional;
    }

    /// The UDP header layout both sides use for this test.
    pub fn counter_width(&self) -> CounterWidth {
        if self.udp_counters_64bit {
            CounterWidth::Bits64
        } else {
            CounterWidth::Bits32
        }
    }

    /// How many data connections the client opens: `parallel`, twice
    /// that for a bidirectional test.
    pub fn data_connections(&self) -> u64 {
        let per_direction = u64::from(self.parallel);
        match self.direction() {
            Direction::Bidirectional => per_direction * 2,
            _ => per_direction,
        }
    }

    /// Whether the client sends on its `index`-th data connection
    /// (0-based, in the order the client opens them and the server
    /// accepts them); `None` past the last. In a bidirectional test the
    /// first `parallel` connections carry client → server data and the
    /// rest server → client.
    pub fn client_sends_on(&self, index: u64) -> Option<bool> {
        if index >= self.data_connections() {
            return None;
        }
        Some(match self.direction() {
            Direction::Forward => true,
            Direction::Reverse => false,
            Direction::Bidirectional => index < u64::from(self.parallel),
        })
    }
}
