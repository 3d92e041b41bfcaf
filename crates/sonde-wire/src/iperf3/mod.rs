//! iperf3's control protocol, so that sonde can test against iperf3 (3.12
//! and 3.21 were studied and checked) as a client and as a server.
//!
//! Pure encode and decode, like the rest of this crate: no sockets, no
//! clocks. `docs/iperf3-protocol.md` describes the whole exchange; in
//! short, on the TCP control connection:
//!
//! | step | bytes | direction |
//! |---|---|---|
//! | cookie | 37 bytes: 36 characters and a NUL ([`Cookie`]) | client → server |
//! | `PARAM_EXCHANGE` | one [`State`] byte | server → client |
//! | parameters | 4-byte big-endian length, then JSON ([`Params`]) | client → server |
//! | `CREATE_STREAMS` | state byte; the client opens its data connections | server → client |
//! | `TEST_START`, `TEST_RUNNING` | two state bytes | server → client |
//! | `TEST_END` | state byte, once the client decides the test is over | client → server |
//! | `EXCHANGE_RESULTS` | state byte | server → client |
//! | results | a JSON frame each ([`Results`]): client's first, then server's | both |
//! | `DISPLAY_RESULTS` | state byte | server → client |
//! | `IPERF_DONE` | state byte | client → server |
//!
//! A server that gives up sends `SERVER_ERROR` and two big-endian `i32`s
//! ([`ServerError`]). A TCP data connection opens with the test's cookie;
//! a UDP stream opens with a 4-byte datagram and its reply
//! ([`UDP_CONNECT_REQUEST`], [`UDP_CONNECT_REPLY`]), and each test datagram
//! starts with a [`UdpHeader`].
//!
//! [`ControlDecoder`] splits the bytes one side reads from the control
//! connection into these items, whatever sizes they arrive in. Every JSON
//! length is checked against a cap chosen by the reader before any buffer
//! grows for it.

mod control;
mod cookie;
mod frame;
mod json;
mod params;
mod params_json;
mod results;
mod server_error;
mod state;
mod udp;

#[cfg(test)]
mod control_tests;
#[cfg(test)]
mod json_tests;
#[cfg(test)]
mod tests;

pub use control::{Awaiting, ControlDecoder, Inbound, Reader};
pub use cookie::{Cookie, COOKIE_ALPHABET, COOKIE_CHARS, COOKIE_LEN};
pub use frame::{
    encode_json_frame, json_frame_len, JsonFrameReader, JSON_LEN_PREFIX, PARAMS_MAX_LEN,
    RESULTS_MAX_LEN,
};
pub use params::{Direction, Params, Protocol, SONDE_CLIENT_VERSION};
pub use results::{stream_id, Results, StreamResult};
pub use server_error::{errno, ServerError, SERVER_ERROR_CODES_LEN};
pub use state::{Side, State};
pub use udp::{
    classify_connect_reply, classify_connect_request, ConnectFlavor, CounterWidth, UdpHeader,
    LEGACY_UDP_CONNECT_REPLY, LEGACY_UDP_CONNECT_REQUEST, UDP_CONNECT_LEN, UDP_CONNECT_REPLY,
    UDP_CONNECT_REQUEST, UDP_HEADER_LEN_32, UDP_HEADER_LEN_64,
};

/// Bytes that are not valid iperf3 protocol, or values that cannot be
/// written as such. Each variant names what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Iperf3Error {
    /// A fixed-size item of the wrong length.
    #[error("{what} of {len} bytes, expected {expected}")]
    BadLength {
        what: &'static str,
        len: usize,
        expected: &'static str,
    },
    /// A cookie character outside printable ASCII.
    #[error("cookie byte {index} is {byte:#04x}, not a printable ASCII character")]
    CookieByte { index: usize, byte: u8 },
    /// The 37th cookie byte is not the terminating NUL.
    #[error("cookie does not end in a NUL byte (its last byte is {found:#04x})")]
    CookieUnterminated { found: u8 },
    /// A state byte iperf3 does not define.
    #[error("unknown iperf3 state byte {0} ({0:#04x})")]
    UnknownState(i8),
    /// A JSON length prefix over the reader's cap; refused before the
    /// payload is read.
    #[error("JSON frame announces {len} bytes, over the {max}-byte cap")]
    FrameTooLarge { len: u32, max: usize },
    /// A JSON length prefix of zero.
    #[error("JSON frame of length 0")]
    EmptyFrame,
    /// A payload that is not UTF-8 JSON.
    #[error("frame payload is not JSON: {0}")]
    NotJson(String),
    /// JSON that is not an object where one is required.
    #[error("{what} must be a JSON object, found {found}")]
    NotAnObject {
        what: &'static str,
        found: &'static str,
    },
    /// A key holding a value of the wrong JSON type.
    #[error("key \"{key}\" must be {expected}, found {found}")]
    WrongType {
        key: String,
        expected: &'static str,
        found: String,
    },
    /// A number of the right type but outside what the key allows.
    #[error("key \"{key}\" is {value}, which is not {expected}")]
    OutOfRange {
        key: String,
        value: String,
        expected: &'static str,
    },
    /// A required key is absent (or `null`).
    #[error("required key \"{key}\" is missing")]
    MissingKey { key: String },
    /// Keys that contradict each other.
    #[error("conflicting keys: {0}")]
    Conflict(String),
    /// A datagram too short for what it must hold.
    #[error("{what} of {len} bytes, at least {need} needed")]
    TooShort {
        what: &'static str,
        len: usize,
        need: usize,
    },
    /// The connection ended inside an item.
    #[error("the connection ended inside {what} ({have} of {need} bytes)")]
    Truncated {
        what: &'static str,
        have: usize,
        need: usize,
    },
    /// A value that cannot be written in iperf3's format.
    #[error("cannot encode: {0}")]
    Encode(String),
}
