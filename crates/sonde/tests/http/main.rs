//! `sonde http` against real servers whose delays, workers and stalls are
//! programmed (tests/common/http_server.rs) and Debian's nginx.
//!
//! One test binary: each module below was a test file of its own.

#[path = "../common/mod.rs"]
mod common;

mod http_cli;
mod http_fixtures;
