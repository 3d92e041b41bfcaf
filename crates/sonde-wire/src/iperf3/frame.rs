//! JSON frames: a 4-byte big-endian length, then that many bytes of UTF-8
//! JSON (no terminator). iperf3 carries its parameters and results this
//! way; the state bytes around them are not framed, so the reader here
//! takes only the bytes of one frame and leaves the rest to the caller.

use super::Iperf3Error;

/// Bytes in the length prefix.
pub const JSON_LEN_PREFIX: usize = 4;

/// Cap for a parameters frame, the one iperf3 3.21 servers apply (8 KiB):
/// a client must keep its parameters (title and extra data included)
/// under it.
pub const PARAMS_MAX_LEN: usize = 8 * 1024;

/// A default cap for a results frame. iperf3 sets none; results are small
/// (a few hundred bytes a stream) unless the client asked for the
/// server's output, which grows with the test's length and stream count.
pub const RESULTS_MAX_LEN: usize = 16 * 1024 * 1024;

/// Largest share of a frame's buffer reserved ahead of its bytes, so that
/// a length prefix alone cannot make the reader allocate much.
const RESERVE_AHEAD: usize = 64 * 1024;

/// The payload length a prefix announces, if it is neither 0 nor over
/// `max`. Call this before sizing anything by the length.
pub fn json_frame_len(prefix: [u8; JSON_LEN_PREFIX], max: usize) -> Result<usize, Iperf3Error> {
    let len = u32::from_be_bytes(prefix);
    if len == 0 {
        return Err(Iperf3Error::EmptyFrame);
    }
    match usize::try_from(len) {
        Ok(n) if n <= max => Ok(n),
        _ => Err(Iperf3Error::FrameTooLarge { len, max }),
    }
}

/// A frame around `json` (which must not be empty).
pub fn encode_json_frame(json: &[u8]) -> Result<Vec<u8>, Iperf3Error> {
    if json.is_empty() {
        return Err(Iperf3Error::EmptyFrame);
    }
    let len = u32::try_from(json.len()).map_err(|_| {
        Iperf3Error::Encode(format!("{} bytes of JSON do not fit a frame", json.len()))
    })?;
    let mut out = Vec::with_capacity(JSON_LEN_PREFIX + json.len());
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(json);
    Ok(out)
}

/// Reads one frame at a time from a byte stream that arrives in pieces.
///
/// [`feed`](Self::feed) consumes only bytes of the current frame, so the
/// bytes after it (a state byte, say) stay with the caller. The prefix is
/// checked against the cap as soon as its 4 bytes are in; the buffer then
/// grows only with bytes that actually arrive.
#[derive(Debug)]
pub struct JsonFrameReader {
    max: usize,
    prefix: [u8; JSON_LEN_PREFIX],
    prefix_len: usize,
    /// Payload length, once the prefix is complete and accepted.
    len: Option<usize>,
    payload: Vec<u8>,
}

impl JsonFrameReader {
    /// A reader refusing payloads over `max` bytes.
    pub fn new(max: usize) -> Self {
        Self {
            max,
            prefix: [0; JSON_LEN_PREFIX],
            prefix_len: 0,
            len: None,
            payload: Vec::new(),
        }
    }

    /// The cap this reader applies.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Takes bytes of the current frame from the front of `input`.
    /// Returns how many it consumed and, once a frame is complete, its
    /// payload. On an error the reader is reset and the stream cannot be
    /// trusted any further.
    pub fn feed(&mut self, input: &[u8]) -> Result<(usize, Option<Vec<u8>>), Iperf3Error> {
        let mut used = 0;
        if self.len.is_none() {
            let take = (JSON_LEN_PREFIX - self.prefix_len).min(input.len());
            self.prefix[self.prefix_len..self.prefix_len + take].copy_from_slice(&input[..take]);
            self.prefix_len += take;
            used = take;
            if self.prefix_len < JSON_LEN_PREFIX {
                return Ok((used, None));
            }
            match json_frame_len(self.prefix, self.max) {
                Ok(len) => {
                    self.len = Some(len);
                    self.payload = Vec::with_capacity(len.min(RESERVE_AHEAD));
                }
                Err(e) => {
                    self.reset();
                    return Err(e);
                }
            }
        }
        let len = self.len.unwrap_or(0);
        let rest = &input[used..];
        let take = (len - self.payload.len()).min(rest.len());
        self.payload.extend_from_slice(&rest[..take]);
        used += take;
        if self.payload.len() < len {
            return Ok((used, None));
        }
        let payload = std::mem::take(&mut self.payload);
        self.reset();
        Ok((used, Some(payload)))
    }

    /// Bytes still needed to complete the current frame, as far as known:
    /// the rest of the prefix, or the rest of the payload.
    pub fn needed(&self) -> usize {
        match self.len {
            None => JSON_LEN_PREFIX - self.prefix_len,
            Some(len) => len - self.payload.len(),
        }
    }

    /// Bytes held for the frame in progress.
    pub fn buffered(&self) -> usize {
        self.prefix_len + self.payload.len()
    }

    /// Whether no frame is in progress (between frames).
    pub fn is_idle(&self) -> bool {
        self.buffered() == 0
    }

    fn reset(&mut self) {
        self.prefix = [0; JSON_LEN_PREFIX];
        self.prefix_len = 0;
        self.len = None;
        self.payload = Vec::new();
    }
}
