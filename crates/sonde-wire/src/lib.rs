//! The codecs of sonde's native control protocol. Pure encode and decode:
//! nothing here reads a socket or a clock, so every function can be fuzzed
//! (`fuzz/`) and property-tested.
//!
//! A control or data connection opens with an 8-byte [`Preamble`]
//! (magic `SOND`, a protocol version, two reserved bytes). After it, each
//! side sends frames: a 4-byte big-endian length, then that many bytes of
//! UTF-8 JSON holding one message. Every frame length is checked against a
//! cap chosen by the reader *before* any buffer is sized by it.

pub mod auth;
pub mod decode;
pub mod frame;
pub mod fuzzing;
pub mod inet;
pub mod iperf3;
pub mod malformed;
pub mod message;
pub use decode::{decode_message, WireMessage};
pub mod preamble;
pub mod stamp;
pub mod udp_packet;

pub use frame::{encode_frame, frame_len, FrameDecoder, FRAME_HEADER_LEN, HANDSHAKE_FRAME_MAX};
pub use message::{
    encode_message, ClientMessage, Cut, Limit, ReceivedInterval, Refusal, ServerMessage, StreamAck,
    StreamReceived, TestId,
};
pub use preamble::{Preamble, MAGIC, PREAMBLE_LEN, PROTOCOL_VERSION};
pub use udp_packet::{TestPacket, UdpHello, TEST_HEADER_LEN};

/// Bytes that are not a valid part of the protocol.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("not a sonde peer: the connection opened with {found:02x?}, not the magic 'SOND'")]
    BadMagic { found: [u8; 4] },
    #[error("frame of {len} bytes is over the {max}-byte cap")]
    FrameTooLarge { len: usize, max: usize },
    #[error("empty frame")]
    EmptyFrame,
    #[error("malformed message: {0}")]
    BadMessage(String),
    /// A message that does not decode, by the field it got wrong.
    #[error("malformed message: {field}: {reason}")]
    Malformed { field: String, reason: String },
    /// A preamble whose reserved bytes are not zero.
    #[error("preamble reserved bytes are {found:02x?}, not zero")]
    Reserved { found: [u8; 2] },
    #[error("message could not be encoded: {0}")]
    Encode(String),
}

/// An iperf3 payload that does not read names its key, as a native
/// message does ([`WireError::Malformed`]); the rest say what they are.
impl From<iperf3::Iperf3Error> for WireError {
    fn from(e: iperf3::Iperf3Error) -> Self {
        use iperf3::Iperf3Error as E;
        match &e {
            E::WrongType { key, .. } | E::OutOfRange { key, .. } | E::MissingKey { key } => {
                WireError::Malformed {
                    field: key.clone(),
                    reason: e.to_string(),
                }
            }
            _ => WireError::BadMessage(e.to_string()),
        }
    }
}
