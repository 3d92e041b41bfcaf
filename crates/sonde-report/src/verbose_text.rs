//! `-V/--verbose`: what iperf3's `-V` adds to the text output — the
//! test's settings before it starts, and at the end each stream's
//! sockets as the kernel set them on both ends and each host. CPU use is
//! not measured by sonde, so it is not shown.

use crate::columns::id;
use sonde_model::{ByteSize, Direction, HostEnv, SocketInForce, TestResult, TestSpec};
use std::fmt::Write;

/// "Starting Test: protocol: TCP, 1 streams, 262144 byte blocks, …", or
/// nothing for ping.
pub fn test_settings(spec: &TestSpec) -> String {
    let (protocol, parallel, block, omit, time, direction, dscp, rate) = match spec {
        TestSpec::Tcp(s) => (
            "TCP",
            s.parallel,
            s.length.bytes(),
            s.omit,
            s.time,
            s.direction,
            s.dscp,
            s.bitrate.map(|r| r.to_string()),
        ),
        TestSpec::Udp(s) => (
            "UDP",
            s.parallel,
            u64::from(s.payload_len()),
            s.omit,
            s.time,
            s.direction,
            s.dscp,
            Some(format!("{} ({})", s.stream_rate(), s.profile)),
        ),
        TestSpec::Ping(_) | TestSpec::Http(_) | TestSpec::Trace(_) => return String::new(),
    };
    let way = match direction {
        Direction::Forward => "client sends",
        Direction::Reverse => "server sends (reverse)",
        Direction::Bidir => "both send (bidir)",
    };
    let mut line = format!(
        "Starting Test: protocol: {protocol}, {parallel} streams, {block} byte blocks, \
         omitting {} seconds, {} second test, {way}, tos {}",
        omit.as_secs_f64(),
        time.as_secs_f64(),
        dscp.map_or(0, |d| d.tos_byte()),
    );
    if let Some(d) = dscp {
        let _ = write!(line, " (DSCP {d})");
    }
    if let Some(rate) = rate {
        let _ = write!(line, ", {rate} per stream");
    }
    line.push('\n');
    line
}

/// A buffer size, or `?` where the far end did not say (an iperf3 peer).
fn buffer(bytes: Option<u64>) -> String {
    bytes.map_or_else(|| "?".to_owned(), |b| ByteSize::from_bytes(b).to_string())
}

/// One socket: `[::1]:40000 -> [::1]:5201: sndbuf 2.50 MiB, rcvbuf 128
/// KiB, mss 32768, cc cubic` (MSS and cc where known: TCP).
fn socket(s: &SocketInForce) -> String {
    let mut text = format!(
        "{} -> {}: sndbuf {}, rcvbuf {}",
        s.local,
        s.remote,
        buffer(s.sndbuf_bytes),
        buffer(s.rcvbuf_bytes),
    );
    if let Some(m) = s.mss_bytes {
        let _ = write!(text, ", mss {m}");
    }
    if let Some(cc) = &s.congestion {
        let _ = write!(text, ", cc {cc}");
    }
    if let Some(d) = s.dscp {
        let _ = write!(text, ", dscp {d}");
    }
    if let Some(f) = s.flowlabel {
        let _ = write!(text, ", flowlabel {f}");
    }
    text
}

/// `sonde 0.1.0 on linux 6.1.0, 4 CPUs, default cc cubic`.
fn host(env: &HostEnv) -> String {
    if env.os.is_empty() {
        return env.sonde_version.clone();
    }
    format!(
        "sonde {} on {} {} ({}), {} CPUs, default cc {}",
        env.sonde_version,
        env.os,
        env.kernel,
        env.hostname,
        env.cpus,
        env.default_congestion.as_deref().unwrap_or("?"),
    )
}

/// Both hosts and every stream's sockets, client's and server's.
pub fn stream_details(r: &TestResult) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Test Complete. Settings in force:");
    let _ = writeln!(out, "client: {}", host(&r.env.client));
    let _ = writeln!(out, "server: {}", host(&r.env.server));
    for s in &r.streams {
        let stream = id(Some(s.figures.stream.unwrap_or_default()));
        let _ = writeln!(out, "{stream} client {}", socket(&s.client_socket));
        let _ = writeln!(out, "{stream} server {}", socket(&s.server_socket));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_settings_line_names_what_iperf3_s_does() {
        let spec: TestSpec = serde_json::from_str(
            r#"{"test": "tcp", "host": "::1", "parallel": 2, "length_bytes": 131072,
                "time_s": 3, "dscp": "EF", "direction": "reverse"}"#,
        )
        .unwrap();
        let line = test_settings(&spec);
        assert!(line.starts_with("Starting Test: protocol: TCP, 2 streams, 131072 byte blocks"));
        assert!(line.contains("3 second test"), "{line}");
        assert!(line.contains("tos 184 (DSCP EF (46))"), "{line}");
        assert!(line.contains("server sends"), "{line}");
    }

    #[test]
    fn each_stream_shows_both_sockets() {
        let path = format!(
            "{}/../sonde-model/tests/fixtures/v1/tcp_forward.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let r = sonde_model::load_result(&std::fs::read_to_string(path).unwrap()).unwrap();
        let text = stream_details(&r);
        let s = &r.streams[0];
        assert!(
            text.contains(&format!("client {} -> ", s.client_socket.local)),
            "{text}"
        );
        assert!(
            text.contains(&format!("server {} -> ", s.server_socket.local)),
            "{text}"
        );
        assert_eq!(text.lines().count(), 3 + 2 * r.streams.len(), "{text}");
    }
}
