//! `sonde compare --by`: rows per payload size, frame size, step or
//! family, each pairing A's group with B's, and `--chart` drawing the
//! selections against the size. Known truths written into an archive:
//! - UDP goodput of an "open" path and a "3des" path at three payload
//!   sizes, three results each: open 40–42, 60–62 and 90–92 Mbit/s, 3des
//!   20–22, 30–32 and 60–62 (001's drop per packet size);
//! - one NDR search over IPv4 and IPv6 at 128 and 1518-byte frames: IPv4 700 and
//!   950 Mbit/s, IPv6 600 and 940 (002's IPv6 against IPv4), its probes
//!   at 999 Mbit/s kept as trials;
//! - TCP in two campaigns' steps "A to B" and "B to A" (000 Table 2/3 per
//!   step): geant 10 and 20 Mbit/s, stesta 5 and 8;
//! - a UDP foreground at 1.5, 2 and 2.5 Mbit/s under a background of 80
//!   or 120 Mbit/s (004's loads): its jitter 1, 2 and 4 ms, or 3, 5 and 9.

use crate::common;
use common::{sonde, stderr};
use serde_json::Value;
use sonde_archive::{Placement, Store};
use sonde_model::method::{NdrSize, NdrSpec};
use sonde_model::{
    Direction, Figures, HostEnv, IpFamily, MethodResult, MethodSpec, PeerKind, Rate, Summary,
    TcpSpec, TestEnv, TestResult, TestSpec, Timestamp, UdpSpec,
};
use std::time::{Duration, UNIX_EPOCH};

fn at(i: u64) -> Timestamp {
    Timestamp(UNIX_EPOCH + Duration::from_secs(1_795_478_400 + i * 60))
}

fn with_goodput(spec: TestSpec, i: u64, bps: u64) -> TestResult {
    let env = TestEnv::between(HostEnv::default(), HostEnv::default(), PeerKind::Sonde);
    let mut r = TestResult::new(spec, env, at(i));
    r.summary = Summary {
        forward: Some(Figures {
            direction: Some(Direction::Forward),
            throughput_bps: Some(bps),
            ..Figures::default()
        }),
        ..Summary::default()
    };
    r
}

fn udp(payload: u32, family: IpFamily) -> TestSpec {
    TestSpec::Udp(UdpSpec {
        host: "b.example".into(),
        length: payload,
        bitrate: Rate::from_bps(150_000_000),
        family,
        ..UdpSpec::default()
    })
}

fn labelled(key: &str, value: &str) -> Placement {
    Placement {
        labels: [(key.to_string(), value.to_string())].into(),
        ..Placement::default()
    }
}

fn ndr_size(family: IpFamily, frame: u32, mbps: u64) -> NdrSize {
    let headers = if family == IpFamily::V6 { 66 } else { 46 };
    NdrSize {
        family,
        payload_bytes: frame - headers,
        frame_bytes: frame,
        rate_bps: mbps * 1_000_000,
        rate_pps: (mbps * 1_000_000) as f64 / f64::from(frame * 8),
        payload_rate_bps: mbps * 900_000,
        loss_pct: 0.0,
        trials: 2,
        confirmed: true,
        efficiency_pct: 98.0,
        max_pps: None,
        max_frame_bps: None,
        delay: None,
        rtt_p50_ms: None,
        trial_ids: Vec::new(),
        notes: Vec::new(),
    }
}

fn archive(dir: &common::TempDir) -> String {
    let db = dir.join("groups.db");
    let mut store = Store::open(db.to_str().unwrap()).unwrap();
    let mut batch = Vec::new();
    let mut i = 0;
    for (payload, open, des) in [(128, 40, 20), (768, 60, 30), (1408, 90, 60)] {
        for k in 0..3 {
            i += 1;
            let spec = udp(payload, IpFamily::V6);
            // PDR 98, 99 and 100 %: what the report draws UDP by.
            let with_pdr = |mut r: TestResult| {
                if let Some(f) = r.summary.forward.as_mut() {
                    f.pdr_pct = Some(98.0 + k as f64);
                }
                r
            };
            batch.push((
                with_pdr(with_goodput(spec.clone(), i, (open + k) * 1_000_000)),
                labelled("suite", "open"),
            ));
            batch.push((
                with_pdr(with_goodput(spec, i, (des + k) * 1_000_000)),
                labelled("suite", "3des"),
            ));
        }
    }
    for (campaign, ab, ba) in [("geant", 10, 20), ("stesta", 5, 8)] {
        for (step, mbps, from, to) in [("A to B", ab, "A", "B"), ("B to A", ba, "B", "A")] {
            i += 1;
            let spec = TestSpec::Tcp(TcpSpec {
                host: "b.example".into(),
                ..TcpSpec::default()
            });
            let mut at = labelled("step", step);
            at.campaign = Some(campaign.into());
            // The campaign's endpoints, as a step labels its results.
            at.labels.insert("from".into(), from.into());
            at.labels.insert("to".into(), to.into());
            batch.push((with_goodput(spec, i, mbps * 1_000_000), at));
        }
    }
    // 004's scenarios: a UDP foreground at 1.5, 2 and 2.5 Mbit/s against a
    // background of 80 or 120 Mbit/s (a trial titled "background"); the
    // foreground's jitter 1, 2 and 4 ms under 80, 3, 5 and 9 under 120.
    for (bg, rate, jitters) in [("80M", 80, [1.0, 2.0, 4.0]), ("120M", 120, [3.0, 5.0, 9.0])] {
        for (fg, jitter) in [1_500_000, 2_000_000, 2_500_000].into_iter().zip(jitters) {
            i += 1;
            let spec = TestSpec::Udp(UdpSpec {
                host: "b.example".into(),
                bitrate: Rate::from_bps(fg),
                ..UdpSpec::default()
            });
            let mut r = with_goodput(spec, i, fg);
            if let Some(f) = r.summary.forward.as_mut() {
                f.jitter_ms = Some(jitter);
            }
            batch.push((r, labelled("bg", bg)));
        }
        i += 1;
        let spec = TestSpec::Udp(UdpSpec {
            host: "b.example".into(),
            bitrate: Rate::from_bps(rate * 1_000_000),
            title: Some("background".into()),
            ..UdpSpec::default()
        });
        let mut r = with_goodput(spec, i, rate * 1_000_000);
        if let Some(f) = r.summary.forward.as_mut() {
            f.jitter_ms = Some(0.5);
        }
        batch.push((r, labelled("bg", bg)));
    }
    store.put_results(&batch).unwrap();

    let spec = NdrSpec {
        trial: UdpSpec {
            host: "b.example".into(),
            ..UdpSpec::default()
        },
        ..NdrSpec::default()
    };
    let mut m = MethodResult::new(MethodSpec::Ndr(spec), at(100));
    for (family, small, large) in [(IpFamily::V4, 700, 950), (IpFamily::V6, 600, 940)] {
        m.results.push(ndr_size(family, 128, small));
        m.results.push(ndr_size(family, 1518, large));
        for frame in [128, 1518] {
            let headers = if family == IpFamily::V6 { 66 } else { 46 };
            m.trials
                .push(with_goodput(udp(frame - headers, family), 101, 999_000_000));
        }
    }
    store.put_method(&m, &labelled("net", "twaren")).unwrap();
    format!("--archive={}", db.display())
}

fn compare(archive: &str, args: &[&str]) -> Vec<Value> {
    let out = sonde()
        .args(["compare", archive])
        .args(args)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "sonde compare {args:?}: {}",
        stderr(&out)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["rows"].as_array().unwrap().clone()
}

/// The (group, mean A, mean B, ratio) of each throughput row.
fn means(rows: &[Value]) -> Vec<(String, f64, f64, f64)> {
    rows.iter()
        .filter(|r| r["metric"] == "throughput")
        .map(|r| {
            (
                r["group"].as_str().unwrap_or("").to_string(),
                r["a"]["mean"].as_f64().unwrap(),
                r["b"]["mean"].as_f64().unwrap(),
                r["ratio"].as_f64().unwrap(),
            )
        })
        .collect()
}

/// `sonde compare ARGS --chart FILE`: the SVG drawn, and the number of
/// points of each of its data lines (the grid's and axes' lines, of two,
/// left out).
fn chart(archive: &str, dir: &common::TempDir, args: &[&str]) -> (String, Vec<usize>) {
    let svg = dir.join("chart.svg");
    let out = sonde()
        .args(["compare", archive])
        .args(args)
        .arg("--chart")
        .arg(&svg)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&svg).unwrap();
    let lines = common::svg::polyline_points(&text)
        .into_iter()
        .filter(|&n| n > 2)
        .collect();
    (text, lines)
}

fn near(got: f64, want: f64) -> bool {
    (got - want).abs() < 1e-9 * want.abs().max(1.0)
}

#[test]
fn rows_pair_each_payload_frame_and_step_with_its_own() {
    let dir = common::TempDir::new("compare-groups");
    let archive = archive(&dir);

    let rows = compare(&archive, &["suite=open", "suite=3des", "--by", "payload"]);
    let got = means(&rows);
    let want = [
        ("128 B", 41.0, 21.0),
        ("768 B", 61.0, 31.0),
        ("1408 B", 91.0, 61.0),
    ];
    assert_eq!(got.len(), want.len(), "{got:?}");
    for ((g, a, b, ratio), (wg, wa, wb)) in got.iter().zip(want) {
        assert_eq!(g, wg);
        assert!(near(*a, wa) && near(*b, wb), "{g}: {a} {b}");
        assert!(near(*ratio, wb / wa), "{g}: ratio {ratio}");
    }
    assert!(rows
        .iter()
        .all(|r| r["test"] == "udp" && r["direction"] == "forward"));
    // Three of each size: the difference has a confidence interval.
    assert!(rows.iter().all(|r| r["ci95"].is_array()), "{rows:?}");

    // NDR rates per frame size, IPv6 against IPv4: the probes (999
    // Mbit/s) are no row of their own and in no mean.
    let rows = compare(
        &archive,
        &[
            "family=v4",
            "family=v6",
            "--by",
            "frame",
            "--metric",
            "throughput",
        ],
    );
    let got = means(&rows);
    assert!(rows.iter().all(|r| r["test"] == "ndr"), "{rows:?}");
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0].0, "128 B frame");
    assert!(near(got[0].1, 700.0) && near(got[0].2, 600.0), "{got:?}");
    assert!(near(got[0].3, 600.0 / 700.0), "{got:?}");
    assert_eq!(got[1].0, "1518 B frame");
    assert!(near(got[1].3, 940.0 / 950.0), "{got:?}");
    // Only the NDR rates, as `test=ndr` asks.
    let rows = compare(
        &archive,
        &["test=ndr,family=v4", "test=ndr,family=v6", "--by", "frame"],
    );
    assert_eq!(means(&rows).len(), 2, "{rows:?}");

    // Per campaign step, each step with its own.
    let rows = compare(
        &archive,
        &["campaign=geant", "campaign=stesta", "--by", "step"],
    );
    let got = means(&rows);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0].0, "A to B");
    assert!(near(got[0].1, 10.0) && near(got[0].2, 5.0), "{got:?}");
    assert_eq!(got[1].0, "B to A");
    assert!(near(got[1].1, 20.0) && near(got[1].2, 8.0), "{got:?}");
    // Each row's direction named by the endpoints, as stats names it.
    let directions: Vec<&str> = rows
        .iter()
        .map(|r| r["direction"].as_str().unwrap())
        .collect();
    assert_eq!(directions, ["A to B", "B to A"], "{rows:?}");

    // Without --by the sizes are pooled into one row: 193/3 and 113/3
    // Mbit/s.
    let rows = compare(&archive, &["suite=open", "suite=3des"]);
    let got = means(&rows);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        near(got[0].1, 193.0 / 3.0) && near(got[0].2, 113.0 / 3.0),
        "{got:?}"
    );
}

#[test]
fn the_chart_draws_each_selection_against_the_payload() {
    let dir = common::TempDir::new("compare-groups-chart");
    let archive = archive(&dir);
    let (text, lines) = chart(
        &archive,
        &dir,
        &[
            "suite=open",
            "suite=3des",
            "--by",
            "payload",
            "--metric",
            "throughput",
        ],
    );
    // A series per selection, a point per size.
    assert_eq!(lines, [3, 3], "{text}");
    assert!(text.contains("suite=open") && text.contains("suite=3des"));
    assert!(text.contains("payload (bytes)"), "{text}");
    assert!(!text.contains("time (UTC)"), "{text}");
}

#[test]
fn a_report_of_several_selections_draws_them_together() {
    let dir = common::TempDir::new("compare-groups-report");
    let archive = archive(&dir);
    let out = sonde()
        .args(["report", &archive, "--select", "suite=open", "--select"])
        .args(["suite=3des", "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["title"], "suite=open against suite=3des");
    // A row per selection, in the order given, with its goodput mean.
    let rows = report["tables"][0]["rows"].as_array().unwrap();
    let means: Vec<(&str, f64)> = rows
        .iter()
        .map(|r| (r[0].as_str().unwrap(), r[3]["value"].as_f64().unwrap()))
        .collect();
    assert_eq!(means.len(), 2, "{rows:?}");
    assert_eq!(means[0].0, "suite=open");
    assert!(near(means[0].1, 193.0 / 3.0), "{means:?}");
    assert_eq!(means[1].0, "suite=3des");
    assert!(near(means[1].1, 113.0 / 3.0), "{means:?}");
    // Both on one chart: a line per selection, a point per result.
    let together = report["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "udp-groups-together")
        .unwrap_or_else(|| panic!("no overlay: {report}"));
    let series = together["panels"][0]["series"].as_array().unwrap();
    let lines: Vec<(&str, usize)> = series
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap(),
                s["points"].as_array().unwrap().len(),
            )
        })
        .collect();
    assert_eq!(lines, [("suite=open", 9), ("suite=3des", 9)]);
    // A selection that matches nothing is named.
    let out = sonde()
        .args([
            "report",
            &archive,
            "--select",
            "suite=none",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("--select suite=none"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn background_loads_are_overlaid_against_the_foreground_rate() {
    let dir = common::TempDir::new("compare-groups-qos");
    let archive = archive(&dir);
    // Rows: the foreground per offered rate, the background apart (its
    // two loads are different rates: no pair).
    let rows = compare(
        &archive,
        &["bg=80M", "bg=120M", "--by", "rate", "--metric", "jitter"],
    );
    let got: Vec<(&str, &str, f64, f64)> = rows
        .iter()
        .map(|r| {
            (
                r["test"].as_str().unwrap(),
                r["group"].as_str().unwrap(),
                r["a"]["mean"].as_f64().unwrap(),
                r["b"]["mean"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("udp", "1.5 Mbit/s", 1.0, 3.0),
            ("udp", "2 Mbit/s", 2.0, 5.0),
            ("udp", "2.5 Mbit/s", 4.0, 9.0)
        ],
        "{rows:?}"
    );
    let (text, lines) = chart(
        &archive,
        &dir,
        &["bg=80M", "bg=120M", "--by", "rate", "--metric", "jitter"],
    );
    // The foreground's panel: a line of three rates per load (the
    // background's panel: a point per load).
    assert_eq!(lines, [3, 3], "{text}");
    assert!(
        text.contains("bg=80M") && text.contains("bg=120M"),
        "{text}"
    );
    assert!(
        text.contains("udp: jitter") && text.contains("udp background: jitter"),
        "{text}"
    );
    assert!(text.contains("offered rate (Mbit/s)"), "{text}");
}
