//! Length-delimited frames: `len: u32 BE` then `len` bytes.

use crate::WireError;

pub const FRAME_HEADER_LEN: usize = 4;
/// Cap for every frame before a test is accepted (requests, refusals,
/// stream hellos). Reports after a test use a cap sized from the spec.
pub const HANDSHAKE_FRAME_MAX: usize = 64 * 1024;

/// The payload length a frame header announces, if it is within `max`.
/// Call this before allocating anything for the payload.
pub fn frame_len(header: [u8; FRAME_HEADER_LEN], max: usize) -> Result<usize, WireError> {
    let len = usize::try_from(u32::from_be_bytes(header)).unwrap_or(usize::MAX);
    if len == 0 {
        return Err(WireError::EmptyFrame);
    }
    if len > max {
        return Err(WireError::FrameTooLarge { len, max });
    }
    Ok(len)
}

/// A frame around `payload`.
pub fn encode_frame(payload: &[u8]) -> Result<Vec<u8>, WireError> {
    let len = u32::try_from(payload.len())
        .map_err(|_| WireError::Encode(format!("{} bytes do not fit a frame", payload.len())))?;
    let mut out = Vec::with_capacity(FRAME_HEADER_LEN + payload.len());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(payload);
    Ok(out)
}

/// Incremental frame splitter for byte streams that arrive in pieces.
/// Memory held is at most one header plus one capped payload.
#[derive(Debug)]
pub struct FrameDecoder {
    max: usize,
    buf: Vec<u8>,
}

impl FrameDecoder {
    pub fn new(max: usize) -> Self {
        Self {
            max,
            buf: Vec::new(),
        }
    }

    /// Adds bytes; the decoder keeps them until a frame is complete.
    /// Refuses a frame over the cap as soon as its header is seen.
    pub fn push(&mut self, bytes: &[u8]) -> Result<(), WireError> {
        self.buf.extend_from_slice(bytes);
        self.check_header().map(|_| ())
    }

    fn check_header(&self) -> Result<Option<usize>, WireError> {
        match self.buf.first_chunk::<FRAME_HEADER_LEN>() {
            Some(h) => frame_len(*h, self.max).map(Some),
            None => Ok(None),
        }
    }

    /// The next complete payload, if one has arrived.
    pub fn next_frame(&mut self) -> Result<Option<Vec<u8>>, WireError> {
        let Some(len) = self.check_header()? else {
            return Ok(None);
        };
        if self.buf.len() < FRAME_HEADER_LEN + len {
            return Ok(None);
        }
        let rest = self.buf.split_off(FRAME_HEADER_LEN + len);
        let mut frame = std::mem::replace(&mut self.buf, rest);
        frame.drain(..FRAME_HEADER_LEN);
        Ok(Some(frame))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn oversized_and_empty_frames_are_refused_from_the_header() {
        assert_eq!(
            frame_len(u32::MAX.to_be_bytes(), 1024),
            Err(WireError::FrameTooLarge {
                len: u32::MAX as usize,
                max: 1024
            })
        );
        assert_eq!(frame_len([0; 4], 1024), Err(WireError::EmptyFrame));
        assert_eq!(frame_len(10u32.to_be_bytes(), 1024), Ok(10));
    }

    #[test]
    fn decoder_refuses_before_the_payload_arrives() {
        let mut d = FrameDecoder::new(100);
        assert!(d.push(&1000u32.to_be_bytes()).is_err());
    }

    proptest! {
        #[test]
        fn frames_survive_any_split(
            payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 1..300), 1..8),
            cut in 1usize..64,
        ) {
            let mut wire = Vec::new();
            for p in &payloads {
                wire.extend(encode_frame(p).unwrap());
            }
            let mut d = FrameDecoder::new(1024);
            let mut out = Vec::new();
            for chunk in wire.chunks(cut) {
                d.push(chunk).unwrap();
                while let Some(f) = d.next_frame().unwrap() {
                    out.push(f);
                }
            }
            prop_assert_eq!(out, payloads);
        }

        #[test]
        fn decoder_never_panics_on_garbage(bytes in proptest::collection::vec(any::<u8>(), 0..2000)) {
            let mut d = FrameDecoder::new(512);
            if d.push(&bytes).is_ok() {
                while let Ok(Some(_)) = d.next_frame() {}
            }
        }
    }
}
