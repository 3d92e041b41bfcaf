//! iperf3's control connection as sonde speaks it: the cookie, state
//! bytes and length-prefixed JSON, over a TCP stream with one deadline
//! for each message, however slowly its bytes come. The
//! byte layouts are sonde-wire's (`sonde_wire::iperf3`).

use crate::control::read_exact_by;
use crate::EngineError;
use sonde_wire::iperf3::{self as wire, Cookie, Params, Results, State};
use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// The control connection of one iperf3 test.
#[derive(Debug)]
pub struct Iperf3Control {
    stream: TcpStream,
}

impl Iperf3Control {
    pub fn new(stream: TcpStream) -> Self {
        let _ = stream.set_nodelay(true);
        Self { stream }
    }

    pub fn stream(&self) -> &TcpStream {
        &self.stream
    }

    pub fn into_stream(self) -> TcpStream {
        self.stream
    }

    /// Reads `buf` whole within `timeout`: one deadline for all of it,
    /// however the peer trickles.
    fn read_exact(
        &mut self,
        buf: &mut [u8],
        timeout: Duration,
        what: &'static str,
    ) -> Result<(), EngineError> {
        self.read_exact_by(buf, Instant::now() + timeout, what)
    }

    fn read_exact_by(
        &mut self,
        buf: &mut [u8],
        deadline: Instant,
        what: &'static str,
    ) -> Result<(), EngineError> {
        read_exact_by(&mut self.stream, buf, deadline, what)
    }

    pub fn send_cookie(&mut self, cookie: &Cookie) -> Result<(), EngineError> {
        self.stream
            .write_all(cookie.as_bytes())
            .map_err(EngineError::io("sending the iperf3 cookie"))
    }

    pub fn recv_cookie(&mut self, timeout: Duration) -> Result<Cookie, EngineError> {
        let mut buf = [0u8; wire::COOKIE_LEN];
        self.read_exact(&mut buf, timeout, "the iperf3 cookie")?;
        Cookie::parse(&buf).map_err(Self::wire_error)
    }

    pub fn send_state(&mut self, state: State) -> Result<(), EngineError> {
        self.stream
            .write_all(&[state.to_byte()])
            .map_err(EngineError::io("sending an iperf3 state"))
    }

    pub fn recv_state(&mut self, timeout: Duration) -> Result<State, EngineError> {
        let mut b = [0u8; 1];
        self.read_exact(&mut b, timeout, "an iperf3 state")?;
        State::from_byte(b[0]).map_err(Self::wire_error)
    }

    /// What follows SERVER_ERROR: iperf3's error number, and the system's
    /// when the server sends it (iperf3 3.12 sometimes sends only the first).
    pub fn recv_server_error(
        &mut self,
        timeout: Duration,
    ) -> Result<wire::ServerError, EngineError> {
        let mut b = [0u8; wire::SERVER_ERROR_CODES_LEN];
        self.read_exact(&mut b[..4], timeout, "an iperf3 server error")?;
        let n = match self.read_exact(
            &mut b[4..],
            Duration::from_millis(200),
            "an iperf3 server error",
        ) {
            Ok(()) => 8,
            Err(_) => 4,
        };
        wire::ServerError::decode(&b[..n]).map_err(Self::wire_error)
    }

    /// A key the peer got wrong stays named ([`WireError::Malformed`]).
    ///
    /// [`WireError::Malformed`]: sonde_wire::WireError::Malformed
    fn wire_error(e: wire::Iperf3Error) -> EngineError {
        EngineError::Wire(e.into())
    }

    fn send_frame(&mut self, frame: Result<Vec<u8>, wire::Iperf3Error>) -> Result<(), EngineError> {
        let frame =
            frame.map_err(|e| EngineError::Wire(sonde_wire::WireError::Encode(e.to_string())))?;
        self.stream
            .write_all(&frame)
            .map_err(EngineError::io("sending iperf3 JSON"))
    }

    /// One length-prefixed JSON frame, refused before reading it if the
    /// length is 0 or over `max`; all of it within `timeout`.
    fn recv_frame(
        &mut self,
        max: usize,
        timeout: Duration,
        what: &'static str,
    ) -> Result<Vec<u8>, EngineError> {
        let deadline = Instant::now() + timeout;
        let mut prefix = [0u8; wire::JSON_LEN_PREFIX];
        self.read_exact_by(&mut prefix, deadline, what)?;
        let n = wire::json_frame_len(prefix, max).map_err(Self::wire_error)?;
        // Grown as bytes arrive: a length alone never sizes a buffer.
        let mut body = Vec::new();
        let mut chunk = [0u8; 16 * 1024];
        while body.len() < n {
            let take = (n - body.len()).min(chunk.len());
            self.read_exact_by(&mut chunk[..take], deadline, what)?;
            body.extend_from_slice(&chunk[..take]);
        }
        Ok(body)
    }

    pub fn send_params(&mut self, params: &Params) -> Result<(), EngineError> {
        self.send_frame(params.to_frame())
    }

    pub fn recv_params(&mut self, timeout: Duration) -> Result<Params, EngineError> {
        let body = self.recv_frame(wire::PARAMS_MAX_LEN, timeout, "the iperf3 parameters")?;
        Params::from_json(&body).map_err(Self::wire_error)
    }

    pub fn send_results(&mut self, results: &Results) -> Result<(), EngineError> {
        self.send_frame(results.to_frame())
    }

    pub fn recv_results(&mut self, timeout: Duration) -> Result<Results, EngineError> {
        let body = self.recv_frame(wire::RESULTS_MAX_LEN, timeout, "the iperf3 results")?;
        Results::from_json(&body).map_err(Self::wire_error)
    }
}
