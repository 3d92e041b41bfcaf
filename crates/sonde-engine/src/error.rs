//! Everything that can stop a test, by kind.

use sonde_model::assemble::AssembleError;
use sonde_wire::{Refusal, WireError};
use std::io;
use std::net::{IpAddr, SocketAddr};

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("cannot resolve '{host}': {source}")]
    Resolve { host: String, source: io::Error },
    #[error("'{host}' has no {family} address")]
    NoAddress { host: String, family: &'static str },
    #[error("cannot connect to {addr}: {source}")]
    Connect { addr: SocketAddr, source: io::Error },
    /// The source address or port asked for (`-B`, `--cport`, ping's
    /// `-I ADDR`) cannot be bound.
    #[error("cannot send from {addr}: {source}")]
    Bind { addr: SocketAddr, source: io::Error },
    #[error("{context}: {source}")]
    Io {
        context: &'static str,
        source: io::Error,
    },
    #[error("timed out waiting for {what}")]
    Timeout { what: &'static str },
    #[error("the peer closed the connection while {during}")]
    Closed { during: &'static str },
    #[error("protocol error: {0}")]
    Wire(#[from] WireError),
    #[error("the server refused the test: {0}")]
    Refused(Refusal),
    #[error("the peer aborted the test: {0}")]
    Aborted(String),
    #[error("unexpected message from the peer: expected {expected}, got {got}")]
    Unexpected { expected: &'static str, got: String },
    #[error("cannot set {option}: {source}")]
    SocketOption { option: String, source: io::Error },
    #[error("{0}")]
    Unavailable(String),
    #[error("no network interface named '{name}' on this host")]
    NoInterface { name: String },
    #[error("source address {from} and target {target} are of different address families")]
    SourceFamily { from: IpAddr, target: IpAddr },
    #[error("the server speaks iperf3's protocol, not sonde's (use --iperf3)")]
    PeerIsIperf3,
    #[error("the iperf3 server is busy with another test (access denied)")]
    PeerBusy,
    /// The server's answer to a token proof was not made with the
    /// token's secret: it is not a server that holds the token.
    #[error(
        "the server did not prove it holds token {token}'s secret \
         (a server that does not know the token, or an impostor)"
    )]
    ServerNotProved { token: String },
    #[error("results do not match: {0}")]
    Assemble(#[from] AssembleError),
}

impl EngineError {
    pub fn io(context: &'static str) -> impl FnOnce(io::Error) -> EngineError {
        move |source| EngineError::Io { context, source }
    }
}
