//! Fuzzes the UDP test-packet and hello decoders, as a receiver meets
//! any datagram that reaches its port.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    sonde_wire::fuzzing::udp_datagram(data);
});
