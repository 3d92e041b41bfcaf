//! The cells every text table shares: stream ids, arrows, time spans,
//! sizes and rates, with "-" (or a blank) where a figure is unknown,
//! never 0. Also what the tables need to know of a spec.

use sonde_model::udp_report::Remark;
use sonde_model::{ByteSize, Direction, Figures, TestSpec};

/// `[  3]` for a stream, `[SUM]` for a direction's sum.
pub(crate) fn id(stream: Option<u16>) -> String {
    match stream {
        Some(s) => format!("[{s:>3}]"),
        None => "[SUM]".to_string(),
    }
}

/// ` 0.00-1.00   s`
pub(crate) fn span(start_s: f64, end_s: f64) -> String {
    format!("{start_s:>6.2}-{end_s:<6.2} s")
}

/// `->` client to server, `<-` server to client.
pub(crate) fn arrow(d: Direction) -> &'static str {
    match d {
        Direction::Reverse => "<-",
        _ => "->",
    }
}

/// The direction of a stream's figures (forward when not set).
pub(crate) fn direction_of(f: &Figures) -> Direction {
    f.direction.unwrap_or_default()
}

/// `1.50 ms`, or blank when unknown.
pub(crate) fn ms_or_blank(v: Option<f64>) -> String {
    v.map_or_else(String::new, |ms| format!("{ms:.2} ms"))
}

/// A byte count as `1.19 MiB`, or "-".
pub(crate) fn bytes_or_dash(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_string(), |b| ByteSize::from_bytes(b).to_string())
}

/// A rate as `10.0 Mbit/s` (in the `-f` unit in force), or "-".
pub(crate) fn rate_or_dash(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_string(), crate::rate_format::show_rate)
}

/// A count, or "-".
pub(crate) fn count_or_dash(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_string(), |n| n.to_string())
}

/// A count, or blank (TCP's Retr column).
pub(crate) fn count_or_blank(v: Option<u64>) -> String {
    v.map_or_else(String::new, |n| n.to_string())
}

/// A float with `decimals` places, or "-".
pub(crate) fn float_or_dash(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "-".to_string(), |x| format!("{x:.decimals$}"))
}

/// `lost/total (pct %)`; "-" when either count is unknown.
pub(crate) fn lost_total(lost: Option<u64>, base: Option<u64>) -> String {
    match (lost, base) {
        (Some(lost), Some(base)) => {
            let pct = sonde_model::figures::pct(lost, base);
            format!("{lost}/{base} ({pct:.2} %)")
        }
        _ => "-".to_string(),
    }
}

/// A sum of optional figures: `None` when neither is known.
pub(crate) fn add_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.saturating_add(y)),
        (x, y) => x.or(y),
    }
}

/// Packets remarked in these figures (0 when none were).
pub(crate) fn remarked_packets(f: &Figures) -> u64 {
    f.remarks.iter().map(|r| r.packets).sum()
}

/// A remark in words: "EF (46) arrived as CS0 (0) in 980 of 1000 packets
/// (98.0 %): remarked on the path". "of N" is the packets received that
/// were sent with that DSCP (from `f.classes`); without that class the
/// share is unknown and left out.
pub(crate) fn remark_sentence(f: &Figures, r: &Remark) -> String {
    let of = f
        .classes
        .iter()
        .find(|c| c.dscp == r.sent)
        .map(|c| c.received_packets.max(r.packets));
    match (of, f.remark_share_pct(r)) {
        (Some(of), Some(pct)) => format!(
            "{} arrived as {} in {} of {of} packets ({pct:.1} %): remarked on the path",
            r.sent, r.received, r.packets
        ),
        _ => format!(
            "{} arrived as {} in {} packets: remarked on the path",
            r.sent, r.received, r.packets
        ),
    }
}

fn label(l: Option<u32>) -> String {
    l.map_or_else(|| "other labels".to_string(), |l| format!("{l:#07x}"))
}

/// The IPv6 flow labels on arrival in words: "flow label 0x12345 kept in
/// 1000 of 1000 packets", or "flow label 0x12345 arrived as 0x00000 in
/// 1000 of 1000 packets (100.0 %): rewritten on the path". `None` when
/// the sender set no label (the kernel's own labels are in the JSON, not
/// worth a line) or none were counted.
pub(crate) fn flow_label_sentence(f: &Figures) -> Option<String> {
    let sent = f.flow_label_sent?;
    let total: u64 = f.flow_labels.iter().map(|c| c.packets).sum();
    if total == 0 {
        return None;
    }
    let mut by_count = f.flow_labels.clone();
    by_count.sort_by_key(|c| std::cmp::Reverse(c.packets));
    let kept: u64 = f
        .flow_labels
        .iter()
        .filter(|c| c.label == Some(sent))
        .map(|c| c.packets)
        .sum();
    if kept == total {
        return Some(format!(
            "flow label {} kept in {kept} of {total} packets",
            label(Some(sent))
        ));
    }
    let other = by_count.iter().find(|c| c.label != Some(sent))?;
    Some(format!(
        "flow label {} arrived as {} in {} of {total} packets ({:.1} %): rewritten on the path",
        label(Some(sent)),
        label(other.label),
        other.packets,
        other.packets as f64 * 100.0 / total as f64
    ))
}

/// The warm-up of a test, in seconds (ping has none).
pub(crate) fn omit_s(spec: &TestSpec) -> f64 {
    match spec {
        TestSpec::Tcp(s) => s.omit.as_secs_f64(),
        TestSpec::Udp(s) => s.omit.as_secs_f64(),
        TestSpec::Ping(_) | TestSpec::Http(_) | TestSpec::Trace(_) => 0.0,
    }
}

/// The planned measuring time of a test, in seconds (ping: none).
pub(crate) fn planned_s(spec: &TestSpec) -> Option<f64> {
    match spec {
        TestSpec::Tcp(s) => Some(s.time.as_secs_f64()),
        TestSpec::Udp(s) => Some(s.time.as_secs_f64()),
        TestSpec::Ping(_) | TestSpec::Trace(_) => None,
        TestSpec::Http(s) => Some(s.send_duration().as_secs_f64()),
    }
}

/// "interrupted after 1.23 s of the 10 s planned".
pub(crate) fn interrupted_line(duration_s: f64, spec: &TestSpec) -> String {
    match planned_s(spec) {
        Some(p) => format!("interrupted after {duration_s:.2} s of the {p:.0} s planned\n"),
        None => "interrupted\n".to_string(),
    }
}
