//! A sweep as text: a line per step as it finishes, then a table per
//! series (direction and family) and the limiter found in each; and the
//! sweep's curve as a [`Chart`] (goodput and PDR against offered load).

use crate::chart::{Chart, Panel, Series};
use sonde_model::method::{Limiter, SweepStep, SweepVariableKind};
use sonde_model::{Direction, IpFamily, MethodResult, MethodSpec};
use std::fmt::Write;

fn dir_name(d: Direction) -> &'static str {
    match d {
        Direction::Forward => "forward",
        Direction::Reverse => "reverse",
        Direction::Bidir => "bidir",
    }
}

fn family_name(f: IpFamily) -> &'static str {
    match f {
        IpFamily::Any => "",
        IpFamily::V4 => " IPv4",
        IpFamily::V6 => " IPv6",
    }
}

/// "forward", "bidir forward IPv6", …
fn series_name(series: Direction, d: Direction, f: IpFamily) -> String {
    let mut s = if series == Direction::Bidir {
        format!("bidir {}", dir_name(d))
    } else {
        dir_name(d).to_string()
    };
    s.push_str(family_name(f));
    s
}

fn kind_of(r: &MethodResult) -> SweepVariableKind {
    match &r.spec {
        MethodSpec::Sweep(s) => s.variable.kind(),
        _ => SweepVariableKind::Rates,
    }
}

/// The variable's name and unit, and a value in that unit.
fn value_cell(kind: SweepVariableKind, v: f64) -> String {
    match kind {
        SweepVariableKind::Rates => format!("{:.3}", v / 1e6),
        SweepVariableKind::Windows => format!("{:.0}", v / 1024.0),
        SweepVariableKind::Payloads | SweepVariableKind::Streams => format!("{v:.0}"),
    }
}

fn value_head(kind: SweepVariableKind) -> (&'static str, &'static str) {
    match kind {
        SweepVariableKind::Rates => ("rate", "Mbit/s"),
        SweepVariableKind::Payloads => ("payload", "B"),
        SweepVariableKind::Streams => ("streams", ""),
        SweepVariableKind::Windows => ("window", "KiB"),
    }
}

fn cell(v: Option<f64>, scale: f64, decimals: usize) -> String {
    v.map_or_else(
        || "-".to_string(),
        |x| format!("{:.*}", decimals, x / scale),
    )
}

/// The line printed as a step finishes.
pub fn sweep_step_line(kind: SweepVariableKind, s: &SweepStep) -> String {
    let (name, unit) = value_head(kind);
    format!(
        "{:<16} {name} {} {unit}{}: offered {} Mbit/s, goodput {} Mbit/s, PDR {} %, delay {} ms",
        series_name(s.series, s.direction, s.family),
        value_cell(kind, s.value),
        if s.refined { " (refining)" } else { "" },
        cell(s.offered_bps, 1e6, 3),
        cell(s.goodput_bps, 1e6, 3),
        cell(s.pdr_pct, 1.0, 2),
        cell(s.delay_ms, 1.0, 2),
    )
}

/// The (series, flow, family) keys of `steps`, in the order first seen.
fn keys(steps: &[SweepStep]) -> Vec<(Direction, Direction, IpFamily)> {
    let mut out = Vec::new();
    for s in steps {
        let k = (s.series, s.direction, s.family);
        if !out.contains(&k) {
            out.push(k);
        }
    }
    out
}

/// One series' steps, by offered load (the refined ones in place).
fn series_steps(steps: &[SweepStep], key: (Direction, Direction, IpFamily)) -> Vec<&SweepStep> {
    let mut v: Vec<&SweepStep> = steps
        .iter()
        .filter(|s| (s.series, s.direction, s.family) == key)
        .collect();
    v.sort_by(|a, b| a.value.total_cmp(&b.value));
    v
}

/// The limiter in words: class, knee, evidence and confidence.
pub fn limiter_lines(l: &Limiter) -> String {
    let mut out = format!(
        "limiter {}: {}",
        series_name(l.series, l.direction, l.family),
        serde_json::to_value(l.class)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    );
    if let Some(k) = l.knee_bps {
        let _ = write!(out, ", knee {:.3} Mbit/s", k / 1e6);
        if let Some(p) = l.knee_pps {
            let _ = write!(out, " ({p:.0} packets/s)");
        }
    }
    let _ = writeln!(out, ", confidence {:.2}", l.confidence);
    let e = &l.evidence;
    let mut facts = vec![format!(
        "{} steps below the knee, {} above",
        e.steps_below_knee, e.steps_above_knee
    )];
    if let Some((lo, hi)) = e.bracket_bps {
        facts.push(format!(
            "between {:.3} and {:.3} Mbit/s offered",
            lo / 1e6,
            hi / 1e6
        ));
    }
    if let Some(f) = e.delivered_fraction_above_knee {
        facts.push(format!("delivered above it {:.1} % of it", f * 100.0));
    }
    if let Some(r) = e.delay_rise_ms {
        facts.push(format!("one-way delay p99 rise {r:.2} ms"));
    }
    if let Some(r) = e.delay_avg_rise_ms {
        facts.push(format!("mean rise {r:.2} ms"));
    }
    if let Some(x) = e.loss_above_knee_pct {
        facts.push(format!("loss above {x:.2} %"));
    }
    let _ = writeln!(out, "  {}", facts.join(", "));
    for n in &e.notes {
        let _ = writeln!(out, "  {n}");
    }
    out
}

/// The closing text of a sweep.
pub fn sweep_summary(r: &MethodResult) -> String {
    let kind = kind_of(r);
    let (name, unit) = value_head(kind);
    let mut out = String::new();
    for key in keys(&r.steps) {
        let _ = writeln!(out, "\n{}", series_name(key.0, key.1, key.2));
        let _ = writeln!(
            out,
            "{name:>9} {:>11} {:>11} {:>8} {:>7} {:>7} {:>8} {:>8}",
            "offered", "goodput", "PDR", "loss", "jitter", "delay", "p99"
        );
        let _ = writeln!(
            out,
            "{unit:>9} {:>11} {:>11} {:>8} {:>7} {:>7} {:>8} {:>8}",
            "Mbit/s", "Mbit/s", "%", "%", "ms", "ms", "ms"
        );
        for s in series_steps(&r.steps, key) {
            let _ = writeln!(
                out,
                "{:>9} {:>11} {:>11} {:>8} {:>7} {:>7} {:>8} {:>8}{}",
                value_cell(kind, s.value),
                cell(s.offered_bps, 1e6, 3),
                cell(s.goodput_bps, 1e6, 3),
                cell(s.pdr_pct, 1.0, 2),
                cell(s.loss_pct, 1.0, 2),
                cell(s.jitter_ms, 1.0, 3),
                cell(s.delay_ms, 1.0, 2),
                cell(s.delay_p99_ms, 1.0, 2),
                if s.refined { "  (refined)" } else { "" },
            );
        }
    }
    if !r.limiters.is_empty() {
        out.push('\n');
    }
    for l in &r.limiters {
        out.push_str(&limiter_lines(l));
    }
    if r.interrupted {
        out.push_str("\ninterrupted: the steps above are those that ran\n");
    }
    out
}

/// The curve of a sweep: per series (direction), goodput (and offered)
/// and PDR against offered load (a rate sweep) or the variable, each
/// family a line of the same panel (001's and 002's IPv4 against IPv6 on
/// one axis).
pub fn sweep_chart(r: &MethodResult) -> Chart {
    let kind = kind_of(r);
    let (name, unit) = value_head(kind);
    let x = |s: &SweepStep| match kind {
        SweepVariableKind::Rates => s.offered_bps.map(|v| v / 1e6),
        SweepVariableKind::Windows => Some(s.value / 1024.0),
        _ => Some(s.value),
    };
    let x_label = match kind {
        SweepVariableKind::Rates => "offered (Mbit/s)".to_string(),
        _ if unit.is_empty() => name.to_string(),
        _ => format!("{name} ({unit})"),
    };
    let mut flows: Vec<(Direction, Direction)> = Vec::new();
    for (series, d, _) in keys(&r.steps) {
        if !flows.contains(&(series, d)) {
            flows.push((series, d));
        }
    }
    let mut panels = Vec::new();
    for (series, d) in flows {
        let families: Vec<IpFamily> = keys(&r.steps)
            .into_iter()
            .filter(|k| (k.0, k.1) == (series, d))
            .map(|k| k.2)
            .collect();
        let several = families.len() > 1;
        let mut goodput = Vec::new();
        let mut pdr = Vec::new();
        for (i, &f) in families.iter().enumerate() {
            let mut rows: Vec<(f64, &SweepStep)> = series_steps(&r.steps, (series, d, f))
                .into_iter()
                .filter_map(|s| Some((x(s)?, s)))
                .collect();
            rows.sort_by(|a, b| a.0.total_cmp(&b.0));
            let line = |label: &str, get: &dyn Fn(&SweepStep) -> Option<f64>| Series {
                name: if several {
                    format!("{label}{}", family_name(f))
                } else {
                    label.to_string()
                },
                points: rows
                    .iter()
                    .filter_map(|(x, s)| Some((*x, get(s)?)))
                    .collect(),
            };
            goodput.push(line("goodput", &|s| s.goodput_bps.map(|v| v / 1e6)));
            // What was offered is the same ask for every family: drawn once.
            if i == 0 {
                let mut offered = line("offered", &|s| s.offered_bps.map(|v| v / 1e6));
                offered.name = "offered".into();
                goodput.push(offered);
            }
            pdr.push(line("PDR", &|s| s.pdr_pct));
        }
        let title = series_name(series, d, if several { IpFamily::Any } else { families[0] });
        panels.push(Panel {
            title: format!("{title}: goodput"),
            x_label: x_label.clone(),
            y_label: "Mbit/s".into(),
            y_range: None,
            x_time: false,
            series: goodput,
        });
        panels.push(Panel {
            title: format!("{title}: PDR"),
            x_label: x_label.clone(),
            y_label: "PDR (%)".into(),
            y_range: Some((0.0, 105.0)),
            x_time: false,
            series: pdr,
        });
    }
    Chart::grid(panels)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_model::method::{LimiterClass, LimiterEvidence, StepStats, SweepSpec, SweepVariable};
    use sonde_model::{Rate, Timestamp, UdpSpec};

    fn step(series: Direction, d: Direction, offered: f64, goodput: f64) -> SweepStep {
        SweepStep {
            series,
            direction: d,
            family: IpFamily::V6,
            value: offered,
            payload_bytes: 1400,
            refined: false,
            offered_bps: Some(offered),
            goodput_bps: Some(goodput),
            pdr_pct: Some(100.0 * goodput / offered),
            loss_pct: Some(100.0 - 100.0 * goodput / offered),
            jitter_ms: Some(0.01),
            delay_ms: Some(61.0),
            delay_p99_ms: None,
            retransmits: None,
            runs: StepStats {
                family: IpFamily::V6,
                direction: Some(d),
                result_ids: Vec::new(),
                stable: None,
                stats: Default::default(),
            },
        }
    }

    fn result() -> MethodResult {
        let spec = SweepSpec {
            test: UdpSpec::default().into(),
            variable: SweepVariable::Rates(vec![Rate::from_bps(80_000_000)]),
            directions: vec![Direction::Bidir],
            gap: std::time::Duration::ZERO,
            step: Default::default(),
            refine_trials: 0,
        };
        let mut r = MethodResult::new(MethodSpec::Sweep(spec), Timestamp::now());
        use Direction::{Bidir, Forward, Reverse};
        r.steps = vec![
            step(Bidir, Forward, 90e6, 4.5e6),
            step(Bidir, Reverse, 90e6, 85e6),
            step(Bidir, Forward, 80e6, 80e6),
            step(Bidir, Reverse, 80e6, 80e6),
        ];
        r.limiters = vec![Limiter {
            series: Bidir,
            direction: Forward,
            family: IpFamily::V6,
            class: LimiterClass::Punisher,
            knee_bps: Some(80e6),
            knee_pps: Some(80e6 / 8.0 / 1400.0),
            confidence: 0.9,
            evidence: LimiterEvidence {
                delivered_fraction_above_knee: Some(0.056),
                ..LimiterEvidence::default()
            },
        }];
        r
    }

    #[test]
    fn a_table_per_flow_in_rate_order_then_the_limiter() {
        let text = sweep_summary(&result());
        let fwd = text.find("\nbidir forward IPv6\n").expect(&text);
        let rev = text.find("\nbidir reverse IPv6\n").expect(&text);
        assert!(fwd < rev);
        let rows: Vec<&str> = text[fwd..rev]
            .lines()
            .filter(|l| l.contains("100.00") || l.contains("5.00"))
            .collect();
        assert_eq!(rows.len(), 2, "{text}");
        assert!(rows[0].trim_start().starts_with("80.000"), "{text}");
        assert!(text.contains("limiter bidir forward IPv6: punisher, knee 80.000 Mbit/s (7143 packets/s), confidence 0.90"), "{text}");
        assert!(text.contains("delivered above it 5.6 % of it"), "{text}");
    }

    #[test]
    fn the_chart_has_two_panels_per_flow() {
        let c = sweep_chart(&result());
        assert_eq!(c.panels.len(), 4);
        assert_eq!(c.panels[0].title, "bidir forward IPv6: goodput");
        let goodput = &c.panels[0].series[0];
        assert_eq!(goodput.points, [(80.0, 80.0), (90.0, 4.5)]);
        assert_eq!(c.panels[3].series[0].points[1], (90.0, 100.0 * 85.0 / 90.0));
    }

    #[test]
    fn both_families_are_lines_of_one_panel() {
        let mut r = result();
        let v4: Vec<SweepStep> = r
            .steps
            .iter()
            .map(|s| SweepStep {
                family: IpFamily::V4,
                goodput_bps: s.goodput_bps.map(|g| g / 2.0),
                ..s.clone()
            })
            .collect();
        r.steps.extend(v4);
        let c = sweep_chart(&r);
        // Still two panels per flow: the families are lines, not panels.
        assert_eq!(c.panels.len(), 4);
        assert_eq!(c.panels[0].title, "bidir forward: goodput");
        let names: Vec<&str> = c.panels[0].series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["goodput IPv6", "offered", "goodput IPv4"]);
        assert_eq!(c.panels[0].series[2].points, [(80.0, 40.0), (90.0, 2.25)]);
        let pdr: Vec<&str> = c.panels[1].series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(pdr, ["PDR IPv6", "PDR IPv4"]);
    }
}
