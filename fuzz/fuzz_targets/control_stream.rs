//! Fuzzes the native control-protocol decoder: preamble, frame splitting
//! and message decoding, as a server meets them on a new connection.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    sonde_wire::fuzzing::control_stream(data);
});
