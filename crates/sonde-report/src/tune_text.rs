//! `sonde tune` as text: what limits TCP on the path, the sysctl lines
//! and warnings, and the verification; the laboratory's matrix as a table
//! and as bandwidth against RTT per buffer size (seed 003 Fig 5).

use crate::chart::{Chart, Panel, Series};
use sonde_model::method::{TuneLimit, TuneStep};
use sonde_model::MethodResult;

fn mbit(v: f64) -> String {
    format!("{:.1} Mbit/s", v / 1e6)
}

/// A tune's findings and advice.
pub fn tune_summary(r: &MethodResult) -> String {
    let Some(t) = &r.tune else {
        return String::new();
    };
    let mut out = String::from("- - - - - - - - - - - - - - - - - - - - - - - - -\n");
    out += &format!(
        "path: RTT {:.2} ms, bottleneck {}, BDP {} bytes\n",
        t.rtt_ms,
        mbit(t.bottleneck_bps),
        t.bdp_bytes
    );
    out += "ceilings at this RTT (buffer × 8 / RTT):\n";
    for c in &t.ceilings {
        out += &format!(
            "  {:<22} {:<32} {:>10} bytes  {:>14}\n",
            c.end,
            c.setting,
            c.bytes,
            mbit(c.ceiling_bps)
        );
    }
    let what = match t.limit {
        TuneLimit::Path => "the path",
        TuneLimit::ReceiverBuffer => "the receiver's buffer",
        TuneLimit::SenderBuffer => "the sender's buffer",
        TuneLimit::Other => "neither buffer",
    };
    out += &format!("limit: {what}: {}\n", t.limit_evidence);
    out += &format!(
        "advice: buffers of {} bytes (twice the BDP, at least 4 MiB) on both hosts, in /etc/sysctl.conf:\n",
        t.advised_bytes
    );
    for line in &t.sysctl {
        out += &format!("  {line}\n");
    }
    for w in &t.warnings {
        out += &format!("warning: {w}\n");
    }
    if let (Some(v), Some(g)) = (t.verified_bps, t.gain) {
        out += &format!(
            "verified: {} with the advised buffers (-w), {} before: ×{g:.1} ({:.0} % of the path)\n",
            mbit(v),
            mbit(t.baseline_bps),
            v * 100.0 / t.bottleneck_bps.max(1.0)
        );
    }
    if r.interrupted {
        out += "(interrupted)\n";
    }
    out
}

fn human(bytes: u64) -> String {
    if bytes == 0 {
        "auto".into()
    } else if bytes >= 1 << 20 {
        format!("{}M", bytes >> 20)
    } else {
        format!("{}K", bytes >> 10)
    }
}

/// One cell of the matrix as a line.
pub fn tune_step_line(s: &TuneStep) -> String {
    format!(
        "{:>8.1} {:>8} {:>8} {:>14}",
        s.rtt_ms,
        human(s.window_bytes),
        s.congestion,
        s.goodput_bps
            .map_or("-".into(), |g| format!("{:.1}", g as f64 / 1e6))
    )
}

pub fn tune_step_header() -> String {
    format!(
        "{:>8} {:>8} {:>8} {:>14}",
        "RTT ms", "buffer", "cc", "Mbit/s"
    )
}

/// Bandwidth against RTT, a series per buffer size, a panel per
/// congestion control (003 Fig 5).
pub fn tune_chart(r: &MethodResult) -> Chart {
    let mut ccs: Vec<&str> = Vec::new();
    let mut windows: Vec<u64> = Vec::new();
    for s in &r.tune_steps {
        if !ccs.contains(&s.congestion.as_str()) {
            ccs.push(&s.congestion);
        }
        if !windows.contains(&s.window_bytes) {
            windows.push(s.window_bytes);
        }
    }
    let panels = ccs
        .iter()
        .map(|cc| Panel {
            title: format!("TCP bandwidth against RTT ({cc})"),
            x_label: "RTT (ms)".into(),
            y_label: "Mbit/s".into(),
            y_range: None,
            x_time: false,
            series: windows
                .iter()
                .map(|&w| Series {
                    name: format!("buffer {}", human(w)),
                    points: r
                        .tune_steps
                        .iter()
                        .filter(|s| s.congestion == *cc && s.window_bytes == w)
                        .filter_map(|s| Some((s.rtt_ms, s.goodput_bps? as f64 / 1e6)))
                        .collect(),
                })
                .collect(),
        })
        .collect();
    Chart::grid(panels)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sonde_model::method::{TuneLabSpec, TuneStep};
    use sonde_model::{MethodSpec, ResultId, TcpSpec, Timestamp};

    #[test]
    fn the_matrix_draws_a_series_per_buffer_and_a_panel_per_cc() {
        let spec = TuneLabSpec {
            test: TcpSpec::default(),
            lab: "l".into(),
            link: 1,
            rtts: vec![],
            windows: vec![],
            congestion: vec![],
            gap: std::time::Duration::ZERO,
        };
        let mut r = MethodResult::new(MethodSpec::TuneLab(spec), Timestamp::now());
        for (rtt, w, cc, g) in [
            (1.0, 65536, "reno", 500e6),
            (40.0, 65536, "reno", 13e6),
            (40.0, 8 << 20, "cubic", 900e6),
        ] {
            r.tune_steps.push(TuneStep {
                rtt_ms: rtt,
                window_bytes: w,
                congestion: cc.into(),
                goodput_bps: Some(g as u64),
                trial: ResultId::random(),
            });
        }
        let c = tune_chart(&r);
        assert_eq!(c.panels.len(), 2);
        assert_eq!(c.panels[0].series[0].name, "buffer 64K");
        assert_eq!(
            c.panels[0].series[0].points,
            vec![(1.0, 500.0), (40.0, 13.0)]
        );
        assert!(crate::chart::render_svg(&c)
            .unwrap()
            .contains("TCP bandwidth against RTT (cubic)"));
        assert_eq!(
            tune_step_line(&r.tune_steps[2])
                .split_whitespace()
                .collect::<Vec<_>>(),
            ["40.0", "8M", "cubic", "900.0"]
        );
    }
}
