use super::*;
use sonde_model::load_result;

fn v1(name: &str) -> TestResult {
    let path = format!(
        "{}/../sonde-model/tests/fixtures/v1/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    load_result(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// What sonde 0.1 printed for these format-1 documents.
const SIZES: &str = "
--- 127.0.0.1 ping statistics ---
  size   sent   recv   loss%    min ms    avg ms    max ms     mdev    p50 ms    p99 ms
    64      3      3    0.00     0.082     0.116     0.179    0.045     0.086     0.179
   512      3      3    0.00     0.080     0.107     0.122    0.019     0.118     0.122
  1408      3      3    0.00     0.148     0.176     0.192    0.020     0.188     0.192
9 packets transmitted, 9 received, 0.000% packet loss, time 317ms
rtt min/avg/max/mdev = 0.080/0.133/0.192/0.043 ms
rtt p50/p90/p99 = 0.122/0.192/0.192 ms
";

const STAMP: &str = "
--- ::1 ping statistics ---
5 packets transmitted, 5 received, 0.000% packet loss, time 205ms
rtt min/avg/max/mdev = 0.065/0.068/0.074/0.003 ms
rtt p50/p90/p99 = 0.068/0.074/0.074 ms
one-way out min/avg/max = 0.027/0.043/0.050 ms
one-way back min/avg/max = 0.020/0.026/0.041 ms
reflector dwell avg 107.6 µs, max 158.1 µs
";

#[test]
fn the_summary_of_a_format_1_result_reads_as_it_did() {
    assert_eq!(ping_summary(&v1("ping_icmp_sizes")), SIZES);
    assert_eq!(crate::summary(&v1("ping_stamp")), STAMP);
    assert!(ping_summary(&v1("ping_interrupted")).ends_with("\ninterrupted\n"));
}

#[test]
fn unknown_counts_are_dashes() {
    let mut r = v1("ping_icmp");
    r.summary.round_trip = None;
    let text = ping_summary(&r);
    assert!(
        text.contains("- packets transmitted, - received, -% packet loss"),
        "{text}"
    );
    assert!(!text.contains("rtt min"), "{text}");
}

#[test]
fn answers_show_the_bytes_on_the_wire() {
    assert_eq!(reply_bytes(56, ProbeMethod::IcmpRaw), 64);
    assert_eq!(reply_bytes(44, ProbeMethod::Stamp), 44);
    assert_eq!(
        ping_header("::1", "", 56, ProbeMethod::IcmpDatagram),
        "PING ::1: 56 data bytes (icmp-datagram)\n"
    );
}
