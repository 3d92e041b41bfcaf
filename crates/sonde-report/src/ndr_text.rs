//! An NDR search as text: one line per trial as it finishes
//! ([`ndr_trial_line`]), then a table of the rate found per frame size
//! ([`ndr_summary`]): the rate in bits and frames per second, the loss
//! of the confirming trial, the trials used, the frame's share of the
//! line (seed 002 Table 1) and, with `--link-rate`, the medium's maximum.

use crate::rate_format::show_rate;
use crate::repeat_text::family_name;
use sonde_model::method::{NdrSize, NdrSpec, SizeKind};
use sonde_model::{IpFamily, MethodResult, MethodSpec};
use std::fmt::Write;

/// Frames per second, with k/M.
pub fn show_pps(pps: f64) -> String {
    if pps >= 1e6 {
        format!("{:.3} Mfps", pps / 1e6)
    } else if pps >= 1e3 {
        format!("{:.2} kfps", pps / 1e3)
    } else {
        format!("{pps:.1} fps")
    }
}

/// One trial: which size, its rate, what arrived, the verdict.
#[allow(clippy::too_many_arguments)]
pub fn ndr_trial_line(
    family: IpFamily,
    frame_bytes: u32,
    trial: u32,
    confirming: bool,
    offered_pps: f64,
    delivered_pps: f64,
    loss_pct: f64,
    verdict: &str,
) -> String {
    format!(
        "{} {:>5} B  {:<10} offered {:>11}  delivered {:>11}  loss {:>8.4} %  {verdict}\n",
        family_name(family),
        frame_bytes,
        if confirming {
            format!("confirm {trial}")
        } else {
            format!("trial {trial}")
        },
        show_pps(offered_pps),
        show_pps(delivered_pps),
        loss_pct,
    )
}

/// The closing table of an NDR result.
pub fn ndr_summary(result: &MethodResult) -> String {
    let MethodSpec::Ndr(spec) = &result.spec else {
        return String::new();
    };
    let mut out = String::new();
    let _ = writeln!(out, "\n{}", heading(spec, result));
    let _ = writeln!(
        out,
        "  {:<5} {:>6} {:>8} {:>13} {:>11} {:>9} {:>7} {:>8} {:>11} {:>10}",
        "fam",
        "frame",
        "payload",
        "rate",
        "frames/s",
        "loss",
        "trials",
        "frame %",
        "of line",
        "delay"
    );
    for s in &result.results {
        let _ = writeln!(out, "{}", row(s));
    }
    for s in &result.results {
        for note in &s.notes {
            let _ = writeln!(out, "  note ({} B): {note}", s.frame_bytes);
        }
    }
    if !result.family_ratios.is_empty() {
        let _ = writeln!(out, "\n  IPv6 / IPv4 (no-drop payload rate)");
        for r in &result.family_ratios {
            let _ = writeln!(
                out,
                "    {:<16} {:>13} {:>13}   {:.4}",
                r.at.as_deref().unwrap_or(""),
                show_rate(r.ipv6.round() as u64),
                show_rate(r.ipv4.round() as u64),
                r.ratio
            );
        }
    }
    if result.interrupted {
        let _ = writeln!(
            out,
            "\n  interrupted: the sizes above were searched to the end"
        );
    }
    out
}

fn heading(spec: &NdrSpec, result: &MethodResult) -> String {
    let trials = result.trials.len();
    format!(
        "No-drop rate (RFC 2544 §26.1) to {}: loss ≤ {} %, resolution {} %, \
         {} s trials, confirmed over {} s; {trials} trials in {:.0} s",
        spec.trial.host,
        spec.loss_pct,
        spec.resolution_pct,
        spec.trial_time.as_secs_f64(),
        spec.confirm_time.as_secs_f64(),
        result.duration_s,
    ) + match spec.size_kind {
        SizeKind::Frame => "",
        SizeKind::Payload => " (sizes given as payloads)",
    }
}

fn row(s: &NdrSize) -> String {
    let of_line = match s.max_pps {
        Some(max) if max > 0.0 => format!("{:.2} %", 100.0 * s.rate_pps / max),
        _ => "-".to_string(),
    };
    let delay = s
        .delay
        .map_or("-".to_string(), |d| format!("{:.3} ms", d.avg_ms));
    format!(
        "  {:<5} {:>6} {:>8} {:>13} {:>11} {:>7.4} % {:>7} {:>6.2} % {:>11} {:>10}{}",
        family_name(s.family),
        s.frame_bytes,
        s.payload_bytes,
        show_rate(s.rate_bps),
        show_pps(s.rate_pps),
        s.loss_pct,
        s.trials,
        s.efficiency_pct,
        of_line,
        delay,
        if s.confirmed { "" } else { "  (not confirmed)" },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_per_second_scale() {
        assert_eq!(show_pps(1_488_095.2), "1.488 Mfps");
        assert_eq!(show_pps(49_603.0), "49.60 kfps");
        assert_eq!(show_pps(12.0), "12.0 fps");
    }

    #[test]
    fn a_trial_line_names_size_trial_and_verdict() {
        let line = ndr_trial_line(IpFamily::V6, 1518, 3, false, 4100.0, 4050.0, 1.2, "loss");
        assert!(line.starts_with("IPv6  1518 B  trial 3"), "{line}");
        assert!(line.contains("loss   1.2000 %  loss"), "{line}");
    }
}
