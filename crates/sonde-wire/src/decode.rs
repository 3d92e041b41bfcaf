//! Reading a message from a frame's payload: a client's message that
//! does not decode names the field it got wrong ([`crate::malformed`]),
//! so the server refuses it by that name.

use crate::malformed::{client_fault, Fault};
use crate::message::{ClientMessage, ServerMessage};
use crate::WireError;
use serde::de::DeserializeOwned;

/// A message of the protocol, as [`decode_message`] reads it.
pub trait WireMessage: DeserializeOwned {
    /// Which field of `payload` is wrong and how, for a payload that
    /// did not decode (`error`); `None` leaves serde's words alone.
    fn fault(_payload: &[u8], _error: &serde_json::Error) -> Option<Fault> {
        None
    }
}

/// A client's message names what it got wrong: the server refuses it
/// by that name.
impl WireMessage for ClientMessage {
    fn fault(payload: &[u8], error: &serde_json::Error) -> Option<Fault> {
        Some(client_fault(payload, error))
    }
}

impl WireMessage for ServerMessage {}

/// A message from one frame's payload. A client message that does not
/// decode is [`WireError::Malformed`], naming the field.
pub fn decode_message<M: WireMessage>(payload: &[u8]) -> Result<M, WireError> {
    serde_json::from_slice(payload).map_err(|e| match M::fault(payload, &e) {
        Some(Fault { field, reason }) => WireError::Malformed { field, reason },
        None => WireError::BadMessage(e.to_string()),
    })
}
