//! Encapsulation overhead (seed 000 §3.3, 001, 002 Table 1): the bytes a
//! protocol stack puts on the wire per packet ([`Stack`]), the correction
//! of a measured goodput for a stack assumed, and a path's own overhead
//! estimated from goodput at several payload sizes ([`measure`]).

pub mod layer;
pub mod measure;
pub mod stack;

#[cfg(test)]
mod tests;

pub use layer::{Auth, Cipher, EspMode, Layer};
pub use measure::run_overhead;
pub use stack::{LayerBytes, Stack, StackError};

/// The payload each packet of a result carried: UDP's length, TCP's MSS
/// as the kernel had it (`None` for a ping, or a TCP result without it).
pub fn payload_per_packet(r: &sonde_model::TestResult) -> Option<u32> {
    match &r.spec {
        sonde_model::TestSpec::Udp(s) => Some(s.payload_len()),
        sonde_model::TestSpec::Tcp(_) => r.streams.iter().find_map(|s| s.client_socket.mss_bytes),
        sonde_model::TestSpec::Ping(_)
        | sonde_model::TestSpec::Http(_)
        | sonde_model::TestSpec::Trace(_) => None,
    }
}

/// How much more goodput a path would have carried without the tunnels
/// of `stack`, at `payload` bytes per packet: the stack's wire bytes over
/// those of the same packet untunnelled (seed 000 §3.3: 1414 / 1302).
pub fn correction_factor(stack: &Stack, payload: u32) -> f64 {
    let plain = stack.untunnelled().wire_bytes(payload);
    f64::from(stack.wire_bytes(payload)) / f64::from(plain.max(1))
}
