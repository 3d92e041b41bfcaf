//! TCP tests: the client end ([`client`]), one end's run of its streams
//! ([`side`]), the data loops ([`stream`]) and TCP_INFO ([`info`]).

pub mod info;
pub mod protocol;
pub mod side;
pub mod stream;
