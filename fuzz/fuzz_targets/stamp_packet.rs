//! Fuzzes the STAMP (RFC 8762) codec: sender and reflector packets in
//! both modes, and the reflector's reply, as a Session-Reflector or
//! Session-Sender meets any datagram that reaches its port.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    sonde_wire::fuzzing::stamp_packet(data);
});
