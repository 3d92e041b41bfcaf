//! iperf3's `-J` output read into a [`TestResult`], so that measurements
//! made with iperf3 before sonde can join the archive.
//!
//! What iperf3 reports is taken as it is: the receiver's bytes and rate
//! per direction (TCP `sum_received`, UDP `sum_received` or, from older
//! iperf3, `sum` with its jitter and loss), retransmits, and each
//! interval's `sum`. The result's id is derived from the document, so
//! importing one file twice keeps it once.

use crate::{
    Direction, Figures, HostEnv, Interval, PeerKind, ResultId, Summary, TcpSpec, TestEnv,
    TestResult, TestSpec, Timestamp, UdpSpec,
};
use serde_json::Value;
use std::time::{Duration, UNIX_EPOCH};

/// Why a document is not an iperf3 result sonde can read.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum Iperf3ImportError {
    #[error("not an iperf3 -J document: no {0}")]
    Missing(&'static str),
    #[error("iperf3 reported an error: {0}")]
    Failed(String),
    #[error("iperf3 protocol '{0}': only TCP and UDP are read")]
    Protocol(String),
}

/// Whether `doc` looks like iperf3's `-J` output.
pub fn is_iperf3(doc: &Value) -> bool {
    doc.get("start")
        .is_some_and(|s| s.get("test_start").is_some())
        && doc.get("end").is_some()
}

fn f(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64)
}

fn u(v: &Value, key: &str) -> Option<u64> {
    v.get(key)
        .and_then(|x| x.as_u64().or_else(|| x.as_f64().map(|f| f.max(0.0) as u64)))
}

/// The figures of one iperf3 `sum` as `direction`.
fn figures(sum: &Value, direction: Direction, udp: bool) -> Figures {
    let lost = f(sum, "lost_percent");
    Figures {
        direction: Some(direction),
        received_bytes: u(sum, "bytes"),
        throughput_bps: f(sum, "bits_per_second").map(|b| b.max(0.0) as u64),
        retransmits: if udp { None } else { u(sum, "retransmits") },
        jitter_ms: if udp { f(sum, "jitter_ms") } else { None },
        loss_pct: if udp { lost } else { None },
        pdr_pct: if udp { lost.map(|l| 100.0 - l) } else { None },
        sent_packets: if udp { u(sum, "packets") } else { None },
        lost_packets: if udp { u(sum, "lost_packets") } else { None },
        ..Figures::default()
    }
}

/// Reads an iperf3 `-J` document.
pub fn from_iperf3(doc: &Value) -> Result<TestResult, Iperf3ImportError> {
    if let Some(e) = doc.get("error").and_then(Value::as_str) {
        return Err(Iperf3ImportError::Failed(e.to_string()));
    }
    let start = doc
        .get("start")
        .ok_or(Iperf3ImportError::Missing("start"))?;
    let test = start
        .get("test_start")
        .ok_or(Iperf3ImportError::Missing("start.test_start"))?;
    let end = doc.get("end").ok_or(Iperf3ImportError::Missing("end"))?;
    let protocol = test
        .get("protocol")
        .and_then(Value::as_str)
        .unwrap_or("TCP")
        .to_ascii_uppercase();
    let udp = match protocol.as_str() {
        "TCP" => false,
        "UDP" => true,
        p => return Err(Iperf3ImportError::Protocol(p.to_string())),
    };
    let direction = if u(test, "bidir") == Some(1) {
        Direction::Bidir
    } else if u(test, "reverse") == Some(1) {
        Direction::Reverse
    } else {
        Direction::Forward
    };
    let (host, port) = match start.get("connecting_to") {
        Some(c) => (
            c.get("host")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            u(c, "port").unwrap_or(5201) as u16,
        ),
        None => {
            let c = start
                .get("connected")
                .and_then(|c| c.get(0))
                .ok_or(Iperf3ImportError::Missing("start.connecting_to"))?;
            (
                c.get("remote_host")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                u(c, "remote_port").unwrap_or(5201) as u16,
            )
        }
    };
    let time = Duration::from_secs(u(test, "duration").unwrap_or(10).max(1));
    let parallel = u(test, "num_streams").unwrap_or(1).clamp(1, 128) as u16;
    let spec = if udp {
        TestSpec::Udp(UdpSpec {
            host: host.clone(),
            port,
            time,
            parallel,
            direction,
            bitrate: crate::Rate::from_bps(u(test, "target_bitrate").unwrap_or(0)),
            peer: PeerKind::Iperf3,
            ..UdpSpec::default()
        })
    } else {
        TestSpec::Tcp(TcpSpec {
            host: host.clone(),
            port,
            time,
            parallel,
            direction,
            peer: PeerKind::Iperf3,
            ..TcpSpec::default()
        })
    };
    let secs = start
        .get("timestamp")
        .and_then(|t| u(t, "timesecs"))
        .ok_or(Iperf3ImportError::Missing("start.timestamp.timesecs"))?;
    let mut client = HostEnv::default();
    if let Some(info) = start.get("system_info").and_then(Value::as_str) {
        client.os = info.to_string();
    }
    let mut r = TestResult::new(
        spec,
        TestEnv::between(client, HostEnv::default(), PeerKind::Iperf3),
        Timestamp(UNIX_EPOCH + Duration::from_secs(secs)),
    );
    r.id = ResultId::of_document(doc.to_string().as_bytes());
    // The data direction of `sum` and of `sum_bidir_reverse`.
    let (first, second) = match direction {
        Direction::Reverse => (Direction::Reverse, None),
        Direction::Bidir => (Direction::Forward, Some(Direction::Reverse)),
        Direction::Forward => (Direction::Forward, None),
    };
    let received = |key: &str| -> Option<&Value> {
        end.get(key)
            .or_else(|| if udp { end.get("sum") } else { None })
    };
    let mut summary = Summary::default();
    let mut put = |d: Direction, fig: Figures| match d {
        Direction::Reverse => summary.reverse = Some(fig),
        _ => summary.forward = Some(fig),
    };
    if let Some(sum) = received("sum_received") {
        let mut fig = figures(sum, first, udp);
        if let Some(sent) = end.get("sum_sent") {
            fig.sent_bytes = u(sent, "bytes");
            if !udp {
                fig.retransmits = u(sent, "retransmits");
            }
        }
        r.duration_s = f(sum, "seconds").unwrap_or(time.as_secs_f64());
        put(first, fig);
    }
    if let (Some(d), Some(sum)) = (second, end.get("sum_received_bidir_reverse")) {
        put(d, figures(sum, d, udp));
    }
    r.summary = summary;
    r.intervals = doc
        .get("intervals")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|i| {
                    let sum = i.get("sum")?;
                    let mut sums = vec![figures(sum, first, udp)];
                    if let (Some(d), Some(rev)) = (second, i.get("sum_bidir_reverse")) {
                        sums.push(figures(rev, d, udp));
                    }
                    Some(Interval {
                        start_s: f(sum, "start")?,
                        end_s: f(sum, "end")?,
                        omitted: sum.get("omitted").and_then(Value::as_bool).unwrap_or(false),
                        size_bytes: None,
                        streams: Vec::new(),
                        sums,
                        round_trip: None,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    if r.summary.forward.is_none() && r.summary.reverse.is_none() {
        return Err(Iperf3ImportError::Missing("end.sum_received"));
    }
    Ok(r)
}
