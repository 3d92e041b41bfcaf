//! `sonde http --ramp … --chart FILE.svg`: the ramp as the latency–
//! throughput curve of seed 000 §4.2 (STORK's knee): requests per second
//! and latency percentiles over the steps, the knee marked.

use crate::chart::{Chart, Panel, Series};
use sonde_model::{HttpFigures, HttpPhases, HttpStep, PhaseStats, TestResult};

type PhaseOf = fn(&HttpPhases) -> Option<&PhaseStats>;

/// An HTTP result's phases, named as ab names them, in order.
pub(crate) const PHASES: [(&str, PhaseOf); 6] = [
    ("connect", |p| p.connect.as_ref()),
    ("TLS", |p| p.tls.as_ref()),
    ("processing", |p| p.processing.as_ref()),
    ("waiting", |p| p.waiting.as_ref()),
    ("transfer", |p| p.transfer.as_ref()),
    ("total", |p| p.total.as_ref()),
];

/// A step's place on the x axis: its connections, or the rate asked.
fn x_of(s: &HttpStep) -> Option<f64> {
    s.connections.map(f64::from).or(s.rate)
}

/// A vertical line at `x` over `0..=top`, named: the knee's mark.
fn mark(name: String, x: f64, top: f64) -> Series {
    Series {
        name,
        points: vec![(x, 0.0), (x, top)],
    }
}

/// The ramp's chart, or `None` for a test without steps.
pub fn http_ramp_chart(r: &TestResult) -> Option<Chart> {
    let h: &HttpFigures = r.http.as_ref()?;
    if h.steps.is_empty() {
        return None;
    }
    let by_rate = h.steps.iter().all(|s| s.connections.is_none());
    let x_label = if by_rate {
        "offered (requests/s)"
    } else {
        "connections"
    };
    let line = |name: &str, f: &dyn Fn(&HttpStep) -> Option<f64>| Series {
        name: name.into(),
        points: h
            .steps
            .iter()
            .filter_map(|s| Some((x_of(s)?, f(s)?)))
            .collect(),
    };
    let top = |series: &[Series]| {
        series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .fold(0.0_f64, f64::max)
    };
    let knee = h.knee.and_then(|i| h.steps.get(i)).and_then(x_of);
    let knee_name = |x: f64| {
        if by_rate {
            format!("knee ({x:.0} req/s)")
        } else {
            format!("knee ({x:.0} connections)")
        }
    };
    let mut throughput = vec![line("answered (req/s)", &|s| Some(s.requests_per_s))];
    if by_rate {
        throughput.push(line("offered (req/s)", &|s| s.rate));
    }
    let mut latency = vec![
        line("p50", &|s| s.latency_ms.as_ref().map(|l| l.p50)),
        line("p90", &|s| s.latency_ms.as_ref().map(|l| l.p90)),
        line("p99", &|s| s.latency_ms.as_ref().map(|l| l.p99)),
    ];
    if let Some(x) = knee {
        let t = top(&throughput);
        throughput.push(mark(knee_name(x), x, t));
        let t = top(&latency);
        latency.push(mark(knee_name(x), x, t));
    }
    let mut panels = vec![
        Panel {
            title: "throughput by step".into(),
            x_label: x_label.into(),
            y_label: "requests/s".into(),
            y_range: None,
            x_time: false,
            series: throughput,
        },
        Panel {
            title: if by_rate {
                "latency by step (from intended send)".into()
            } else {
                "latency by step".into()
            },
            x_label: x_label.into(),
            y_label: "ms".into(),
            y_range: None,
            x_time: false,
            series: latency,
        },
    ];
    // Each phase's median against load (000 Figs 47–50): where the time
    // goes as the load grows, connecting, waiting for the server or
    // transferring.
    let phases: Vec<Series> = PHASES
        .iter()
        .map(|(name, of)| line(name, &|s| Some(of(s.phases_ms.as_ref()?)?.median)))
        .filter(|s| !s.points.is_empty())
        .collect();
    if !phases.is_empty() {
        panels.push(Panel {
            title: "each phase by step (median)".into(),
            x_label: x_label.into(),
            y_label: "ms".into(),
            y_range: None,
            x_time: false,
            series: phases,
        });
    }
    if h.steps.iter().any(|s| s.errors > 0) {
        panels.push(Panel {
            title: "errors by step".into(),
            x_label: x_label.into(),
            y_label: "errors".into(),
            y_range: None,
            x_time: false,
            series: vec![line("errors", &|s| Some(s.errors as f64))],
        });
    }
    Some(Chart::grid(panels))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_model::{
        HostEnv, HttpSpec, LatencyPercentiles, PeerKind, TestEnv, TestSpec, Timestamp,
    };

    fn step(c: u32, rps: f64, p50: f64, errors: u64) -> HttpStep {
        HttpStep {
            connections: Some(c),
            rate: None,
            requests: 100,
            errors,
            requests_per_s: rps,
            phases_ms: None,
            latency_ms: Some(LatencyPercentiles {
                mean: p50,
                p50,
                p75: p50 * 1.2,
                p90: p50 * 1.5,
                p99: p50 * 2.0,
                p99_9: p50 * 2.5,
                p99_99: p50 * 3.0,
                max: p50 * 4.0,
            }),
        }
    }

    fn result(steps: Vec<HttpStep>, knee: Option<usize>) -> TestResult {
        let mut r = TestResult::new(
            TestSpec::Http(HttpSpec::default()),
            TestEnv::between(HostEnv::default(), HostEnv::default(), PeerKind::Sonde),
            Timestamp::now(),
        );
        r.http = Some(HttpFigures {
            steps,
            knee,
            ..HttpFigures::default()
        });
        r
    }

    #[test]
    fn the_chart_follows_the_steps_and_marks_the_knee() {
        let r = result(
            vec![
                step(4, 800.0, 5.0, 0),
                step(8, 1600.0, 5.2, 0),
                step(12, 1600.0, 7.5, 3),
            ],
            Some(2),
        );
        let c = http_ramp_chart(&r).unwrap();
        assert_eq!(c.panels.len(), 3, "errors get a panel of their own");
        let answered = &c.panels[0].series[0];
        assert_eq!(
            answered.points,
            vec![(4.0, 800.0), (8.0, 1600.0), (12.0, 1600.0)]
        );
        let knee = c.panels[1].series.last().unwrap();
        assert_eq!(knee.name, "knee (12 connections)");
        assert_eq!(knee.points, vec![(12.0, 0.0), (12.0, 15.0)]);
        let svg = crate::chart::render_svg(&c).unwrap();
        assert!(svg.contains("knee (12 connections)"));
    }

    #[test]
    fn a_test_without_steps_has_no_chart() {
        assert!(http_ramp_chart(&result(Vec::new(), None)).is_none());
    }
}
