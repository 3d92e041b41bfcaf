//! A repeated test as text: one line per run as it finishes
//! ([`run_line`]), then the statistics of every figure per family (and
//! per direction for `--bidir`) and the IPv6/IPv4 ratios
//! ([`repeat_summary`]).

use crate::rate_format::show_rate;
use sonde_model::method::{family_used, FamilyRatio, Metric, RepeatRule, Stats, StepStats};
use sonde_model::{Direction, Figures, IpFamily, MethodResult, MethodSpec, TestResult};
use std::fmt::Write;

/// A figure's name in the tables: the registry's label, but for three
/// this table has always named more closely.
fn label(m: Metric) -> &'static str {
    match m {
        Metric::SenderThroughputBps => "sent",
        Metric::DelayMs => "delay (mean)",
        Metric::RttP50Ms => "RTT p50",
        m => m.info().label,
    }
}

/// A value of `m` with its unit (rates as `-f` says; counts, a mean of
/// runs, to one decimal).
fn value(m: Metric, v: f64) -> String {
    match m.unit() {
        "Mbit/s" => show_rate(v.max(0.0).round() as u64),
        "%" => format!("{v:.3} %"),
        "ms" => format!("{v:.3} ms"),
        _ => format!("{v:.1}"),
    }
}

/// `IPv6`, `IPv4`, or the family of the address a test of either used.
pub fn family_name(f: IpFamily) -> &'static str {
    match f {
        IpFamily::V6 => "IPv6",
        IpFamily::V4 => "IPv4",
        IpFamily::Any => "any",
    }
}

fn run_family(r: &TestResult) -> &'static str {
    family_name(family_used(r))
}

/// The figures a run line shows: the headline ones measured.
const RUN_LINE: [Metric; 6] = [
    Metric::ThroughputBps,
    Metric::LossPct,
    Metric::JitterMs,
    Metric::DelayMs,
    Metric::RttP50Ms,
    Metric::Retransmits,
];

fn figures_text(f: &Figures) -> String {
    let parts: Vec<String> = RUN_LINE
        .into_iter()
        .filter_map(|m| {
            let v = m.of(f)?;
            Some(match m {
                // One run's count is whole; the tables' means are not.
                Metric::Retransmits => format!("{} {v:.0}", label(m)),
                _ => format!("{} {}", label(m), value(m, v)),
            })
        })
        .collect();
    parts.join("  ")
}

/// One line for a finished run: its number, family and headline
/// figures (each direction's for a test of both at once).
pub fn run_line(number: usize, r: &TestResult) -> String {
    let mut line = format!("run {number:>3}  {:<4}", run_family(r));
    let parts: Vec<String> = match (r.summary.headline(), &r.summary.forward, &r.summary.reverse) {
        (_, Some(f), Some(b)) => vec![
            format!("→ {}", figures_text(f)),
            format!("← {}", figures_text(b)),
        ],
        (Some(h), _, _) => vec![figures_text(h)],
        _ => vec!["no figures".to_string()],
    };
    for p in parts {
        line.push_str("  ");
        line.push_str(&p);
    }
    if r.interrupted {
        line.push_str("  (cut short: not counted)");
    }
    line.push('\n');
    line
}

fn rule_text(spec: &MethodSpec) -> String {
    let MethodSpec::Repeat(s) = spec else {
        return String::new();
    };
    let rule = match s.step.repeat {
        RepeatRule::Once => "once".into(),
        RepeatRule::Times { runs: 1 } => "1 run".into(),
        RepeatRule::Times { runs } => format!("{runs} runs"),
        RepeatRule::UntilStable {
            stddev_pct,
            min_runs,
            max_runs,
        } => format!("until stddev ≤ {stddev_pct} % of the mean, {min_runs} to {max_runs} runs"),
    };
    if s.step.families.len() < 2 {
        return rule;
    }
    let names: Vec<&str> = s.step.families.iter().map(|f| family_name(*f)).collect();
    format!("{rule} of each family, alternating {}", names.join(", "))
}

fn stats_row(out: &mut String, m: Metric, s: &Stats) {
    let ci = s
        .ci95
        .map_or_else(|| "-".to_string(), |c| format!("±{}", value(m, c)));
    let _ = writeln!(
        out,
        "  {:<13} {:>4} {:>14} {:>14} {:>8.2} % {:>15} {:>14} {:>14}",
        label(m),
        s.n,
        value(m, s.mean),
        value(m, s.stddev),
        s.stddev_pct,
        ci,
        value(m, s.min),
        value(m, s.max),
    );
}

fn stats_block(out: &mut String, s: &StepStats, judged: Metric) {
    let part = match s.direction {
        Some(Direction::Forward) => ", forward",
        Some(Direction::Reverse) => ", reverse",
        _ => "",
    };
    let stable = match s.stable {
        Some(true) => format!(", stable on {}", judged.name()),
        Some(false) => format!(", not stable on {}", judged.name()),
        None => String::new(),
    };
    let _ = writeln!(
        out,
        "\n{}{part}: {} run{}{stable}",
        family_name(s.family),
        s.result_ids.len(),
        if s.result_ids.len() == 1 { "" } else { "s" }
    );
    let _ = writeln!(
        out,
        "  {:<13} {:>4} {:>14} {:>14} {:>10} {:>15} {:>14} {:>14}",
        "figure", "n", "mean", "stddev", "stddev %", "95 % CI", "min", "max"
    );
    // The judged metric first, then the rest in their usual order.
    let order = std::iter::once(judged).chain(Metric::ALL.into_iter().filter(|m| *m != judged));
    for m in order {
        if let Some(st) = s.stats.get(m.name()) {
            stats_row(out, m, st);
        }
    }
}

fn ratios_block(out: &mut String, ratios: &[FamilyRatio]) {
    if ratios.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nIPv6 / IPv4 (means)");
    let _ = writeln!(
        out,
        "  {:<13} {:<8} {:>14} {:>14} {:>8}",
        "figure", "", "IPv6", "IPv4", "ratio"
    );
    for r in ratios {
        let _ = writeln!(
            out,
            "  {:<13} {:<8} {:>14} {:>14} {:>8.4}",
            label(r.metric),
            r.at.as_deref().unwrap_or(""),
            value(r.metric, r.ipv6),
            value(r.metric, r.ipv4),
            r.ratio
        );
    }
}

/// The statistics of a repeated test (after its run lines): per family
/// (and direction), every figure measured with n, mean, standard
/// deviation (absolute and % of the mean), the 95 % confidence interval
/// of the mean (Student's t), min and max; then IPv6/IPv4 ratios.
pub fn repeat_summary(r: &MethodResult) -> String {
    let mut out = String::new();
    let _ = write!(out, "\nRepeated: {}", rule_text(&r.spec));
    if r.interrupted {
        out.push_str(" (interrupted: the runs that finished)");
    }
    out.push('\n');
    let Some(runs) = &r.runs else {
        return out;
    };
    for s in &runs.stats {
        stats_block(&mut out, s, runs.metric);
    }
    ratios_block(&mut out, &r.family_ratios);
    out
}

#[cfg(test)]
#[path = "repeat_text_tests.rs"]
mod tests;
