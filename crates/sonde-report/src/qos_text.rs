//! `sonde qos` as text and charts: each check's verdict with its
//! evidence; a scenario's steps as seed 004's Tables 5 (UDP foreground)
//! and 6 (TCP foreground); foreground loss and jitter against its rate
//! (Figs 4–7) and TCP streams against goodput (Fig 8).

use crate::chart::{Chart, Panel, Series};
use sonde_model::method::{QosCheck, QosRamp, QosStep};
use sonde_model::{MethodResult, MethodSpec};

/// One check as a line: what, from where, which class, the verdict and
/// its evidence.
pub fn qos_check_line(c: &QosCheck) -> String {
    format!(
        "{:<9} {:<16} {:<10} {:<14} {}",
        c.check.name(),
        c.from,
        c.class.to_string(),
        c.verdict.name(),
        c.evidence
    )
}

/// The header of check lines.
pub fn qos_check_header() -> String {
    format!(
        "{:<9} {:<16} {:<10} {:<14} evidence",
        "check", "from", "class", "verdict"
    )
}

/// Every check of a `qos_check` result.
pub fn qos_checks_summary(r: &MethodResult) -> String {
    let mut out = String::from("- - - - - - - - - - - - - - - - - - - - - - - - -\n");
    out += &qos_check_header();
    out.push('\n');
    for c in &r.checks {
        out += &qos_check_line(c);
        out.push('\n');
    }
    if r.interrupted {
        out += "(interrupted: the checks that ran)\n";
    }
    out
}

fn mbit(v: Option<u64>) -> String {
    v.map_or("-".into(), |v| format!("{:.2}", v as f64 / 1e6))
}

fn num(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.digits$}"))
}

fn is_streams(r: &MethodResult) -> bool {
    matches!(&r.spec, MethodSpec::QosScenario(s) if matches!(s.ramp, QosRamp::Streams(_)))
}

/// The column heads of a scenario's table: Table 5's for a UDP
/// foreground (rates), Table 6's for a TCP one (streams).
pub fn qos_step_header(streams: bool) -> String {
    if streams {
        format!(
            "{:>8} {:>12} {:>12} {:>12} {:>12}",
            "streams", "fg Mbit/s", "bg jit ms", "bg loss %", "bg TCP Mb/s"
        )
    } else {
        format!(
            "{:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>11}",
            "offered",
            "fg Mbit/s",
            "fg jit ms",
            "fg loss %",
            "bg Mbit/s",
            "bg jit ms",
            "bg loss %",
            "bg TCP Mb/s"
        )
    }
}

/// One step as a row of the table.
pub fn qos_step_line(s: &QosStep, streams: bool) -> String {
    if streams {
        format!(
            "{:>8} {:>12} {:>12} {:>12} {:>12}",
            s.fg_streams,
            mbit(s.fg_achieved_bps),
            num(s.bg_jitter_ms, 3),
            num(s.bg_loss_pct, 4),
            mbit(s.bg_tcp_bps)
        )
    } else {
        format!(
            "{:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>11}",
            mbit(s.fg_offered_bps),
            mbit(s.fg_achieved_bps),
            num(s.fg_jitter_ms, 3),
            num(s.fg_loss_pct, 4),
            mbit(s.bg_achieved_bps),
            num(s.bg_jitter_ms, 3),
            num(s.bg_loss_pct, 4),
            mbit(s.bg_tcp_bps)
        )
    }
}

/// A scenario's whole table.
pub fn qos_scenario_summary(r: &MethodResult) -> String {
    let streams = is_streams(r);
    let mut out = String::from("- - - - - - - - - - - - - - - - - - - - - - - - -\n");
    if let MethodSpec::QosScenario(s) = &r.spec {
        out += &format!(
            "background {:.1} Mbit/s ({:.0} % TCP / {:.0} % UDP by bytes) from {}\n",
            s.background_rate.bps() as f64 / 1e6,
            s.background_tcp_pct,
            100.0 - s.background_tcp_pct,
            s.via.as_deref().unwrap_or("this host")
        );
    }
    out += &qos_step_header(streams);
    out.push('\n');
    for s in &r.qos_steps {
        out += &qos_step_line(s, streams);
        out.push('\n');
    }
    if r.qos_steps.iter().any(|s| !s.fg_frames.is_empty()) {
        out += &video_table(&r.qos_steps);
    }
    if r.interrupted {
        out += "(interrupted: the steps that ran)\n";
    }
    out
}

/// A `video` foreground's frames per step: each type's packet loss and
/// decodable frames, and the decodable frame rate (seed 004 Table 10's
/// objective stand-in).
fn video_table(steps: &[QosStep]) -> String {
    let mut out = format!(
        "{:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>12}\n",
        "offered",
        "I loss %",
        "P loss %",
        "B loss %",
        "I dec %",
        "P dec %",
        "B dec %",
        "decodable %"
    );
    for s in steps {
        let of = |k: sonde_model::profile::FrameKind| s.fg_frames.iter().find(|f| f.frame == k);
        let kinds = sonde_model::profile::FrameKind::ALL;
        let loss = kinds.map(|k| num(of(k).map(|f| f.class.loss_pct), 2));
        let dec = kinds.map(|k| num(of(k).and_then(|f| f.decodable_pct), 1));
        out += &format!(
            "{:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>12}\n",
            mbit(s.fg_offered_bps),
            loss[0],
            loss[1],
            loss[2],
            dec[0],
            dec[1],
            dec[2],
            num(s.fg_decodable_pct, 1)
        );
    }
    out
}

/// A scenario's charts: foreground loss and jitter against its offered
/// rate (004 Figs 4–7; against the achieved rate a policer's losses would
/// all stand at its rate), or TCP streams against goodput (Fig 8).
pub fn qos_chart(r: &MethodResult) -> Chart {
    let steps = &r.qos_steps;
    let series = |name: &str, f: &dyn Fn(&QosStep) -> Option<(f64, f64)>| Series {
        name: name.into(),
        points: steps.iter().filter_map(f).collect(),
    };
    let rate = |s: &QosStep| s.fg_achieved_bps.map(|v| v as f64 / 1e6);
    let offered = |s: &QosStep| {
        s.fg_offered_bps
            .or(s.fg_achieved_bps)
            .map(|v| v as f64 / 1e6)
    };
    let panels = if is_streams(r) {
        vec![Panel {
            title: "TCP foreground: streams against goodput".into(),
            x_label: "streams".into(),
            y_label: "Mbit/s".into(),
            y_range: None,
            x_time: false,
            series: vec![series("foreground goodput", &|s| {
                Some((f64::from(s.fg_streams), rate(s)?))
            })],
        }]
    } else {
        vec![
            Panel {
                title: "foreground loss against its rate".into(),
                x_label: "foreground offered (Mbit/s)".into(),
                y_label: "loss (%)".into(),
                y_range: None,
                x_time: false,
                series: vec![
                    series("foreground", &|s| Some((offered(s)?, s.fg_loss_pct?))),
                    series("background", &|s| Some((offered(s)?, s.bg_loss_pct?))),
                ],
            },
            Panel {
                title: "foreground jitter against its rate".into(),
                x_label: "foreground offered (Mbit/s)".into(),
                y_label: "jitter (ms)".into(),
                y_range: None,
                x_time: false,
                series: vec![
                    series("foreground", &|s| Some((offered(s)?, s.fg_jitter_ms?))),
                    series("background", &|s| Some((offered(s)?, s.bg_jitter_ms?))),
                ],
            },
        ]
    };
    Chart::grid(panels)
}

/// The video scenarios among `methods` on one chart (seed 004 Table 7
/// and Fig 16): the decodable frame rate, and the loss of each frame
/// type, against the load offered (foreground and background together),
/// a line per receiver (a BE and an AF path side by side); `None`
/// without a video foreground.
pub fn video_chart(methods: &[MethodResult]) -> Option<Chart> {
    use sonde_model::profile::FrameKind;
    let mut decodable: Vec<Series> = Vec::new();
    let mut loss: Vec<Series> = Vec::new();
    let add = |into: &mut Vec<Series>, name: String, point: (f64, f64)| match into
        .iter_mut()
        .find(|s| s.name == name)
    {
        Some(s) => s.points.push(point),
        None => into.push(Series {
            name,
            points: vec![point],
        }),
    };
    for m in methods {
        let MethodSpec::QosScenario(spec) = &m.spec else {
            continue;
        };
        let host = &spec.udp_foreground.host;
        for s in m.qos_steps.iter().filter(|s| !s.fg_frames.is_empty()) {
            let load = (s.fg_offered_bps.unwrap_or(0) + spec.background_rate.bps()) as f64 / 1e6;
            if let Some(q) = s.fg_decodable_pct {
                add(&mut decodable, format!("toward {host}"), (load, q));
            }
            for f in &s.fg_frames {
                let kind = match f.frame {
                    FrameKind::I => "I",
                    FrameKind::P => "P",
                    FrameKind::B => "B",
                };
                add(
                    &mut loss,
                    format!("{kind} toward {host}"),
                    (load, f.class.loss_pct),
                );
            }
        }
    }
    if decodable.is_empty() && loss.is_empty() {
        return None;
    }
    for s in decodable.iter_mut().chain(loss.iter_mut()) {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let panel = |title: &str, y_label: &str, series| Panel {
        title: title.into(),
        x_label: "load offered (Mbit/s)".into(),
        y_label: y_label.into(),
        y_range: Some((0.0, 100.0)),
        x_time: false,
        series,
    };
    Some(Chart::grid(vec![
        panel("frames decodable", "decodable frames (%)", decodable),
        panel("packets lost per frame type", "loss (%)", loss),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_model::method::QosScenarioSpec;
    use sonde_model::{Rate, TcpSpec, Timestamp, UdpSpec};
    use std::time::Duration;

    fn step(offered: u64, achieved: u64, loss: f64) -> QosStep {
        QosStep {
            fg_offered_bps: Some(offered),
            fg_streams: 1,
            fg_achieved_bps: Some(achieved),
            fg_jitter_ms: Some(0.2),
            fg_loss_pct: Some(loss),
            bg_achieved_bps: Some(56_000_000),
            bg_jitter_ms: Some(0.05),
            bg_loss_pct: Some(0.0),
            bg_tcp_bps: Some(24_000_000),
            fg_frames: Vec::new(),
            fg_decodable_pct: None,
            trials: Vec::new(),
        }
    }

    #[test]
    fn a_rate_scenario_prints_table_5s_columns_and_draws_both_figures() {
        let spec = QosScenarioSpec {
            udp_foreground: UdpSpec::default(),
            tcp_foreground: TcpSpec::default(),
            ramp: QosRamp::Rates(vec![Rate::from_bps(1_500_000)]),
            background_rate: Rate::from_bps(80_000_000),
            background_tcp_pct: 30.0,
            background_length: 1400,
            via: Some("nl".into()),
            lead: Duration::from_secs(1),
            gap: Duration::from_secs(1),
        };
        let mut r = MethodResult::new(MethodSpec::QosScenario(spec), Timestamp::now());
        r.qos_steps = vec![
            step(1_500_000, 1_500_000, 0.0),
            step(8_000_000, 7_490_000, 6.4),
        ];
        let text = qos_scenario_summary(&r);
        assert!(
            text.contains("background 80.0 Mbit/s (30 % TCP / 70 % UDP by bytes) from nl"),
            "{text}"
        );
        let last = text.lines().next_back().unwrap();
        assert_eq!(
            last.split_whitespace().collect::<Vec<_>>(),
            ["8.00", "7.49", "0.200", "6.4000", "56.00", "0.050", "0.0000", "24.00"]
        );
        let chart = qos_chart(&r);
        assert_eq!(chart.panels.len(), 2);
        // Against the offered rate: past the policer, loss stands at 8.
        assert_eq!(
            chart.panels[0].series[0].points,
            vec![(1.5, 0.0), (8.0, 6.4)]
        );
        let svg = crate::chart::render_svg(&chart).unwrap();
        assert!(svg.contains("foreground loss against its rate"));
    }
}
