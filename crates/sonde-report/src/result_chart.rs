//! One stored result over time, second by second as it ran: what 000
//! draws of single tests (Figs 14, 16, 18: TCP's slow start in a
//! bidirectional test) and 004 of TCP during a scenario's steps. A panel
//! per figure the test measured, a line per direction (and per stream
//! where there are several), x in seconds from the test's start.

use crate::chart::{Chart, Panel, Series};
use sonde_model::{Direction, Figures, Interval, Metric, TestResult};

/// One figure drawn over time: its panel's label and unit, and its value
/// in that unit.
struct Drawn {
    label: &'static str,
    unit: &'static str,
    value: fn(&Figures) -> Option<f64>,
}

/// The figures drawn, in order: the registry's (label, unit and value as
/// it shows them), and TCP's congestion window, which it does not list.
const DRAWN: [Drawn; 6] = [
    Drawn {
        label: "throughput",
        unit: Metric::ThroughputBps.unit(),
        value: |f| Metric::ThroughputBps.shown(f),
    },
    Drawn {
        label: "loss",
        unit: Metric::LossPct.unit(),
        value: |f| Metric::LossPct.shown(f),
    },
    Drawn {
        label: "jitter",
        unit: Metric::JitterMs.unit(),
        value: |f| Metric::JitterMs.shown(f),
    },
    Drawn {
        label: "RTT (median)",
        unit: Metric::RttP50Ms.unit(),
        value: |f| Metric::RttP50Ms.shown(f),
    },
    Drawn {
        label: "retransmits",
        unit: Metric::Retransmits.unit(),
        value: |f| Metric::Retransmits.shown(f),
    },
    Drawn {
        label: "congestion window",
        unit: "KiB",
        value: |f| f.cwnd_bytes.map(|v| v as f64 / 1024.0),
    },
];

fn direction_name(d: Option<Direction>) -> &'static str {
    match d {
        Some(Direction::Forward) => "forward",
        Some(Direction::Reverse) => "reverse",
        Some(Direction::Bidir) => "both",
        None => "round trip",
    }
}

/// The lines of one interval: each direction's sum, each stream when a
/// direction has several, or the round trips.
fn lines(i: &Interval) -> Vec<(String, &Figures)> {
    let mut out: Vec<(String, &Figures)> = i
        .sums
        .iter()
        .map(|s| (direction_name(s.direction).to_string(), s))
        .collect();
    for s in &i.streams {
        let same = i
            .streams
            .iter()
            .filter(|o| o.direction == s.direction)
            .count();
        if same > 1 {
            let n = s.stream.map_or(String::new(), |n| format!(" stream {n}"));
            out.push((format!("{}{n}", direction_name(s.direction)), s));
        }
    }
    if let Some(rt) = &i.round_trip {
        out.push(("round trip".to_string(), rt));
    }
    out
}

/// `r` over time: a panel per figure it measured in its intervals; `None`
/// when it kept no intervals.
pub fn result_chart(r: &TestResult) -> Option<Chart> {
    let panels: Vec<Panel> = DRAWN
        .iter()
        .filter_map(|d| {
            let mut series: Vec<Series> = Vec::new();
            for i in &r.intervals {
                for (name, f) in lines(i) {
                    let Some(v) = (d.value)(f).filter(|v| v.is_finite()) else {
                        continue;
                    };
                    let name = if i.omitted {
                        format!("{name} (warm-up)")
                    } else {
                        name
                    };
                    match series.iter_mut().find(|s| s.name == name) {
                        Some(s) => s.points.push((i.end_s, v)),
                        None => series.push(Series {
                            name,
                            points: vec![(i.end_s, v)],
                        }),
                    }
                }
            }
            (!series.is_empty()).then(|| Panel {
                title: format!(
                    "{} {} to {}: {}",
                    r.spec.kind().name(),
                    r.id,
                    r.spec.host(),
                    d.label
                ),
                x_label: "seconds from the start".into(),
                y_label: format!("{} ({})", d.label, d.unit),
                y_range: (d.unit == "%").then_some((0.0, 100.0)),
                x_time: false,
                series,
            })
        })
        .collect();
    (!panels.is_empty()).then(|| Chart::grid(panels))
}

/// A report of single results (`sonde report --result ID`): the means
/// table with a row per result and direction (each result its own group,
/// its directions never added up), and each result over its seconds.
pub fn results_report(
    title: &str,
    results: &[TestResult],
    provenance: crate::report::Provenance,
) -> crate::report::Report {
    use crate::report::{Figure, FigureBody};
    use crate::report_group::Group;
    let name = |r: &TestResult| {
        let id = r.id.to_string();
        format!(
            "{} {} to {}",
            r.spec.kind().name(),
            &id[..id.len().min(8)],
            r.spec.host()
        )
    };
    let groups: Vec<Group> = results
        .iter()
        .flat_map(|r| Group::per_direction(&name(r), vec![r.clone()], None))
        .collect();
    let figures = results
        .iter()
        .filter_map(|r| {
            Some(Figure {
                id: crate::report_group::slug(&format!("result {}", r.id)),
                caption: format!("{}: each interval of the test", name(r)),
                body: FigureBody::Chart(result_chart(r)?),
            })
        })
        .collect();
    crate::report::Report {
        title: title.into(),
        provenance,
        tables: vec![crate::report_build::means_table(&groups)],
        figures,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_model::{HostEnv, PeerKind, TcpSpec, TestEnv, TestSpec, Timestamp};

    fn fig(d: Direction, mbps: u64, stream: Option<u16>) -> Figures {
        Figures {
            direction: Some(d),
            stream,
            throughput_bps: Some(mbps * 1_000_000),
            retransmits: Some(mbps),
            ..Figures::default()
        }
    }

    #[test]
    fn a_bidirectional_test_is_a_line_per_direction_and_per_stream() {
        let mut r = TestResult::new(
            TestSpec::Tcp(TcpSpec {
                host: "b".into(),
                ..TcpSpec::default()
            }),
            TestEnv::between(HostEnv::default(), HostEnv::default(), PeerKind::Sonde),
            Timestamp::now(),
        );
        r.intervals = (0..3)
            .map(|k| Interval {
                start_s: k as f64,
                end_s: k as f64 + 1.0,
                omitted: false,
                size_bytes: None,
                streams: vec![
                    fig(Direction::Forward, 4 + k, Some(1)),
                    fig(Direction::Forward, 6 + k, Some(3)),
                    fig(Direction::Reverse, 5, Some(2)),
                ],
                sums: vec![
                    fig(Direction::Forward, 10 + 2 * k, None),
                    fig(Direction::Reverse, 5, None),
                ],
                round_trip: None,
            })
            .collect();
        let chart = result_chart(&r).unwrap();
        let labels: Vec<&str> = chart.panels.iter().map(|p| p.y_label.as_str()).collect();
        assert_eq!(labels, ["throughput (Mbit/s)", "retransmits (segments)"]);
        let t = &chart.panels[0];
        let names: Vec<&str> = t.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            ["forward", "reverse", "forward stream 1", "forward stream 3"]
        );
        assert_eq!(t.series[0].points, [(1.0, 10.0), (2.0, 12.0), (3.0, 14.0)]);
        assert_eq!(t.series[1].points, [(1.0, 5.0), (2.0, 5.0), (3.0, 5.0)]);
        r.intervals.clear();
        assert!(result_chart(&r).is_none());
    }
}
