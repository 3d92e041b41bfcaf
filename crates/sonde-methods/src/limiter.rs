//! What limits a direction, read from a rate sweep's curve: a pure
//! function of the points, no I/O.
//!
//! The rules, in order (thresholds are the constants below):
//!
//! 1. A step *follows* when it delivers at least [`FOLLOW_FRACTION`] of
//!    what was offered (the sender's measured rate, not the rate asked).
//!    The highest step following: `none`.
//! 2. The knee lies between the highest step that follows and the next
//!    (a short step below that one is noted as noise). If no step
//!    follows there is no baseline: `unsure` ("start the sweep lower").
//! 3. Above the knee, the median of delivered over the highest delivered
//!    below it is the *delivered fraction*. At most
//!    [`COLLAPSE_FRACTION`]: `punisher` (seed 000: 100 % → 5 %), its knee
//!    the highest rate delivered whole. At least [`PLATEAU_FRACTION`]:
//!    a plateau, its knee the median delivered above it. Between: `unsure`.
//! 4. A plateau is told apart by the one-way delay's rise above the knee
//!    over the steps below it (the lowest step above the knee against
//!    the median below, of the mean delay, else of the 99th percentile,
//!    which a busy host makes noisy; a difference, so the clocks' offset
//!    cancels): at least [`SHAPER_RISE_MS`]: a
//!    queue fills, `shaper`; at most [`POLICER_RISE_MS`] with loss:
//!    `policer`; between, or without delay figures (TCP): `unsure`.
//!
//! Confidence starts at 1 and is lowered for a thin curve (fewer than two
//! steps on either side of the knee) and for evidence near a threshold.

use sonde_model::method::{LimiterClass, LimiterEvidence};

/// A step delivering at least this share of its offered load follows it.
pub const FOLLOW_FRACTION: f64 = 0.98;
/// Delivered above the knee at most this share of the knee: a collapse.
pub const COLLAPSE_FRACTION: f64 = 0.5;
/// Delivered above the knee at least this share of the knee: a plateau.
pub const PLATEAU_FRACTION: f64 = 0.85;
/// A delay rise of at least this much above the knee: a queue (shaper).
pub const SHAPER_RISE_MS: f64 = 2.0;
/// A delay rise of at most this much above the knee: no queue (policer).
pub const POLICER_RISE_MS: f64 = 1.0;

/// One point of a rate sweep's curve, for one direction.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CurvePoint {
    /// What the sender sent (payload bit/s).
    pub offered_bps: f64,
    /// Receiver goodput (payload bit/s).
    pub delivered_bps: f64,
    /// UDP payload bytes per packet (for the knee in packets/s).
    pub payload_bytes: u32,
    pub loss_pct: Option<f64>,
    /// One-way delay, mean and 99th percentile.
    pub delay_avg_ms: Option<f64>,
    pub delay_p99_ms: Option<f64>,
}

/// What the classifier concluded.
#[derive(Debug, Clone, PartialEq)]
pub struct Classification {
    pub class: LimiterClass,
    pub knee_bps: Option<f64>,
    pub knee_pps: Option<f64>,
    pub confidence: f64,
    pub evidence: LimiterEvidence,
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

fn follows(p: &CurvePoint) -> bool {
    p.offered_bps > 0.0 && p.delivered_bps >= FOLLOW_FRACTION * p.offered_bps
}

/// The rise of a delay figure above the knee over its median below: the
/// smallest of the steps above, since a queue behind the knee fills at
/// every one of them while a second limiter further up (GEANT's 100
/// Mbit/s link behind its 88 Mbit/s policer) queues only at the top.
fn rise(
    below: &[CurvePoint],
    above: &[CurvePoint],
    f: fn(&CurvePoint) -> Option<f64>,
) -> Option<f64> {
    let base = median(below.iter().filter_map(f).collect())?;
    let up = above.iter().filter_map(f).reduce(f64::min)?;
    Some(up - base)
}

/// Classifies the limiter of one direction from its rate sweep.
pub fn classify(points: &[CurvePoint]) -> Classification {
    let mut pts: Vec<CurvePoint> = points
        .iter()
        .copied()
        .filter(|p| p.offered_bps.is_finite() && p.delivered_bps.is_finite())
        .collect();
    pts.sort_by(|a, b| a.offered_bps.total_cmp(&b.offered_bps));
    let mut ev = LimiterEvidence::default();
    let unsure = |ev: LimiterEvidence, knee: Option<f64>, pps: Option<f64>| Classification {
        class: LimiterClass::Unsure,
        knee_bps: knee,
        knee_pps: pps,
        confidence: 0.0,
        evidence: ev,
    };
    if pts.len() < 2 {
        ev.notes
            .push("fewer than two steps: nothing to compare".into());
        return unsure(ev, None, None);
    }
    // The knee sits above the highest step that still follows: a step
    // below it that fell short (a burst of the sender's, a moment of
    // punishment) is noted, not taken for the knee.
    let last_follow = pts.iter().rposition(follows);
    let short_below = last_follow.map_or(0, |i| pts[..i].iter().filter(|p| !follows(p)).count());
    if short_below > 0 {
        ev.notes.push(format!(
            "{short_below} step(s) below the highest step carried whole fell short: taken as noise"
        ));
    }
    if last_follow == Some(pts.len() - 1) {
        ev.steps_below_knee = pts.len() as u32;
        ev.loss_below_knee_pct = pts.iter().filter_map(|p| p.loss_pct).reduce(f64::max);
        let top = pts[pts.len() - 1].offered_bps;
        ev.notes.push(format!(
            "delivered ≥ {:.0} % of offered up to the highest step, {:.4} Mbit/s",
            FOLLOW_FRACTION * 100.0,
            top / 1e6
        ));
        let clean = 1.0 - short_below as f64 / pts.len() as f64;
        let confidence = clean * (0.5 + 0.5 * (pts.len() as f64 / 4.0).min(1.0));
        return Classification {
            class: LimiterClass::None,
            knee_bps: None,
            knee_pps: None,
            confidence,
            evidence: ev,
        };
    }
    let first_short = last_follow.map_or(0, |i| i + 1);
    // The steps below the knee: up to the highest one that follows.
    let below = &pts[..first_short];
    let above = &pts[first_short..];
    ev.steps_below_knee = below.len() as u32;
    ev.steps_above_knee = above.len() as u32;
    ev.loss_below_knee_pct = below.iter().filter_map(|p| p.loss_pct).reduce(f64::max);
    ev.loss_above_knee_pct = median(above.iter().filter_map(|p| p.loss_pct).collect());
    let payload = f64::from(above[0].payload_bytes);
    let pps = |bps: f64| (payload > 0.0).then(|| bps / (8.0 * payload));
    if below.is_empty() {
        let top = above.iter().map(|p| p.delivered_bps).fold(0.0, f64::max);
        ev.notes.push(format!(
            "the first step already falls short of its offered load \
             (delivered at most {:.4} Mbit/s): start the sweep lower",
            top / 1e6
        ));
        return unsure(ev, Some(top), pps(top));
    }
    let whole = below.iter().map(|p| p.delivered_bps).fold(0.0, f64::max);
    ev.bracket_bps = Some((below[below.len() - 1].offered_bps, above[0].offered_bps));
    let fraction = median(above.iter().map(|p| p.delivered_bps / whole).collect()).unwrap_or(0.0);
    ev.delivered_fraction_above_knee = Some(fraction);
    ev.delay_rise_ms = rise(below, above, |p| p.delay_p99_ms);
    ev.delay_avg_rise_ms = rise(below, above, |p| p.delay_avg_ms);
    let thin = if below.len() >= 2 && above.len() >= 2 {
        1.0
    } else {
        ev.notes
            .push("fewer than two steps on one side of the knee".into());
        0.7
    };

    if fraction <= COLLAPSE_FRACTION {
        ev.notes.push(format!(
            "above the knee delivered collapses to {:.1} % of the highest rate delivered whole",
            fraction * 100.0
        ));
        let margin = ((COLLAPSE_FRACTION - fraction) / 0.3).min(1.0);
        return Classification {
            class: LimiterClass::Punisher,
            knee_bps: Some(whole),
            knee_pps: pps(whole),
            confidence: thin * (0.5 + 0.5 * margin),
            evidence: ev,
        };
    }
    // The plateau's level: the median delivered above the knee, or what
    // was delivered whole if that is higher (a knee between steps).
    let level = median(above.iter().map(|p| p.delivered_bps).collect()).unwrap_or(whole);
    if fraction < PLATEAU_FRACTION {
        ev.notes.push(format!(
            "above the knee delivered falls to {:.0} % of the knee: \
             neither a plateau (≥ {:.0} %) nor a collapse (≤ {:.0} %)",
            fraction * 100.0,
            PLATEAU_FRACTION * 100.0,
            COLLAPSE_FRACTION * 100.0
        ));
        return unsure(ev, Some(level), pps(level));
    }
    let Some(delay_rise) = ev.delay_avg_rise_ms.or(ev.delay_rise_ms) else {
        ev.notes.push(
            "delivered levels off, but no one-way delay was measured to tell a queue from a policer"
                .into(),
        );
        return unsure(ev, Some(level), pps(level));
    };
    let lossy = ev.loss_above_knee_pct.is_some_and(|l| l > 0.0);
    let (class, confidence) = if delay_rise >= SHAPER_RISE_MS {
        ev.notes.push(format!(
            "delivered levels off and the mean one-way delay rises {delay_rise:.1} ms: a queue fills"
        ));
        let margin = ((delay_rise - SHAPER_RISE_MS) / 3.0).min(1.0);
        (LimiterClass::Shaper, thin * (0.5 + 0.5 * margin))
    } else if delay_rise <= POLICER_RISE_MS && lossy {
        ev.notes.push(format!(
            "delivered levels off with loss and the mean one-way delay rises only {delay_rise:.2} ms: \
             the excess is dropped, not queued"
        ));
        let margin = ((POLICER_RISE_MS - delay_rise.max(0.0)) / POLICER_RISE_MS).min(1.0);
        (LimiterClass::Policer, thin * (0.5 + 0.5 * margin))
    } else {
        ev.notes.push(format!(
            "delivered levels off, but a delay rise of {delay_rise:.2} ms (loss {}) \
             separates neither a queue (≥ {SHAPER_RISE_MS} ms) nor a policer (≤ {POLICER_RISE_MS} ms with loss)",
            ev.loss_above_knee_pct
                .map_or("unknown".to_string(), |l| format!("{l:.2} %"))
        ));
        (LimiterClass::Unsure, 0.0)
    };
    Classification {
        class,
        knee_bps: Some(level),
        knee_pps: pps(level),
        confidence,
        evidence: ev,
    }
}
