//! UDP tests: the client end ([`client`]), one end's run of its streams
//! ([`side`]), the departure schedule ([`schedule`]), the send and
//! receive loops ([`send`], [`recv`]), flow control of unpaced tests
//! ([`flow`]) and the receiver's estimators ([`stats`]).

pub mod flow;
pub mod frames;
pub mod protocol;
pub mod recv;
pub mod schedule;
pub mod send;
pub mod side;
pub mod stats;
