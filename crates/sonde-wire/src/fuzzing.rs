//! The harness the fuzz targets in `fuzz/` call, kept here so that the
//! property tests run the very same code on every `cargo test`.

use crate::{
    decode_message, ClientMessage, FrameDecoder, Preamble, ServerMessage, HANDSHAKE_FRAME_MAX,
    PREAMBLE_LEN,
};

/// Feeds arbitrary bytes to the UDP test-packet and hello decoders.
pub fn udp_datagram(data: &[u8]) {
    if let Some(p) = crate::TestPacket::decode(data) {
        let mut buf = vec![0u8; crate::TEST_HEADER_LEN];
        let _ = p.encode(&mut buf);
    }
    let _ = crate::UdpHello::decode(data);
}

/// Feeds arbitrary bytes through everything a server does with the first
/// bytes of a connection: preamble, frames (in the pieces they arrive
/// in), and both message types. Must never panic.
pub fn control_stream(data: &[u8]) {
    let Some((head, rest)) = data.split_first_chunk::<PREAMBLE_LEN>() else {
        return;
    };
    let _ = Preamble::decode(head);
    // The first byte of the rest picks how the stream is cut into reads.
    let cut = usize::from(rest.first().copied().unwrap_or(1)).max(1);
    let mut decoder = FrameDecoder::new(HANDSHAKE_FRAME_MAX);
    for piece in rest.chunks(cut) {
        if decoder.push(piece).is_err() {
            return;
        }
        while let Ok(Some(frame)) = decoder.next_frame() {
            let _ = decode_message::<ClientMessage>(&frame);
            let _ = decode_message::<ServerMessage>(&frame);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn the_fuzz_harness_survives_random_input(data in proptest::collection::vec(any::<u8>(), 0..4096)) {
            control_stream(&data);
        }

        #[test]
        fn the_fuzz_harness_survives_near_valid_input(
            payload in proptest::collection::vec(any::<u8>(), 0..512),
            len in any::<u32>(),
        ) {
            let mut data = crate::Preamble::CURRENT.encode().to_vec();
            data.push(7);
            data.extend_from_slice(&len.to_be_bytes());
            data.extend_from_slice(&payload);
            control_stream(&data);
        }
    }
}
