//! Fuzzes the iperf3 codecs: the control-stream decoder of either side
//! (cookie, state bytes, capped JSON frames, server error codes) with
//! round trips of whatever decodes, and the UDP header and connect
//! datagrams.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    sonde_wire::fuzzing::iperf3_control(data);
});
