//! Every format-1 document sonde wrote (real `-J` output, captured before
//! format 2) loads through the versioned loader into the current
//! `TestResult`, with its figures where format 2 keeps them.

use sonde_model::{load_result, Direction, PeerKind, TestKind, TestResult, RESULT_FORMAT_VERSION};
use std::path::Path;

fn fixtures() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1");
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            (p.extension()? == "json").then(|| {
                let name = p.file_stem().unwrap().to_string_lossy().into_owned();
                (name, std::fs::read_to_string(&p).unwrap())
            })
        })
        .collect();
    out.sort();
    out
}

fn load(name: &str) -> (serde_json::Value, TestResult) {
    let (_, text) = fixtures().into_iter().find(|(n, _)| n == name).unwrap();
    let raw: serde_json::Value = serde_json::from_str(&text).unwrap();
    (raw, load_result(&text).unwrap())
}

fn u(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn every_format_1_document_loads_and_round_trips() {
    let all = fixtures();
    assert!(all.len() >= 20, "only {} fixtures", all.len());
    for (name, text) in all {
        let r = load_result(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(r.format_version, RESULT_FORMAT_VERSION, "{name}");
        let kind = name.split('_').next().unwrap();
        assert_eq!(r.test.name(), kind, "{name}");
        assert_eq!(r.spec.kind(), r.test, "{name}");
        // The same old file always gets the same id.
        assert_eq!(load_result(&text).unwrap().id, r.id, "{name}");
        // Written out as format 2, it reads back unchanged.
        let again = load_result(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(again, r, "{name}");
    }
}

#[test]
fn tcp_figures_move_to_their_sections() {
    let (raw, r) = load("tcp_bidir_omit");
    let total = r.summary.total.as_ref().unwrap();
    assert_eq!(total.received_bytes, Some(u(&raw["summary"]["bytes"])));
    assert_eq!(
        total.throughput_bps,
        Some(u(&raw["summary"]["throughput_bps"]))
    );
    let rev = r.summary.reverse.as_ref().unwrap();
    assert_eq!(
        rev.received_bytes,
        Some(u(&raw["summary"]["reverse"]["bytes"]))
    );
    assert_eq!(rev.streams, Some(2));
    assert_eq!(r.streams.len(), 4);
    assert_eq!(
        r.streams[0].figures.srtt_ms,
        raw["streams"][0]["rtt_ms"].as_f64()
    );
    assert!(r.intervals[0].omitted);
    assert_eq!(r.intervals[1].sums.len(), 2);
    assert_eq!(r.env.peer, Some(PeerKind::Sonde));
}

#[test]
fn an_iperf3_peer_s_unreported_figures_become_unknown() {
    let (raw, r) = load("tcp_iperf3_peer_reverse");
    assert_eq!(r.env.peer, Some(PeerKind::Iperf3));
    assert_eq!(raw["streams"][0]["rtt_ms"], serde_json::Value::Null);
    assert_eq!(r.streams[0].figures.srtt_ms, None);
    let (_, u) = load("udp_iperf3_peer");
    assert_eq!(u.env.peer, Some(PeerKind::Iperf3));
    assert_eq!(u.summary.forward.as_ref().unwrap().duplicates, None);
}

#[test]
fn udp_counts_keep_their_values_under_unit_names() {
    let (raw, r) = load("udp_reverse_ef");
    let old = &raw["summary"]["reverse"];
    let s = r.summary.direction(Direction::Reverse).unwrap();
    assert_eq!(s.sent_packets, Some(u(&old["sent"])));
    assert_eq!(s.received_packets, Some(u(&old["received"])));
    assert_eq!(s.lost_packets, Some(u(&old["lost"])));
    assert_eq!(s.received_bytes, Some(u(&old["bytes"])));
    assert_eq!(s.sender_throughput_bps, Some(u(&old["offered_bps"])));
    assert_eq!(s.loss_pct, old["loss_pct"].as_f64());
    assert_eq!(s.classes.len(), old["classes"].as_array().unwrap().len());
    assert!(r.summary.forward.is_none());
    let (_, video) = load("udp_video");
    let classes = &video.summary.forward.as_ref().unwrap().classes;
    assert_eq!(classes.len(), 3, "I, P and B frames: {classes:?}");
}

#[test]
fn ping_figures_move_under_summary_and_env() {
    let (raw, r) = load("ping_stamp");
    assert_eq!(r.test, TestKind::Ping);
    let rt = r.summary.round_trip.as_ref().unwrap();
    assert_eq!(rt.sent_packets, Some(u(&raw["sent"])));
    assert_eq!(
        rt.rtt_ms.unwrap().p50,
        raw["rtt_ms"]["p50"].as_f64().unwrap()
    );
    assert_eq!(
        r.env.target.unwrap().to_string(),
        raw["target"].as_str().unwrap()
    );
    assert_eq!(
        r.env.method.unwrap().name(),
        raw["method"].as_str().unwrap()
    );
    assert!(r.series[0].one_way.is_some());
    let (raw, sizes) = load("ping_icmp_sizes");
    assert_eq!(sizes.series.len(), 3);
    assert_eq!(
        sizes.intervals.len(),
        raw["intervals"].as_array().unwrap().len()
    );
    assert!(sizes.intervals.iter().all(|i| i.size_bytes.is_some()));
}

#[test]
fn latency_under_load_moves_under_summary() {
    for name in ["tcp_latency", "udp_latency"] {
        let (raw, r) = load(name);
        let l = r.summary.latency.as_ref().unwrap();
        assert!(r.spec.latency(), "{name}: the spec says latency was asked");
        assert_eq!(l.method.name(), raw["latency"]["method"].as_str().unwrap());
        assert_eq!(l.increase_ms, raw["latency"]["increase_ms"].as_f64());
        assert_eq!(
            l.loaded.sent_packets,
            Some(u(&raw["latency"]["loaded"]["sent"]))
        );
    }
}

#[test]
fn interrupted_runs_stay_interrupted() {
    for name in ["tcp_interrupted", "udp_interrupted", "ping_interrupted"] {
        let (_, r) = load(name);
        assert!(r.interrupted, "{name}");
    }
}
