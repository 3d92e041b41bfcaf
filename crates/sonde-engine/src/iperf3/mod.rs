//! Interoperability with iperf3: what sonde's iperf3 client (sonde-run's
//! `iperf3_tcp`, `iperf3_udp`) and its iperf3 server (sonde-server's
//! `iperf3/`) share: the control connection, the results, the UDP data.
//! The protocol is described in docs/iperf3-protocol.md; its byte
//! layouts are in `sonde_wire::iperf3`.

pub mod control;
pub mod udp_data;

use sonde_model::{Direction, SideReport, StreamRole};
use sonde_wire::iperf3::{self as wire, stream_id, Results, StreamResult};

/// Second handles on the data connections, held until the test is over:
/// an iperf3 peer keeps writing until it has seen TEST_END, and a
/// connection closed under it (with data unread) resets, which iperf3
/// takes for a failed test.
pub fn hold_open(streams: &[crate::tcp::side::DataStream]) -> Vec<std::net::TcpStream> {
    streams
        .iter()
        .filter_map(|d| d.stream.try_clone().ok())
        .collect()
}

/// One end's results as iperf3 exchanges them: per stream, the bytes
/// sent after the warm-up or all bytes received, and a sender's
/// retransmits.
pub fn results_of(side: &SideReport) -> Results {
    let sending = side.streams.iter().any(|s| s.role == StreamRole::Sender);
    let streams = side
        .streams
        .iter()
        .map(|s| {
            let sender = s.role == StreamRole::Sender;
            StreamResult {
                id: stream_id(u32::from(s.stream)),
                bytes: if sender {
                    s.measured_bytes
                } else {
                    s.total_bytes
                },
                retransmits: match (sender, s.final_tcp.and_then(|t| t.total_retrans)) {
                    (true, Some(r)) => {
                        i64::try_from(r.saturating_sub(s.omitted_retrans)).unwrap_or(i64::MAX)
                    }
                    _ => -1,
                },
                jitter: 0.0,
                errors: 0,
                omitted_errors: None,
                packets: 0,
                omitted_packets: None,
                start_time: Some(0.0),
                end_time: Some(s.measured_secs),
            }
        })
        .collect();
    Results {
        cpu_util_total: 0.0,
        cpu_util_user: 0.0,
        cpu_util_system: 0.0,
        sender_has_retransmits: if sending { 1 } else { -1 },
        congestion_used: None,
        server_output_json: None,
        server_output_text: None,
        streams,
    }
}

/// iperf3's direction as sonde says it.
pub fn sonde_direction(d: wire::Direction) -> Direction {
    match d {
        wire::Direction::Forward => Direction::Forward,
        wire::Direction::Reverse => Direction::Reverse,
        wire::Direction::Bidirectional => Direction::Bidir,
    }
}
