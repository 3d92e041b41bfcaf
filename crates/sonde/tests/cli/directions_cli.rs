//! A bidirectional test is two figures, never their sum: in `results
//! stats`, `compare`, `report` and a listing. Known truth: two steps of
//! three bidirectional TCP tests each, X at 10, 11 and 12 Mbit/s forward
//! and half of it reverse, Y at twice X.

use crate::common;
use common::{sonde, stderr};
use serde_json::Value;
use sonde_archive::{Placement, Store};
use sonde_model::{
    Direction, Figures, HostEnv, PeerKind, Summary, TcpSpec, TestEnv, TestResult, TestSpec,
    Timestamp,
};
use std::time::{Duration, UNIX_EPOCH};

fn fig(d: Direction, bps: u64) -> Figures {
    Figures {
        direction: Some(d),
        throughput_bps: Some(bps),
        ..Figures::default()
    }
}

/// A bidirectional TCP test, `forward` Mbit/s one way and half of it the
/// other, with TCP's total (their sum) as sonde keeps it.
fn bidir(i: u64, forward_mbps: u64) -> TestResult {
    let spec = TestSpec::Tcp(TcpSpec {
        host: "b.example".into(),
        direction: Direction::Bidir,
        ..TcpSpec::default()
    });
    let at = UNIX_EPOCH + Duration::from_secs(1_795_478_400 + i * 600);
    let env = TestEnv::between(HostEnv::default(), HostEnv::default(), PeerKind::Sonde);
    let mut r = TestResult::new(spec, env, Timestamp(at));
    let (f, b) = (forward_mbps * 1_000_000, forward_mbps * 500_000);
    r.summary = Summary {
        forward: Some(fig(Direction::Forward, f)),
        reverse: Some(fig(Direction::Reverse, b)),
        total: Some(fig(Direction::Bidir, f + b)),
        ..Summary::default()
    };
    r
}

fn step(name: &str) -> Placement {
    Placement {
        campaign: Some("both".into()),
        labels: [("step".to_string(), name.to_string())].into(),
        ..Placement::default()
    }
}

fn archive(dir: &common::TempDir) -> String {
    let db = dir.join("both.db");
    let mut store = Store::open(db.to_str().unwrap()).unwrap();
    let mut batch = Vec::new();
    for (i, mbps) in [10, 11, 12].into_iter().enumerate() {
        batch.push((bidir(i as u64, mbps), step("X")));
        batch.push((bidir(10 + i as u64, 2 * mbps), step("Y")));
    }
    store.put_results(&batch).unwrap();
    format!("--archive={}", db.display())
}

fn ok(args: &[&str]) -> String {
    let out = sonde().args(args).output().unwrap();
    assert!(out.status.success(), "sonde {args:?}: {}", stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}

/// `report --by label:step --format json`.
fn report_by_step(archive: &str) -> Value {
    serde_json::from_str(&ok(&[
        "report",
        archive,
        "--by",
        "label:step",
        "--format",
        "json",
    ]))
    .unwrap()
}

/// `results stats --by label:step -J`: each group's name, n and mean.
fn stats_by_step(archive: &str) -> Vec<(String, u64, f64)> {
    let stats: Value = serde_json::from_str(&ok(&[
        "results",
        archive,
        "stats",
        "--by",
        "label:step",
        "-J",
    ]))
    .unwrap();
    stats["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["group"].as_str().unwrap().to_string(),
                g["n"].as_u64().unwrap(),
                g["mean"].as_f64().unwrap(),
            )
        })
        .collect()
}

fn close(v: &Value, want: f64) -> bool {
    v.as_f64()
        .is_some_and(|x| (x - want).abs() < 1e-9 * want.abs().max(1.0))
}

#[test]
fn each_direction_is_its_own_row_everywhere() {
    let dir = common::TempDir::new("directions");
    let archive = archive(&dir);

    // Stats by step: each step split into its directions, n = 3 each.
    let groups = stats_by_step(&archive);
    assert_eq!(
        groups,
        [
            ("X · forward".to_string(), 3, 11e6),
            ("X · reverse".to_string(), 3, 5.5e6),
            ("Y · forward".to_string(), 3, 22e6),
            ("Y · reverse".to_string(), 3, 11e6),
        ]
    );

    // Compare: a row per direction, each Y twice X; no row of 16.5.
    let cmp: Value = serde_json::from_str(&ok(&[
        "compare", &archive, "step=X", "step=Y", "--format", "json",
    ]))
    .unwrap();
    let rows: Vec<&Value> = cmp["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["metric"] == "throughput")
        .collect();
    assert_eq!(rows.len(), 2, "{cmp}");
    for (r, direction, mean_a) in [(rows[0], "forward", 11.0), (rows[1], "reverse", 5.5)] {
        assert_eq!(r["direction"], direction, "{r}");
        assert!(close(&r["a"]["mean"], mean_a), "{r}");
        assert!(close(&r["ratio"], 2.0), "{r}");
    }

    // Both selections on one chart: a series per selection and
    // direction, three points each, in one legend.
    let svg_path = dir.join("overlay.svg");
    ok(&[
        "compare",
        &archive,
        "step=X",
        "step=Y",
        "--metric",
        "throughput",
        "--chart",
        svg_path.to_str().unwrap(),
    ]);
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    for name in [
        "step=X forward",
        "step=X reverse",
        "step=Y forward",
        "step=Y reverse",
    ] {
        assert!(svg.contains(name), "no series {name}");
    }
    let three = common::svg::polyline_points(&svg)
        .into_iter()
        .filter(|n| *n == 3)
        .count();
    assert_eq!(
        three, 4,
        "a line of three results per selection and direction"
    );

    // The report's means table: a row per step and direction.
    let report = report_by_step(&archive);
    // Titled by what it selected.
    assert_eq!(report["title"], "every result: results by label:step");
    let table = report["tables"][0]["rows"].as_array().unwrap();
    let mean_of = |group: &str| -> f64 {
        let row = table
            .iter()
            .find(|r| r[0] == group)
            .unwrap_or_else(|| panic!("no row {group}: {table:?}"));
        row[3]["value"].as_f64().unwrap()
    };
    assert!((mean_of("X · forward") - 11.0).abs() < 1e-9);
    assert!((mean_of("X · reverse") - 5.5).abs() < 1e-9);
    assert!(
        !report.to_string().contains("16.5"),
        "a sum of directions in the report"
    );

    // A listing names each direction.
    let list = ok(&["results", &archive, "list", "--campaign", "both"]);
    assert!(
        list.contains("forward 10.00 Mbit/s; reverse 5.00 Mbit/s"),
        "{list}"
    );
    assert!(!list.contains("15.00 Mbit/s"), "{list}");
}

/// A campaign's bidirectional step from endpoint A to B: its directions
/// are named by the endpoints in stats and in the report, as 000 Table 2
/// names them ("A to B (and B to A)").
#[test]
fn a_campaigns_directions_are_named_by_its_endpoints() {
    let dir = common::TempDir::new("directions-ends");
    let db = dir.join("ends.db");
    let mut store = Store::open(db.to_str().unwrap()).unwrap();
    let mut at = step("Z");
    at.labels.insert("from".into(), "A".into());
    at.labels.insert("to".into(), "B".into());
    let batch: Vec<_> = [10, 12]
        .into_iter()
        .enumerate()
        .map(|(i, mbps)| (bidir(i as u64, mbps), at.clone()))
        .collect();
    store.put_results(&batch).unwrap();
    let archive = format!("--archive={}", db.display());
    assert_eq!(
        stats_by_step(&archive),
        [
            ("Z · A to B (with B to A)".to_string(), 2, 11e6),
            ("Z · B to A (with A to B)".to_string(), 2, 5.5e6),
        ]
    );
    let report = report_by_step(&archive);
    let names: Vec<&str> = report["tables"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r[0].as_str())
        .collect();
    assert_eq!(
        names,
        ["Z · A to B (with B to A)", "Z · B to A (with A to B)"],
        "{report}"
    );
}
