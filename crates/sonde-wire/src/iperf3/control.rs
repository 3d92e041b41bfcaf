//! Splitting the bytes one side reads from the control connection into
//! protocol items, in whatever pieces they arrive.
//!
//! What comes next depends on what came before, and the decoder follows
//! it:
//!
//! - **The server reads** the cookie, then the parameters frame, then
//!   state bytes; after `TEST_END`, the client's results frame, then
//!   state bytes again (`IPERF_DONE`).
//! - **The client reads** state bytes; after `EXCHANGE_RESULTS`, the
//!   server's results frame; after `SERVER_ERROR`, the two error codes.
//!
//! The decoder holds at most one unfinished item: up to 37 bytes of a
//! fixed-size item, or one JSON frame no longer than its cap.

use super::cookie::{Cookie, COOKIE_LEN};
use super::frame::{JsonFrameReader, PARAMS_MAX_LEN, RESULTS_MAX_LEN};
use super::params::Params;
use super::results::Results;
use super::server_error::{ServerError, SERVER_ERROR_CODES_LEN};
use super::state::State;
use super::Iperf3Error;

/// Which side reads the stream being decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    /// The server, reading what the client sends.
    Server,
    /// The client, reading what the server sends.
    Client,
}

/// The item the decoder expects next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Awaiting {
    /// The 37-byte cookie (server only, first).
    Cookie,
    /// A state byte.
    State,
    /// The parameters frame (server only, after the cookie).
    Params,
    /// A results frame (the client's after `TEST_END`, the server's
    /// after `EXCHANGE_RESULTS`).
    Results,
    /// The 8 bytes after `SERVER_ERROR` (client only).
    ServerErrorCodes,
}

/// One item read from the control connection.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    Cookie(Cookie),
    State(State),
    Params(Params),
    Results(Results),
    ServerError(ServerError),
}

/// The control-connection decoder of one side.
#[derive(Debug)]
pub struct ControlDecoder {
    reader: Reader,
    awaiting: Awaiting,
    /// A cookie or error codes in progress.
    fixed: Vec<u8>,
    params: JsonFrameReader,
    results: JsonFrameReader,
    failed: Option<Iperf3Error>,
}

impl ControlDecoder {
    /// A decoder for `reader`'s side, refusing parameters over
    /// `params_max` bytes and results over `results_max` bytes.
    pub fn new(reader: Reader, params_max: usize, results_max: usize) -> Self {
        Self {
            reader,
            awaiting: match reader {
                Reader::Server => Awaiting::Cookie,
                Reader::Client => Awaiting::State,
            },
            fixed: Vec::new(),
            params: JsonFrameReader::new(params_max),
            results: JsonFrameReader::new(results_max),
            failed: None,
        }
    }

    /// A decoder with the caps [`PARAMS_MAX_LEN`] and [`RESULTS_MAX_LEN`].
    pub fn with_default_caps(reader: Reader) -> Self {
        Self::new(reader, PARAMS_MAX_LEN, RESULTS_MAX_LEN)
    }

    /// The item expected next.
    pub fn awaiting(&self) -> Awaiting {
        self.awaiting
    }

    /// Bytes held for the item in progress.
    pub fn buffered(&self) -> usize {
        self.fixed.len() + self.params.buffered() + self.results.buffered()
    }

    /// Takes bytes from the front of `input`, at most up to the end of
    /// one item. Returns how many it consumed and the item, once
    /// complete; call again with the rest. After an error the decoder
    /// refuses everything (the stream is out of step).
    pub fn feed(&mut self, input: &[u8]) -> Result<(usize, Option<Inbound>), Iperf3Error> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let step = self.step(input);
        if let Err(e) = &step {
            self.failed = Some(e.clone());
        }
        step
    }

    /// Tells the decoder the connection has ended. Returns the error
    /// report of an iperf3 server that closed after its first code; an
    /// error if an item was cut off (or the codes `SERVER_ERROR` promised
    /// never came); otherwise nothing.
    pub fn finish(&mut self) -> Result<Option<Inbound>, Iperf3Error> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let (what, have, need) = match self.awaiting {
            Awaiting::ServerErrorCodes if self.fixed.len() == 4 => {
                let report = ServerError::decode(&self.fixed)?;
                self.fixed.clear();
                self.awaiting = Awaiting::State;
                return Ok(Some(Inbound::ServerError(report)));
            }
            Awaiting::State => return Ok(None),
            Awaiting::Cookie => ("the cookie", self.fixed.len(), COOKIE_LEN),
            Awaiting::ServerErrorCodes => (
                "the server error codes",
                self.fixed.len(),
                SERVER_ERROR_CODES_LEN,
            ),
            Awaiting::Params => frame_progress("the parameters", &self.params),
            Awaiting::Results => frame_progress("the results", &self.results),
        };
        // Between items the connection may end (the caller knows whether
        // it expected more), except right after SERVER_ERROR, which
        // promises its codes.
        if have == 0 && self.awaiting != Awaiting::ServerErrorCodes {
            return Ok(None);
        }
        Err(Iperf3Error::Truncated { what, have, need })
    }

    fn step(&mut self, input: &[u8]) -> Result<(usize, Option<Inbound>), Iperf3Error> {
        match self.awaiting {
            Awaiting::State => self.state(input),
            Awaiting::Cookie => {
                let (used, done) = self.fill(input, COOKIE_LEN);
                if !done {
                    return Ok((used, None));
                }
                let cookie = Cookie::parse(&std::mem::take(&mut self.fixed))?;
                self.awaiting = Awaiting::Params;
                Ok((used, Some(Inbound::Cookie(cookie))))
            }
            Awaiting::ServerErrorCodes => {
                let (used, done) = self.fill(input, SERVER_ERROR_CODES_LEN);
                if !done {
                    return Ok((used, None));
                }
                let report = ServerError::decode(&std::mem::take(&mut self.fixed))?;
                self.awaiting = Awaiting::State;
                Ok((used, Some(Inbound::ServerError(report))))
            }
            Awaiting::Params => {
                let (used, frame) = self.params.feed(input)?;
                let Some(payload) = frame else {
                    return Ok((used, None));
                };
                let params = Params::from_json(&payload)?;
                self.awaiting = Awaiting::State;
                Ok((used, Some(Inbound::Params(params))))
            }
            Awaiting::Results => {
                let (used, frame) = self.results.feed(input)?;
                let Some(payload) = frame else {
                    return Ok((used, None));
                };
                let results = Results::from_json(&payload)?;
                self.awaiting = Awaiting::State;
                Ok((used, Some(Inbound::Results(results))))
            }
        }
    }

    /// One state byte, and what it makes the decoder expect next: a
    /// server reads the client's results after `TEST_END`; a client
    /// reads the server's results after `EXCHANGE_RESULTS` and the error
    /// codes after `SERVER_ERROR`.
    fn state(&mut self, input: &[u8]) -> Result<(usize, Option<Inbound>), Iperf3Error> {
        let Some(&byte) = input.first() else {
            return Ok((0, None));
        };
        let state = State::from_byte(byte)?;
        self.awaiting = match (self.reader, state) {
            (Reader::Server, State::TestEnd) | (Reader::Client, State::ExchangeResults) => {
                Awaiting::Results
            }
            (Reader::Client, State::ServerError) => Awaiting::ServerErrorCodes,
            _ => Awaiting::State,
        };
        Ok((1, Some(Inbound::State(state))))
    }

    /// Adds bytes to a fixed-size item until it holds `len`; returns how
    /// many were taken and whether the item is complete.
    fn fill(&mut self, input: &[u8], len: usize) -> (usize, bool) {
        let take = len.saturating_sub(self.fixed.len()).min(input.len());
        self.fixed.extend_from_slice(&input[..take]);
        (take, self.fixed.len() >= len)
    }
}

fn frame_progress(what: &'static str, reader: &JsonFrameReader) -> (&'static str, usize, usize) {
    let have = reader.buffered();
    (what, have, have + reader.needed())
}
