//! The classifier on curves written out by hand: each class, the
//! ambiguous ones, and the thin ones.

use crate::limiter::{classify, CurvePoint};
use sonde_model::method::LimiterClass;

/// A point offered `offered` Mbit/s, delivering `delivered`, with a p99
/// one-way delay of `p99` ms and `loss` %.
fn pt(offered: f64, delivered: f64, p99: f64, loss: f64) -> CurvePoint {
    CurvePoint {
        offered_bps: offered * 1e6,
        delivered_bps: delivered * 1e6,
        payload_bytes: 1400,
        loss_pct: Some(loss),
        delay_avg_ms: Some(p99 - 0.5),
        delay_p99_ms: Some(p99),
    }
}

#[test]
fn a_flat_curve_is_no_limiter() {
    let c = classify(&[
        pt(10.0, 10.0, 20.0, 0.0),
        pt(20.0, 19.9, 20.1, 0.0),
        pt(30.0, 29.8, 20.0, 0.1),
    ]);
    assert_eq!(c.class, LimiterClass::None, "{c:?}");
    assert_eq!(c.knee_bps, None);
    assert!(c.confidence > 0.8);
}

#[test]
fn a_plateau_with_a_queue_is_a_shaper_and_without_one_a_policer() {
    let shaper = [
        pt(6.0, 6.0, 20.0, 0.0),
        pt(8.0, 8.0, 20.1, 0.0),
        pt(10.0, 9.0, 70.0, 9.0),
        pt(12.0, 9.0, 70.0, 25.0),
    ];
    let c = classify(&shaper);
    assert_eq!(c.class, LimiterClass::Shaper, "{c:?}");
    assert!((c.knee_bps.unwrap() - 9e6).abs() < 1.0);
    assert!((c.knee_pps.unwrap() - 9e6 / 8.0 / 1400.0).abs() < 1e-6);
    assert!(
        (c.evidence.delay_rise_ms.unwrap() - 49.95).abs() < 0.1,
        "{c:?}"
    );
    assert!(c.confidence > 0.9);

    let policer: Vec<CurvePoint> = shaper
        .iter()
        .map(|p| CurvePoint {
            delay_p99_ms: Some(20.2),
            delay_avg_ms: Some(19.7),
            ..*p
        })
        .collect();
    let c = classify(&policer);
    assert_eq!(c.class, LimiterClass::Policer, "{c:?}");
    assert!((c.knee_bps.unwrap() - 9e6).abs() < 1.0);
}

#[test]
fn a_collapse_is_a_punisher_known_to_the_last_rate_carried_whole() {
    let c = classify(&[
        pt(80.0, 80.0, 61.0, 0.0),
        pt(85.0, 85.0, 61.0, 0.0),
        pt(90.0, 4.5, 61.0, 95.0),
        pt(95.0, 4.75, 61.0, 95.0),
    ]);
    assert_eq!(c.class, LimiterClass::Punisher, "{c:?}");
    assert_eq!(c.knee_bps, Some(85e6));
    assert_eq!(c.evidence.bracket_bps, Some((85e6, 90e6)));
    let f = c.evidence.delivered_fraction_above_knee.unwrap();
    assert!((f - 4.625 / 85.0).abs() < 1e-6, "{f}");
}

#[test]
fn evidence_between_the_thresholds_is_unsure() {
    // Levels off, but the delay rises 1.5 ms: a tiny queue or noise.
    let c = classify(&[
        pt(6.0, 6.0, 20.0, 0.0),
        pt(8.0, 8.0, 20.0, 0.0),
        pt(10.0, 9.0, 21.5, 9.0),
        pt(12.0, 9.0, 21.5, 25.0),
    ]);
    assert_eq!(c.class, LimiterClass::Unsure, "{c:?}");
    assert!(
        (c.knee_bps.unwrap() - 9e6).abs() < 1.0,
        "the knee is still told"
    );
    // Delivered falls to 60 %: neither plateau nor collapse.
    let c = classify(&[
        pt(6.0, 6.0, 20.0, 0.0),
        pt(8.0, 8.0, 20.0, 0.0),
        pt(10.0, 4.8, 20.0, 52.0),
        pt(12.0, 4.8, 20.0, 60.0),
    ]);
    assert_eq!(c.class, LimiterClass::Unsure, "{c:?}");
    // No delay figures (TCP): a plateau cannot be told.
    let mut tcp: Vec<CurvePoint> = [
        pt(6.0, 6.0, 0.0, 0.0),
        pt(8.0, 8.0, 0.0, 0.0),
        pt(10.0, 9.0, 0.0, 0.0),
    ]
    .to_vec();
    for p in &mut tcp {
        p.delay_avg_ms = None;
        p.delay_p99_ms = None;
        p.loss_pct = None;
    }
    assert_eq!(classify(&tcp).class, LimiterClass::Unsure);
    // Short from the first step: no baseline.
    let c = classify(&[pt(10.0, 9.0, 20.0, 9.0), pt(12.0, 9.0, 20.0, 25.0)]);
    assert_eq!(c.class, LimiterClass::Unsure);
    assert!(
        c.evidence.notes[0].contains("start the sweep lower"),
        "{c:?}"
    );
    assert_eq!(classify(&[]).class, LimiterClass::Unsure);
}

#[test]
fn a_short_step_below_the_highest_carried_whole_is_noise() {
    // The lab's punisher once caught a burst of the sender at 82 of 85
    // Mbit/s; the knee is still above 84.
    let c = classify(&[
        pt(78.0, 78.0, 61.0, 0.0),
        pt(82.0, 70.0, 61.0, 15.0),
        pt(84.0, 84.0, 61.0, 0.0),
        pt(86.0, 4.3, 61.0, 95.0),
        pt(90.0, 4.5, 61.0, 95.0),
    ]);
    assert_eq!(c.class, LimiterClass::Punisher, "{c:?}");
    assert_eq!(c.knee_bps, Some(84e6));
    assert!(c.evidence.notes[0].contains("taken as noise"), "{c:?}");
}

#[test]
fn a_second_limiter_queueing_at_the_top_step_does_not_make_a_policer_a_shaper() {
    // GEANT-like, B → A: policed at 85 Mbit/s of payload, and the 100
    // Mbit/s link behind it queues a few ms at the top step only.
    let c = classify(&[
        pt(78.0, 78.0, 61.2, 0.0),
        pt(84.0, 84.0, 61.3, 0.0),
        pt(86.0, 85.4, 61.1, 0.7),
        pt(90.0, 85.5, 61.1, 5.0),
        pt(95.0, 85.1, 77.4, 10.1),
    ]);
    assert_eq!(c.class, LimiterClass::Policer, "{c:?}");
}
