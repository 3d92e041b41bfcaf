//! Reading one HTTP/1.1 answer from bytes as they come: the head parsed
//! by `httparse`, then the body framed by Content-Length, chunked
//! transfer coding, or the connection's close (RFC 9112 §6.3). Pure: fed
//! slices, it says how much it consumed and whether the answer is whole,
//! so it is tested (and fuzzed) without sockets.

/// Why bytes are not an HTTP answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResponseError {
    #[error("bad response head: {0}")]
    Head(String),
    #[error("bad chunk size")]
    Chunk,
    #[error("the response head is over {0} bytes")]
    HeadTooLarge(usize),
}

/// Largest response head accepted.
pub const MAX_HEAD: usize = 64 * 1024;
const MAX_HEADERS: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body {
    Length(u64),
    /// In a chunk with this many bytes left, then its CRLF.
    Chunked(ChunkState),
    /// Until the connection closes.
    UntilClose,
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChunkState {
    /// Reading a size line.
    Size,
    /// `n` data bytes left in this chunk.
    Data(u64),
    /// The CRLF after a chunk's data.
    DataEnd,
    /// Trailer lines after the last chunk, until an empty line.
    Trailer,
}

/// One answer being read.
#[derive(Debug, Clone)]
pub struct ResponseReader {
    /// The request was HEAD: no body whatever the headers say.
    head_request: bool,
    status: Option<u16>,
    body: Body,
    /// The server will close the connection after this answer.
    pub close: bool,
    done: bool,
}

/// What one feed did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Bytes of the input used (the rest belongs to a next answer).
    pub consumed: usize,
    /// The answer is whole.
    pub done: bool,
}

impl ResponseReader {
    pub fn new(head_request: bool) -> Self {
        Self {
            head_request,
            status: None,
            body: Body::None,
            close: false,
            done: false,
        }
    }

    /// The status code, once the head is read.
    pub fn status(&self) -> Option<u16> {
        self.status
    }

    /// Whether the answer ends only with the connection.
    pub fn until_close(&self) -> bool {
        self.body == Body::UntilClose
    }

    /// Feeds the bytes received so far that this reader has not consumed
    /// (the head must be fed whole again until it parses).
    pub fn feed(&mut self, input: &[u8]) -> Result<Progress, ResponseError> {
        let mut used = 0;
        if self.status.is_none() {
            match self.parse_head(input)? {
                Some(n) => used = n,
                None => {
                    return Ok(Progress {
                        consumed: 0,
                        done: false,
                    })
                }
            }
        }
        used += self.body_bytes(&input[used..])?;
        Ok(Progress {
            consumed: used,
            done: self.done,
        })
    }

    /// The connection closed: whether that ends the answer well.
    pub fn closed(&mut self) -> bool {
        if self.status.is_some() && self.body == Body::UntilClose {
            self.done = true;
        }
        self.done
    }

    fn parse_head(&mut self, input: &[u8]) -> Result<Option<usize>, ResponseError> {
        {
            // Left uninitialised: httparse writes the ones it fills, and
            // setting 64 empty headers for every answer costs more than
            // parsing the few a server sends.
            let mut headers = [const { std::mem::MaybeUninit::uninit() }; MAX_HEADERS];
            let mut r = httparse::Response::new(&mut []);
            let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
                &mut r,
                input,
                &mut headers,
            );
            let n = match parsed {
                Ok(httparse::Status::Complete(n)) => n,
                Ok(httparse::Status::Partial) if input.len() > MAX_HEAD => {
                    return Err(ResponseError::HeadTooLarge(MAX_HEAD))
                }
                Ok(httparse::Status::Partial) => return Ok(None),
                Err(e) => return Err(ResponseError::Head(e.to_string())),
            };
            let code = r.code.unwrap_or(0);
            // 1xx answers come before the real one (100 Continue).
            if (100..200).contains(&code) && code != 101 {
                return match self.parse_head(&input[n..])? {
                    Some(m) => Ok(Some(n + m)),
                    None => Ok(None),
                };
            }
            let mut length = None;
            let mut chunked = false;
            self.close = r.version == Some(0);
            for h in r.headers.iter() {
                if h.name.eq_ignore_ascii_case("content-length") {
                    let v = std::str::from_utf8(h.value)
                        .ok()
                        .and_then(|v| v.trim().parse::<u64>().ok())
                        .ok_or_else(|| ResponseError::Head("bad Content-Length".into()))?;
                    length = Some(v);
                } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                    chunked = h
                        .value
                        .split(|b| *b == b',')
                        .next_back()
                        .is_some_and(|v| v.trim_ascii().eq_ignore_ascii_case(b"chunked"));
                } else if h.name.eq_ignore_ascii_case("connection") {
                    let has = |word: &[u8]| {
                        h.value
                            .windows(word.len())
                            .any(|w| w.eq_ignore_ascii_case(word))
                    };
                    if has(b"close") {
                        self.close = true;
                    } else if has(b"keep-alive") {
                        self.close = false;
                    }
                }
            }
            self.status = Some(code);
            self.body = if self.head_request || code == 204 || code == 304 {
                Body::None
            } else if chunked {
                Body::Chunked(ChunkState::Size)
            } else if let Some(l) = length {
                Body::Length(l)
            } else {
                self.close = true;
                Body::UntilClose
            };
            if self.body == Body::None || self.body == Body::Length(0) {
                self.done = true;
            }
            Ok(Some(n))
        }
    }

    fn body_bytes(&mut self, input: &[u8]) -> Result<usize, ResponseError> {
        match self.body {
            Body::None => Ok(0),
            Body::UntilClose => Ok(input.len()),
            Body::Length(left) => {
                let take = (input.len() as u64).min(left);
                let left = left - take;
                self.body = Body::Length(left);
                self.done = left == 0;
                Ok(take as usize)
            }
            Body::Chunked(state) => self.chunks(state, input),
        }
    }

    fn chunks(&mut self, mut state: ChunkState, input: &[u8]) -> Result<usize, ResponseError> {
        let mut at = 0;
        while !self.done {
            let rest = &input[at..];
            match state {
                ChunkState::Size => match httparse::parse_chunk_size(rest) {
                    Ok(httparse::Status::Complete((n, 0))) => {
                        at += n;
                        state = ChunkState::Trailer;
                    }
                    Ok(httparse::Status::Complete((n, size))) => {
                        at += n;
                        state = ChunkState::Data(size);
                    }
                    Ok(httparse::Status::Partial) => break,
                    Err(_) => return Err(ResponseError::Chunk),
                },
                ChunkState::Data(left) => {
                    if rest.is_empty() {
                        break;
                    }
                    let take = (rest.len() as u64).min(left);
                    at += take as usize;
                    let left = left - take;
                    state = if left == 0 {
                        ChunkState::DataEnd
                    } else {
                        ChunkState::Data(left)
                    };
                }
                ChunkState::DataEnd => {
                    if rest.len() < 2 {
                        break;
                    }
                    if &rest[..2] != b"\r\n" {
                        return Err(ResponseError::Chunk);
                    }
                    at += 2;
                    state = ChunkState::Size;
                }
                ChunkState::Trailer => {
                    let Some(end) = rest.windows(2).position(|w| w == b"\r\n") else {
                        break;
                    };
                    at += end + 2;
                    if end == 0 {
                        self.done = true;
                    }
                }
            }
        }
        self.body = Body::Chunked(state);
        Ok(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `parts` one after another, as a socket would deliver them;
    /// the bytes consumed in all, and whether the answer was whole.
    fn read(parts: &[&[u8]], head_request: bool) -> (ResponseReader, usize, bool) {
        let mut r = ResponseReader::new(head_request);
        let mut pending: Vec<u8> = Vec::new();
        let mut total = 0;
        for p in parts {
            pending.extend_from_slice(p);
            let got = r.feed(&pending).unwrap();
            total += got.consumed;
            pending.drain(..got.consumed);
            if got.done {
                return (r, total, true);
            }
        }
        (r, total, false)
    }

    #[test]
    fn content_length_ends_the_answer_and_leaves_the_next() {
        let a = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1";
        let (r, used, done) = read(&[a], false);
        assert!(done);
        assert_eq!(r.status(), Some(200));
        assert_eq!(used, a.len() - "HTTP/1.1".len());
        assert!(!r.close);
    }

    #[test]
    fn a_head_split_anywhere_reads_the_same() {
        let a: &[u8] =
            b"HTTP/1.1 404 Not Found\r\ncontent-length: 3\r\nConnection: close\r\n\r\nabc";
        for cut in 1..a.len() {
            let (r, used, done) = read(&[&a[..cut], &a[cut..]], false);
            assert!(done, "cut at {cut}");
            assert_eq!(used, a.len());
            assert_eq!(r.status(), Some(404));
            assert!(r.close);
        }
    }

    #[test]
    fn chunked_bodies_with_trailers_are_read_through() {
        let a: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n\
                         3;ext=1\r\nabc\r\n0\r\nX-Trailer: 1\r\n\r\n";
        for cut in 1..a.len() {
            let (_, used, done) = read(&[&a[..cut], &a[cut..]], false);
            assert!(done, "cut at {cut}");
            assert_eq!(used, a.len(), "cut at {cut}");
        }
        let bad: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";
        let mut r = ResponseReader::new(false);
        assert_eq!(r.feed(bad), Err(ResponseError::Chunk));
    }

    #[test]
    fn no_body_for_head_204_and_304_and_close_delimited_otherwise() {
        let (r, _, done) = read(&[b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n"], true);
        assert!(done && r.status() == Some(200));
        let (_, _, done) = read(&[b"HTTP/1.1 204 No Content\r\n\r\n"], false);
        assert!(done);
        let (mut r, _, done) = read(&[b"HTTP/1.0 200 OK\r\n\r\nsome body"], false);
        assert!(!done);
        assert!(r.until_close() && r.close);
        assert!(r.closed(), "the close ends it");
    }

    #[test]
    fn interim_answers_are_skipped() {
        let a: &[u8] =
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n";
        let (r, used, done) = read(&[a], false);
        assert!(done);
        assert_eq!(r.status(), Some(201));
        assert_eq!(used, a.len());
    }

    #[test]
    fn garbage_and_endless_heads_are_errors_not_panics() {
        let mut r = ResponseReader::new(false);
        assert!(matches!(
            r.feed(b"NOT HTTP\r\n\r\n"),
            Err(ResponseError::Head(_))
        ));
        let mut r = ResponseReader::new(false);
        let endless = [b'a'; MAX_HEAD + 1];
        let mut head = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
        head.extend_from_slice(&endless);
        assert_eq!(r.feed(&head), Err(ResponseError::HeadTooLarge(MAX_HEAD)));
        let mut r = ResponseReader::new(false);
        assert!(r
            .feed(b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n")
            .is_err());
    }
}
