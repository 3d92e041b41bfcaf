//! The refusal for a handshake that does not read: a malformed message,
//! a frame over the cap or cut short, reserved preamble bytes set. Each
//! is `invalid_spec{field, detail}`, naming what was wrong, so that any
//! version-2 client shows it (docs/protocol.md).

use sonde_engine::EngineError;
use sonde_wire::{ClientMessage, Refusal, WireError};

fn invalid(field: &str, detail: impl Into<String>) -> Refusal {
    Refusal::InvalidSpec {
        field: field.into(),
        detail: detail.into(),
    }
}

/// The refusal for a handshake that failed with `e`, if the client can
/// still be told (`None`: a timeout or a socket error, told to no one).
pub(super) fn refusal(e: &EngineError) -> Option<Refusal> {
    Some(match e {
        EngineError::Wire(w) => match w {
            WireError::Malformed { field, reason } => invalid(field, reason.clone()),
            WireError::Reserved { found } => invalid(
                "preamble.reserved",
                format!(
                    "{:02x} {:02x}: must be 00 00 in protocol version {}",
                    found[0],
                    found[1],
                    sonde_wire::PROTOCOL_VERSION
                ),
            ),
            WireError::FrameTooLarge { .. } | WireError::EmptyFrame => {
                invalid("frame", w.to_string())
            }
            WireError::BadMessage(detail) => invalid("message", detail.clone()),
            WireError::BadMagic { .. } | WireError::Encode(_) => return None,
        },
        EngineError::Closed { during } => invalid(
            "frame",
            format!("the connection closed before {during} was complete"),
        ),
        _ => return None,
    })
}

/// The refusal for a first message that is neither a test request nor
/// a stream hello.
pub(super) fn unexpected_first(got: &ClientMessage) -> Refusal {
    let name = match got {
        ClientMessage::TestRequest { .. } => "test_request",
        ClientMessage::StreamHello { .. } => "stream_hello",
        ClientMessage::ThirdPartyRequest { .. } => "third_party_request",
        ClientMessage::Report { .. } => "report",
        ClientMessage::UdpReport { .. } => "udp_report",
        ClientMessage::Stop => "stop",
        ClientMessage::Progress { .. } => "progress",
        ClientMessage::Abort { .. } => "abort",
        ClientMessage::AuthHello { .. } => "auth_hello",
        ClientMessage::AuthProof { .. } => "auth_proof",
    };
    invalid(
        "type",
        format!(
            "\"{name}\" cannot open a connection (send test_request, auth_hello or stream_hello)"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_wire_fault_is_named() {
        let named = |e: EngineError| match refusal(&e) {
            Some(Refusal::InvalidSpec { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        let malformed = WireError::Malformed {
            field: "parallel".into(),
            reason: "x".into(),
        };
        assert_eq!(named(malformed.into()), "parallel");
        let reserved = WireError::Reserved { found: [0xff, 0] };
        assert_eq!(named(reserved.into()), "preamble.reserved");
        assert_eq!(named(WireError::EmptyFrame.into()), "frame");
        assert_eq!(
            named(EngineError::Closed {
                during: "the first message"
            }),
            "frame"
        );
        assert!(refusal(&EngineError::Timeout { what: "x" }).is_none());
        let Refusal::InvalidSpec { field, detail } = unexpected_first(&ClientMessage::Stop) else {
            panic!()
        };
        assert_eq!(field, "type");
        assert!(detail.starts_with("\"stop\" cannot"), "{detail}");
    }
}
