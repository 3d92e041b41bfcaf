//! A server's error report: the `SERVER_ERROR` state byte, then iperf3's
//! error number and the server's `errno`, each a big-endian `i32`.

use super::state::State;
use super::Iperf3Error;

/// Bytes that follow a `SERVER_ERROR` state byte: iperf3's error number,
/// then the server's OS `errno`, each a big-endian `i32`.
pub const SERVER_ERROR_CODES_LEN: usize = 8;

/// A server's error report: state `SERVER_ERROR`, then its codes.
///
/// `errno` is `None` when only the first code arrived before the server
/// closed the connection: iperf3 3.12 does that when authentication
/// fails. iperf3 3.21 always sends both, with `errno` 0 when it has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerError {
    /// iperf3's own error number (its `i_errno`, e.g. 121: busy).
    pub i_errno: i32,
    /// The server's operating-system error number, 0 for none.
    pub errno: Option<i32>,
}

impl ServerError {
    /// The whole report: state byte, then both codes (`errno` 0 when
    /// `None`).
    pub fn encode(&self) -> [u8; 1 + SERVER_ERROR_CODES_LEN] {
        let mut out = [0u8; 1 + SERVER_ERROR_CODES_LEN];
        out[0] = State::ServerError.to_byte();
        out[1..5].copy_from_slice(&self.i_errno.to_be_bytes());
        out[5..9].copy_from_slice(&self.errno.unwrap_or(0).to_be_bytes());
        out
    }

    /// Reads the codes that followed the state byte: 8 bytes, or 4 when
    /// the server closed the connection after the first code.
    pub fn decode(codes: &[u8]) -> Result<Self, Iperf3Error> {
        let word = |at: usize| -> Option<i32> {
            let bytes: [u8; 4] = codes.get(at..at + 4)?.try_into().ok()?;
            Some(i32::from_be_bytes(bytes))
        };
        match (codes.len(), word(0), word(4)) {
            (4, Some(i_errno), _) => Ok(Self {
                i_errno,
                errno: None,
            }),
            (8, Some(i_errno), Some(errno)) => Ok(Self {
                i_errno,
                errno: Some(errno),
            }),
            (len, _, _) => Err(Iperf3Error::BadLength {
                what: "server error codes",
                len,
                expected: "4 or 8",
            }),
        }
    }

    /// iperf3's name for the error number, for the errors a server may
    /// report; `None` for others.
    pub fn name(&self) -> Option<&'static str> {
        describe(self.i_errno).map(|(name, _)| name)
    }

    /// A short description of the error number (sonde's words), for the
    /// errors a server may report; `None` for others.
    pub fn description(&self) -> Option<&'static str> {
        describe(self.i_errno).map(|(_, text)| text)
    }
}

/// iperf3's error numbers (its `i_errno` values, named as in iperf3's
/// `iperf_api.h`) that sonde's server sends.
pub mod errno {
    /// `-t` out of range (iperf3 ≤ 3.19 knows no duration-limit error).
    pub const IEDURATION: i32 = 5;
    /// `-P` over the limit.
    pub const IENUMSTREAMS: i32 = 6;
    /// `-l` out of range.
    pub const IEBLOCKSIZE: i32 = 7;
    /// `-w` too large.
    pub const IEBUFSIZE: i32 = 8;
    /// `-M` too large.
    pub const IEMSS: i32 = 10;
    /// `-O` out of range.
    pub const IEOMIT: i32 = 12;
    /// An option the server does not implement.
    pub const IEUNIMP: i32 = 13;
    /// SCTP asked of a server without it.
    pub const IENOSCTP: i32 = 18;
    /// The total bitrate asked is over the server's limit.
    pub const IETOTALRATE: i32 = 27;
    /// The duration asked is over the server's limit (iperf3 3.20 on).
    pub const IEMAXSERVERTESTDURATIONEXCEEDED: i32 = 37;
    /// The parameters could not be read (not JSON, a key of the wrong
    /// type or out of range).
    pub const IERECVPARAMS: i32 = 114;
    /// The server terminated the test.
    pub const IESERVERTERM: i32 = 120;
    /// The client may not test here.
    pub const IEAUTHTEST: i32 = 142;
    /// The congestion control asked for is not on the server.
    pub const IESETCONGESTION: i32 = 134;
}

/// iperf3 error numbers a server can send, with sonde's description.
/// The numbering is stable: later iperf3 versions only add to it.
const SERVER_ERRORS: &[(i32, &str, &str)] = &[
    (5, "IEDURATION", "test duration out of the allowed range"),
    (6, "IENUMSTREAMS", "too many parallel streams"),
    (7, "IEBLOCKSIZE", "block size out of the allowed range"),
    (8, "IEBUFSIZE", "socket buffer size too large"),
    (10, "IEMSS", "MSS too large"),
    (12, "IEOMIT", "omit time out of the allowed range"),
    (13, "IEUNIMP", "an option the server does not implement"),
    (18, "IENOSCTP", "no SCTP support on the server"),
    (
        27,
        "IETOTALRATE",
        "requested total bitrate over the server's limit",
    ),
    (
        34,
        "IEUDPFILETRANSFER",
        "UDP cannot be used with a file transfer",
    ),
    (
        37,
        "IEMAXSERVERTESTDURATIONEXCEEDED",
        "test longer than the server allows",
    ),
    (
        102,
        "IELISTEN",
        "server could not listen for data connections",
    ),
    (104, "IEACCEPT", "server could not accept a connection"),
    (106, "IERECVCOOKIE", "server did not receive the cookie"),
    (109, "IECTRLCLOSE", "control connection closed unexpectedly"),
    (
        110,
        "IEMESSAGE",
        "server received a state byte it does not know",
    ),
    (114, "IERECVPARAMS", "server could not read the parameters"),
    (117, "IERECVRESULTS", "server could not read the results"),
    (119, "IECLIENTTERM", "the client terminated the test"),
    (120, "IESERVERTERM", "the server terminated the test"),
    (121, "IEACCESSDENIED", "server busy with another test"),
    (
        124,
        "IESETBUF",
        "server could not set the socket buffer size",
    ),
    (
        134,
        "IESETCONGESTION",
        "server could not set the congestion control algorithm",
    ),
    (
        141,
        "IESETBUF2",
        "server socket buffer smaller than requested",
    ),
    (142, "IEAUTHTEST", "authentication failed"),
    (144, "IENOMSG", "no data arrived for too long"),
    (
        160,
        "IESERVERTESTDURATIONEXPIRED",
        "server ended a test that overran its time",
    ),
    (
        200,
        "IECREATESTREAM",
        "server could not create a data stream",
    ),
    (
        202,
        "IESTREAMLISTEN",
        "server could not listen for data streams",
    ),
    (203, "IESTREAMCONNECT", "a data stream could not connect"),
    (
        204,
        "IESTREAMACCEPT",
        "server could not accept a data stream",
    ),
    (
        205,
        "IESTREAMWRITE",
        "server could not write to a data stream",
    ),
    (
        206,
        "IESTREAMREAD",
        "server could not read from a data stream",
    ),
    (207, "IESTREAMCLOSE", "a data stream closed unexpectedly"),
    (
        208,
        "IESTREAMID",
        "results named a stream id the server does not have",
    ),
];

fn describe(code: i32) -> Option<(&'static str, &'static str)> {
    SERVER_ERRORS
        .iter()
        .find(|(c, _, _)| *c == code)
        .map(|&(_, name, text)| (name, text))
}
