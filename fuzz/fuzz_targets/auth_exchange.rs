//! Fuzzes the server's side of the token exchange: auth_hello and
//! auth_proof frames decoded, proved over and checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    sonde_wire::fuzzing::auth_exchange(data);
});
