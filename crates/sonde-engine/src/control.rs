//! The control channel: sonde-wire frames over a TCP stream, with a
//! deadline on every read.

use crate::EngineError;
use serde::Serialize;
use sonde_wire::{
    decode_message, encode_message, frame_len, Preamble, WireMessage, FRAME_HEADER_LEN,
    PREAMBLE_LEN,
};
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Reads exactly `buf.len()` bytes before `deadline`, however slowly the
/// peer trickles them.
pub fn read_exact_by(
    stream: &mut TcpStream,
    buf: &mut [u8],
    deadline: Instant,
    what: &'static str,
) -> Result<(), EngineError> {
    let mut filled = 0;
    while filled < buf.len() {
        let left = deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or(EngineError::Timeout { what })?;
        stream
            .set_read_timeout(Some(left))
            .map_err(EngineError::io("set read timeout"))?;
        match stream.read(&mut buf[filled..]) {
            Ok(0) => return Err(EngineError::Closed { during: what }),
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(EngineError::Timeout { what })
            }
            Err(e) => {
                return Err(EngineError::Io {
                    context: what,
                    source: e,
                })
            }
        }
    }
    Ok(())
}

/// One end of a control connection.
#[derive(Debug)]
pub struct Control {
    stream: TcpStream,
    /// Whether our preamble went out (it goes once per connection).
    preamble_sent: bool,
}

impl Control {
    pub fn new(stream: TcpStream) -> Self {
        Self {
            stream,
            preamble_sent: false,
        }
    }

    pub fn stream(&self) -> &TcpStream {
        &self.stream
    }

    pub fn into_stream(self) -> TcpStream {
        self.stream
    }

    /// Ends this side of the connection so that what was sent last (an
    /// abort's reason) reaches the peer: closes our sending half, then
    /// reads and discards what the peer still sends (a late report) until
    /// it closes, `within` passes or `most` bytes came. Closing a socket
    /// with unread bytes would reset the connection instead, and the reset
    /// would discard our last message before the peer reads it.
    pub fn close_lingering(&self, within: Duration, most: usize) {
        let mut stream = &self.stream;
        if stream.shutdown(std::net::Shutdown::Write).is_err() {
            return;
        }
        let deadline = Instant::now() + within;
        let (mut buf, mut read) = ([0u8; 4096], 0usize);
        while read < most {
            let Some(left) = deadline
                .checked_duration_since(Instant::now())
                .filter(|d| !d.is_zero())
            else {
                return;
            };
            if stream.set_read_timeout(Some(left)).is_err() {
                return;
            }
            match stream.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => read += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }

    /// A second handle on the same connection, for a reader or writer on
    /// another thread.
    pub fn try_clone(&self) -> Result<Self, EngineError> {
        let stream = self
            .stream
            .try_clone()
            .map_err(EngineError::io("control connection"))?;
        Ok(Self {
            stream,
            preamble_sent: self.preamble_sent,
        })
    }

    /// Writes our preamble, once: a second call (the answer after an
    /// authentication exchange) writes nothing.
    pub fn send_preamble(&mut self) -> Result<(), EngineError> {
        if self.preamble_sent {
            return Ok(());
        }
        self.stream
            .write_all(&Preamble::CURRENT.encode())
            .map_err(EngineError::io("sending the preamble"))?;
        self.preamble_sent = true;
        Ok(())
    }

    /// Reads the peer's preamble (magic checked, version returned as is).
    /// The first byte the peer sent, left in place for the next read.
    pub fn peek_byte(&mut self, timeout: Duration) -> Result<u8, EngineError> {
        self.stream
            .set_read_timeout(Some(timeout.max(Duration::from_millis(1))))
            .map_err(EngineError::io("setting a read timeout"))?;
        let mut b = [0u8; 1];
        match self.stream.peek(&mut b) {
            Ok(0) => Err(EngineError::Closed {
                during: "the handshake",
            }),
            Ok(_) => Ok(b[0]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                Err(EngineError::Timeout {
                    what: "the server's answer",
                })
            }
            Err(e) => Err(EngineError::Io {
                context: "the handshake",
                source: e,
            }),
        }
    }

    pub fn recv_preamble(&mut self, timeout: Duration) -> Result<Preamble, EngineError> {
        let mut buf = [0u8; PREAMBLE_LEN];
        read_exact_by(
            &mut self.stream,
            &mut buf,
            Instant::now() + timeout,
            "the preamble",
        )?;
        Ok(Preamble::decode(&buf)?)
    }

    pub fn send<M: Serialize>(&mut self, msg: &M) -> Result<(), EngineError> {
        let frame = encode_message(msg)?;
        self.stream
            .write_all(&frame)
            .map_err(EngineError::io("sending a control message"))
    }

    /// The next message, refused if its frame is over `max` bytes or it
    /// does not arrive within `timeout`.
    pub fn recv<M: WireMessage>(
        &mut self,
        max: usize,
        timeout: Duration,
        what: &'static str,
    ) -> Result<M, EngineError> {
        let deadline = Instant::now() + timeout;
        let mut header = [0u8; FRAME_HEADER_LEN];
        read_exact_by(&mut self.stream, &mut header, deadline, what)?;
        let len = frame_len(header, max)?;
        let mut payload = vec![0u8; len];
        read_exact_by(&mut self.stream, &mut payload, deadline, what)?;
        Ok(decode_message(&payload)?)
    }
}
