//! Format 1 of the ping result, and its conversion. Format 1 kept the
//! figures at the top level and the target and method as strings; it
//! recorded neither host.

use super::spec::PingSpecV1;
use super::{method, PingCounts};
use crate::ping::OneWayDelays;
use crate::{
    HostEnv, Interval, PingSeries, ResultId, Summary, TestEnv, TestKind, TestResult, TestSpec,
    Timestamp, RESULT_FORMAT_VERSION,
};
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
pub(super) struct PingResult {
    sonde_version: String,
    spec: PingSpecV1,
    target: String,
    method: String,
    start: Timestamp,
    duration_s: f64,
    interrupted: bool,
    intervals: Vec<PingInterval>,
    series: Vec<Series>,
    #[serde(flatten)]
    summary: PingCounts,
}

#[derive(Debug, Clone, Deserialize)]
struct PingInterval {
    start_s: f64,
    end_s: f64,
    size: u32,
    #[serde(flatten)]
    counts: PingCounts,
}

#[derive(Debug, Clone, Deserialize)]
struct Series {
    size: u32,
    #[serde(flatten)]
    counts: PingCounts,
    one_way: Option<OneWayDelays>,
}

impl PingResult {
    pub(super) fn upgrade(self, id: ResultId) -> TestResult {
        TestResult {
            id,
            format_version: RESULT_FORMAT_VERSION,
            sonde_version: self.sonde_version.clone(),
            test: TestKind::Ping,
            title: None,
            spec: TestSpec::Ping(self.spec.upgrade()),
            env: TestEnv {
                client: HostEnv {
                    sonde_version: self.sonde_version,
                    ..HostEnv::default()
                },
                server: HostEnv::default(),
                peer: None,
                source: None,
                target: self.target.parse().ok(),
                method: method(&self.method),
            },
            start: self.start,
            duration_s: self.duration_s,
            interrupted: self.interrupted,
            intervals: self
                .intervals
                .into_iter()
                .map(|i| Interval {
                    start_s: i.start_s,
                    end_s: i.end_s,
                    omitted: false,
                    size_bytes: Some(i.size),
                    streams: Vec::new(),
                    sums: Vec::new(),
                    round_trip: Some(i.counts.figures()),
                })
                .collect(),
            summary: Summary {
                round_trip: Some(self.summary.figures()),
                ..Summary::default()
            },
            streams: Vec::new(),
            series: self
                .series
                .into_iter()
                .map(|s| PingSeries {
                    size_bytes: s.size,
                    figures: s.counts.figures(),
                    one_way: s.one_way,
                    cos: None,
                    timestamps: None,
                })
                .collect(),
            server_output: None,
            http: None,
            trace: None,
        }
    }
}
