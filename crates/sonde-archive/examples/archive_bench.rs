//! The archive's speed, run by bench/archive on both backends:
//!
//! 1. insert rate: results each with 300 one-second intervals, one
//!    transaction per result (as tests and campaigns write them);
//! 2. a day heat map (hour of day × day, mean throughput) over a year of
//!    hourly 8-test batteries: 8,760 × 8 generated results (written in
//!    batches of a day), the query timed 5 times; target ≤ 200 ms.
//!
//! `archive_bench SQLITE_FILE POSTGRES_URL`

use sonde_archive::{Placement, ResultFilter, Store};
use sonde_model::Metric;
use sonde_model::{
    Direction, Figures, HostEnv, Interval, PeerKind, RttStats, Summary, TcpSpec, TestEnv,
    TestResult, TestSpec, Timestamp, UdpSpec,
};
use std::time::{Duration, Instant, UNIX_EPOCH};

fn figures(direction: Direction, bps: u64) -> Figures {
    Figures {
        direction: Some(direction),
        throughput_bps: Some(bps),
        ..Figures::default()
    }
}

/// Test `k` of the battery at `start`, with `intervals` one-second
/// intervals; figures that vary with the hour, as a day's would.
fn result(k: usize, start: Timestamp, intervals: usize, hour: u64) -> TestResult {
    let direction = [Direction::Forward, Direction::Reverse, Direction::Bidir][k % 3];
    let spec = if k < 3 {
        TestSpec::Tcp(TcpSpec {
            host: "b.example.net".into(),
            direction,
            ..TcpSpec::default()
        })
    } else {
        TestSpec::Udp(UdpSpec {
            host: "b.example.net".into(),
            direction,
            ..UdpSpec::default()
        })
    };
    let mut r = TestResult::new(
        spec,
        TestEnv::between(HostEnv::default(), HostEnv::default(), PeerKind::Sonde),
        start,
    );
    let bps = 7_000_000 + 40_000 * (hour % 24) + 1_000 * k as u64;
    r.duration_s = intervals as f64;
    r.intervals = (0..intervals)
        .map(|i| Interval {
            start_s: i as f64,
            end_s: i as f64 + 1.0,
            omitted: false,
            size_bytes: None,
            streams: Vec::new(),
            sums: vec![figures(Direction::Forward, bps)],
            round_trip: None,
        })
        .collect();
    r.summary = Summary {
        forward: Some(Figures {
            rtt_ms: RttStats::from_ms(&[94.0]),
            ..figures(Direction::Forward, bps)
        }),
        ..Summary::default()
    };
    r
}

fn bench(location: &str, name: &str) {
    let mut store = Store::open(location).expect("archive");
    // 1. Insert rate.
    let n = 200;
    let batch: Vec<TestResult> = (0..n)
        .map(|i| result(i % 8, Timestamp::now(), 300, i as u64))
        .collect();
    let began = Instant::now();
    for r in &batch {
        store.put_result(r, &Placement::default()).expect("insert");
    }
    let secs = began.elapsed().as_secs_f64();
    println!(
        "{name}: insert {n} results × 300 intervals: {:.0} results/s ({:.0} intervals/s)",
        n as f64 / secs,
        n as f64 * 300.0 / secs
    );
    // 2. A year of hourly batteries, then the heat map.
    let year_start = UNIX_EPOCH + Duration::from_secs(1_767_225_600); // 2026-01-01
    let began = Instant::now();
    let place = Placement {
        campaign: Some("year".into()),
        ..Placement::default()
    };
    for day in 0..365u64 {
        let day_results: Vec<(TestResult, Placement)> = (0..24u64)
            .flat_map(|h| (0..8).map(move |k| (day * 24 + h, k)))
            .map(|(hour, k)| {
                let at = year_start + Duration::from_secs(hour * 3600 + k as u64 * 300);
                (result(k, Timestamp(at), 5, hour), place.clone())
            })
            .collect();
        store.put_results(&day_results).expect("a day");
    }
    println!(
        "{name}: a year of hourly batteries (70,080 results) written in {:.1} s",
        began.elapsed().as_secs_f64()
    );
    let filter = ResultFilter {
        campaign: Some("year".into()),
        test: Some("tcp".into()),
        direction: Some("forward".into()),
        ..ResultFilter::default()
    };
    let mut times = Vec::new();
    let mut cells = 0;
    for _ in 0..5 {
        let began = Instant::now();
        cells = store
            .day_heat_map(&filter, Metric::ThroughputBps)
            .expect("heat map")
            .len();
        times.push(began.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    println!(
        "{name}: day heat map (hour × day, {cells} cells) median {:.1} ms, worst {:.1} ms \
         (target ≤ 200 ms): {}",
        times[2],
        times[4],
        if times[2] <= 200.0 { "met" } else { "MISSED" }
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: archive_bench SQLITE_FILE POSTGRES_URL");
        std::process::exit(2);
    }
    bench(&args[1], "sqlite");
    bench(&args[2], "postgresql");
}
