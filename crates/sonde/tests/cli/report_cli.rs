//! `sonde report` and `sonde compare` on golden data: a fixed archive made
//! by a generator (two days of hourly results whose figures follow a
//! formula), so that every number in the tables is worked out by hand
//! below; each SVG parses and holds the series and points it should; each
//! PNG decodes at its size; the HTML opens in a real headless Chromium
//! without console errors, and prints to PDF.

use crate::common;
use common::svg::polyline_points;
use common::{sonde, stderr};
use sonde_archive::{Placement, Store};
use sonde_model::{
    Direction, Figures, HostEnv, Interval, PeerKind, PingSpec, RttStats, Summary, TcpSpec, TestEnv,
    TestResult, TestSpec, Timestamp,
};
use std::time::{Duration, UNIX_EPOCH};

/// 2026-11-24T00:00:00Z.
const DAY0: u64 = 1_795_478_400;

fn placed(step: &str) -> Placement {
    Placement {
        campaign: Some("golden".into()),
        labels: [("step".to_string(), step.to_string())].into(),
        ..Placement::default()
    }
}

fn env() -> TestEnv {
    TestEnv::between(HostEnv::default(), HostEnv::default(), PeerKind::Sonde)
}

/// TCP A to B at hour `h` of day `d`: 7 + 0.1·h + d Mbit/s; B to A half
/// of it.
fn tcp(d: u64, h: u64, direction: Direction, k: f64) -> TestResult {
    let spec = TestSpec::Tcp(TcpSpec {
        host: "b.example".into(),
        direction,
        ..TcpSpec::default()
    });
    let at = UNIX_EPOCH + Duration::from_secs(DAY0 + d * 86_400 + h * 3600 + 60);
    let mut r = TestResult::new(spec, env(), Timestamp(at));
    let bps = (k * (7_000_000.0 + 100_000.0 * h as f64 + 1_000_000.0 * d as f64)).round() as u64;
    let f = Figures {
        direction: Some(direction),
        throughput_bps: Some(bps),
        ..Figures::default()
    };
    r.duration_s = 10.0;
    r.summary = match direction {
        Direction::Reverse => Summary {
            reverse: Some(f),
            ..Summary::default()
        },
        _ => Summary {
            forward: Some(f),
            ..Summary::default()
        },
    };
    r
}

/// A ping at hour `h` of day `d`: ten intervals, the i-th of RTT
/// 90 + (h mod 4) + i/10 ms, so its median is 90.4 + (h mod 4) ms
/// (nearest rank: the fifth of ten).
fn ping(d: u64, h: u64) -> TestResult {
    let spec = TestSpec::Ping(PingSpec {
        host: "b.example".into(),
        ..PingSpec::default()
    });
    let at = UNIX_EPOCH + Duration::from_secs(DAY0 + d * 86_400 + h * 3600 + 120);
    let mut r = TestResult::new(spec, env(), Timestamp(at));
    let base = 90.0 + (h % 4) as f64;
    let rtts: Vec<f64> = (0..10).map(|i| base + f64::from(i) / 10.0).collect();
    r.intervals = rtts
        .iter()
        .enumerate()
        .map(|(i, v)| Interval {
            start_s: i as f64,
            end_s: i as f64 + 1.0,
            omitted: false,
            size_bytes: None,
            streams: Vec::new(),
            sums: Vec::new(),
            round_trip: Some(Figures {
                rtt_ms: RttStats::from_ms(&[*v]),
                ..Figures::default()
            }),
        })
        .collect();
    r.summary = Summary {
        round_trip: Some(Figures {
            rtt_ms: RttStats::from_ms(&rtts),
            loss_pct: Some(0.0),
            ..Figures::default()
        }),
        ..Summary::default()
    };
    r
}

fn golden(name: &str) -> (common::TempDir, String) {
    let dir = common::TempDir::new(&format!("report-{name}"));
    let db = dir.join("golden.db");
    let mut store = Store::open(db.to_str().unwrap()).unwrap();
    let mut batch = Vec::new();
    for d in 0..2 {
        for h in 0..24 {
            batch.push((tcp(d, h, Direction::Forward, 1.0), placed("TCP A to B")));
            batch.push((tcp(d, h, Direction::Reverse, 0.5), placed("TCP B to A")));
            batch.push((ping(d, h), placed("ping A to B")));
        }
    }
    assert_eq!(store.put_results(&batch).unwrap(), 144);
    (dir, format!("--archive={}", db.display()))
}

fn ok(args: &[&str]) -> Vec<u8> {
    let out = sonde().args(args).output().unwrap();
    assert!(out.status.success(), "sonde {args:?}: {}", stderr(&out));
    out.stdout
}

fn row<'a>(report: &'a serde_json::Value, group: &str) -> &'a Vec<serde_json::Value> {
    report["tables"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r[0] == group)
        .unwrap_or_else(|| panic!("no row {group}"))
        .as_array()
        .unwrap()
}

fn value(cell: &serde_json::Value) -> f64 {
    cell["value"]
        .as_f64()
        .unwrap_or_else(|| panic!("not a number: {cell}"))
}

#[test]
fn the_tables_carry_the_numbers_worked_out_by_hand() {
    let (_dir, archive) = golden("tables");
    let report: serde_json::Value =
        serde_json::from_slice(&ok(&["report", &archive, "--format", "json"])).unwrap();
    // TCP A to B: 7 + 0.1·h + d over h in 0..24, d in 0..2 (48 results).
    // Mean: 7 + 0.1 × 11.5 + 0.5 = 8.65 Mbit/s.
    // Sample variance: (0.01 × (24² − 1)/12 + 0.25) × 48/47 = 0.744681, sd 0.862949.
    let a = row(&report, "TCP A to B");
    assert_eq!(value(&a[2]), 48.0);
    assert!((value(&a[3]) - 8.65).abs() < 1e-9, "{}", a[3]);
    assert!((value(&a[4]) - 0.862_949).abs() < 1e-6, "{}", a[4]);
    // B to A is half: 4.325, sd 0.431474.
    let b = row(&report, "TCP B to A");
    assert!((value(&b[3]) - 4.325).abs() < 1e-9);
    assert!((value(&b[4]) - 0.431_474).abs() < 1e-6);
    // Ping: medians 90.4 + (h mod 4): mean 90.4 + 1.5 = 91.9 ms; the
    // RTT median's columns are the last two, the RTT mean's (each ping's
    // mean, 90.45 + (h mod 4): 91.95 ms) the two before.
    let p = row(&report, "ping A to B");
    assert!(
        (value(&p[p.len() - 2]) - 91.9).abs() < 1e-9,
        "{}",
        p[p.len() - 2]
    );
    assert!(
        (value(&p[p.len() - 4]) - 91.95).abs() < 1e-9,
        "{}",
        p[p.len() - 4]
    );
    // Provenance: every result, the selection, the version.
    let prov = &report["provenance"];
    assert_eq!(prov["result_ids"].as_array().unwrap().len(), 144);
    assert_eq!(prov["sonde_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(prov["queries"][0], "every result");
    // A heat map per group: 24 hours × 2 days; cell (05 h, day 2) is
    // 7 + 0.5 + 1 = 8.5 Mbit/s.
    let heat = report["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "heat-tcp-a-to-b")
        .expect("a heat map of TCP A to B");
    assert_eq!(heat["x_names"], serde_json::json!(["11-24", "11-25"]));
    assert!((heat["cells"][5][1].as_f64().unwrap() - 8.5).abs() < 1e-9);
}

#[test]
fn compare_gives_the_ratio_and_its_interval() {
    let (_dir, archive) = golden("compare");
    let out = ok(&[
        "compare",
        &archive,
        "step=TCP A to B",
        "step=TCP B to A",
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let r = &v["rows"][0];
    assert_eq!(r["metric"], "throughput");
    assert!((r["ratio"].as_f64().unwrap() - 0.5).abs() < 1e-9);
    assert!((r["difference"].as_f64().unwrap() + 4.325).abs() < 1e-9);
    // se = √(0.744681/48 + 0.186170/48) = 0.139262; df = 78.3 (Welch);
    // t(0.975, 78.3) = 1.9906: the interval −4.325 ± 0.2772.
    let (lo, hi) = (
        r["ci95"][0].as_f64().unwrap(),
        r["ci95"][1].as_f64().unwrap(),
    );
    assert!(
        (lo + 4.6022).abs() < 2e-3 && (hi + 4.0478).abs() < 2e-3,
        "{lo} {hi}"
    );
    assert!(r["p"].as_f64().unwrap() < 1e-10);
    let text = String::from_utf8(ok(&[
        "compare",
        &archive,
        "step=TCP A to B",
        "step=TCP B to A",
    ]))
    .unwrap();
    assert!(
        text.contains("0.500") && text.contains("< 0.0001 *"),
        "{text}"
    );
}

#[test]
fn each_figure_is_an_svg_with_its_points_and_a_png_of_its_size() {
    let (dir, archive) = golden("figures");
    let figs = dir.join("fig");
    ok(&[
        "report",
        &archive,
        "--figures",
        figs.to_str().unwrap(),
        "-o",
        dir.join("r.md").to_str().unwrap(),
        "--format",
        "md",
    ]);
    let svg = |id: &str| std::fs::read_to_string(figs.join(format!("{id}.svg"))).unwrap();
    // TCP over time: two panels (A to B, B to A), 48 points each.
    let lines = polyline_points(&svg("tcp-over-time"));
    assert_eq!(lines.iter().filter(|n| **n == 48).count(), 2, "{lines:?}");
    // The heat map: 48 cells, the 50 steps of its scale, the background.
    let heat = svg("heat-tcp-a-to-b");
    let doc = roxmltree::Document::parse(&heat).unwrap();
    assert_eq!(
        doc.descendants().filter(|n| n.has_tag_name("rect")).count(),
        48 + 50 + 1
    );
    // The smoke: 48 medians, each a two-point line in a loss colour.
    let smoke = svg("smoke-ping-a-to-b");
    let doc = roxmltree::Document::parse(&smoke).unwrap();
    let medians = doc
        .descendants()
        .filter(|n| n.has_tag_name("polyline") && n.attribute("stroke") == Some("#00A000"))
        .count();
    assert_eq!(medians, 48 + 1, "48 medians and the legend's sample");
    for (id, size) in [
        ("tcp-over-time", (1040, 340)),
        ("heat-tcp-a-to-b", (900, 520)),
        ("smoke-ping-a-to-b", (900, 420)),
    ] {
        let png = std::fs::read(figs.join(format!("{id}.png"))).unwrap();
        let p = resvg::tiny_skia::Pixmap::decode_png(&png).expect("a PNG");
        assert_eq!((p.width(), p.height()), size, "{id}");
    }
    let md = std::fs::read_to_string(dir.join("r.md")).unwrap();
    assert!(
        md.contains("| TCP A to B | tcp | 48 | 8.650 | 0.863 |"),
        "{md}"
    );
    assert!(md.contains("/heat-tcp-a-to-b.svg)"), "{md}");
}

/// Debian's Chromium, installed by scripts/system-deps.sh.
fn chromium() -> &'static str {
    for c in ["/usr/bin/chromium", "/usr/bin/chromium-browser"] {
        if std::path::Path::new(c).exists() {
            return c;
        }
    }
    panic!("chromium is not installed (scripts/system-deps.sh installs it)");
}

#[test]
fn the_html_opens_in_chromium_without_errors_and_prints_to_pdf() {
    let (dir, archive) = golden("html");
    let html = dir.join("report.html");
    ok(&[
        "report",
        &archive,
        "--title",
        "Golden",
        "-o",
        html.to_str().unwrap(),
    ]);
    let shot = dir.join("report.png");
    let out = std::process::Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg("--window-size=1280,4000")
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", html.display()))
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    // Chromium logs every console message as `INFO:CONSOLE` whatever its
    // level; the report has no script, so any is a fault.
    let console_errors: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console_errors.is_empty(), "{console_errors:?}");
    let p = resvg::tiny_skia::Pixmap::decode_png(&std::fs::read(&shot).unwrap()).unwrap();
    assert_eq!(p.width(), 1280);
    // The page holds its figures inline: no outside file is asked for.
    let page = std::fs::read_to_string(&html).unwrap();
    assert_eq!(
        page.matches("<svg").count(),
        2 + 1 + 3 + 1,
        "2 over-time, 1 of the groups together, 3 heat maps, 1 smoke"
    );
    assert!(!page.contains("src=\"http") && !page.contains("<script"));
    // The PDF, printed by Chromium.
    let pdf = dir.join("report.pdf");
    ok(&[
        "report",
        &archive,
        "--format",
        "pdf",
        "-o",
        pdf.to_str().unwrap(),
    ]);
    let bytes = std::fs::read(&pdf).unwrap();
    assert!(
        bytes.starts_with(b"%PDF-") && bytes.len() > 10_000,
        "{}",
        bytes.len()
    );
}

#[test]
fn methods_kept_in_the_archive_get_their_tables_and_figures() {
    let (dir, archive) = golden("methods");
    let server = common::ServerProc::start(&["--no-reflector"]);
    let port = server.port.to_string();
    // A rate sweep and an NDR search on loopback, kept with --archive.
    ok(&[
        "sweep",
        "::1",
        "-p",
        &port,
        "--rates",
        "1M,2M",
        "-t",
        "1s",
        "--gap",
        "0.2s",
        "-T",
        "loopback sweep",
        &archive,
    ]);
    ok(&[
        "ndr",
        "::1",
        "-p",
        &port,
        "--sizes",
        "512,1024",
        "--max-rate",
        "4M",
        "--trial",
        "1s",
        "--confirm",
        "1s",
        "--gap",
        "0.2s",
        "--resolution",
        "20%",
        "-T",
        "loopback NDR",
        &archive,
    ]);
    let report: serde_json::Value =
        serde_json::from_slice(&ok(&["report", &archive, "--format", "json"])).unwrap();
    let tables = report["tables"].as_array().unwrap();
    let ndr = tables
        .iter()
        .find(|t| t["title"].as_str().unwrap().starts_with("loopback NDR"))
        .expect("the NDR table");
    let frames: Vec<f64> = ndr["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| value(&r[1]))
        .collect();
    assert_eq!(frames, [512.0, 1024.0]);
    let figures = report["figures"].as_array().unwrap();
    let sweep = figures
        .iter()
        .find(|f| f["id"].as_str().unwrap().starts_with("sweep-"))
        .expect("the sweep's figure");
    // A rate sweep: the caption names its x axis as its panels do.
    assert!(
        sweep["caption"]
            .as_str()
            .unwrap()
            .starts_with("loopback sweep: goodput and PDR against offered (Mbit/s)"),
        "{}",
        sweep["caption"]
    );
    assert!(figures
        .iter()
        .any(|f| f["id"].as_str().unwrap().starts_with("ndr-")));
    // The sweep's trials are not drawn as groups of their own.
    let groups: Vec<&str> = tables[0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[0].as_str().unwrap())
        .collect();
    assert_eq!(groups, ["TCP A to B", "TCP B to A", "ping A to B"]);
    // The SVGs: the sweep's goodput series has its two steps.
    let figs = dir.join("fig");
    ok(&[
        "report",
        &archive,
        "--figures",
        figs.to_str().unwrap(),
        "-o",
        dir.join("r.html").to_str().unwrap(),
    ]);
    let id = sweep["id"].as_str().unwrap();
    let lines = polyline_points(&std::fs::read_to_string(figs.join(format!("{id}.svg"))).unwrap());
    assert!(lines.contains(&2), "{lines:?}");
}

#[test]
fn more_than_two_selections_are_each_compared_with_the_first() {
    let (_dir, archive) = golden("three");
    let out = ok(&[
        "compare",
        &archive,
        "step=TCP A to B",
        "step=TCP B to A",
        "step=TCP A to B",
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["against"], "step=TCP B to A");
    assert!((rows[1]["ratio"].as_f64().unwrap() - 1.0).abs() < 1e-12);
    assert!((rows[1]["p"].as_f64().unwrap() - 1.0).abs() < 1e-12);
}

/// The heat map `id` of the report made with `--heat-map layout`.
fn heat(archive: &str, layout: &str, id: &str) -> serde_json::Value {
    let report: serde_json::Value = serde_json::from_slice(&ok(&[
        "report",
        archive,
        "--heat-map",
        layout,
        "--format",
        "json",
    ]))
    .unwrap();
    report["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
        .unwrap_or_else(|| panic!("no figure {id} in {layout}"))
        .clone()
}

#[test]
fn heat_maps_come_in_the_layouts_the_studies_need() {
    let (_dir, archive) = golden("heat");
    // Hour by step: TCP's two steps side by side, each cell the mean over
    // both days: 05 h A to B is (7.5 + 8.5) / 2 = 8.0; B to A half.
    let h = heat(&archive, "hour-step", "heat-tcp-by-step");
    assert_eq!(
        h["x_names"],
        serde_json::json!(["TCP A to B", "TCP B to A"])
    );
    assert_eq!(h["y_names"].as_array().unwrap().len(), 24);
    assert!(
        (h["cells"][5][0].as_f64().unwrap() - 8.0).abs() < 1e-9,
        "{}",
        h["cells"][5]
    );
    assert!((h["cells"][5][1].as_f64().unwrap() - 4.0).abs() < 1e-9);
    // Second of the test by run: each ping's 10 intervals down, its 48
    // runs across; interval i of the ping at hour h is 90 + (h mod 4) +
    // i/10 ms.
    let t = heat(&archive, "time-run", "heat-runs-ping-a-to-b");
    assert_eq!(t["x_names"].as_array().unwrap().len(), 48);
    assert_eq!(t["x_names"][0], "11-24 00:02");
    assert_eq!(t["y_names"].as_array().unwrap().len(), 10);
    let cell = |row: usize, run: usize| t["cells"][row][run].as_f64().unwrap();
    assert!((cell(0, 0) - 90.0).abs() < 1e-9);
    assert!((cell(9, 0) - 90.9).abs() < 1e-9);
    assert!((cell(0, 5) - 91.0).abs() < 1e-9, "hour 5");
    // TCP kept no intervals here: no such map, rather than an empty one.
    let report: serde_json::Value = serde_json::from_slice(&ok(&[
        "report",
        &archive,
        "--heat-map",
        "time-run",
        "--format",
        "json",
    ]))
    .unwrap();
    assert!(!report.to_string().contains("heat-runs-tcp"));
    // A layout that does not exist is a usage error naming the three.
    let out = sonde()
        .args(["report", &archive, "--heat-map", "hour-week"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("hour-day, hour-step or time-run"),
        "{}",
        stderr(&out)
    );
}
